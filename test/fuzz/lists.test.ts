import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CUDA_VERSIONS,
  DATA_CENTER_IDS,
  GPU_POOL_IDS,
  GPU_TYPE_IDS,
  LOCATIONS,
} from "../../sdk/schemas/common";
import { KEY } from "../service/jobs/harness";
import {
  expectServed,
  type FuzzRequest,
  type FuzzService,
  fuzzParameters,
  fuzzSeed,
  hostileString,
  send,
  startFuzzService,
} from "./support";

/*
 * Management input normalisation (model/endpoint.ts canonicalChanges): an endpoint's lists keep each
 * item once (the first), GraphQL's comma lists trimmed. Arbitrary lists through REST and GraphQL store
 * the same canonical value on both wires, and saving again what was read back changes nothing.
 */
let service: FuzzService;
const seed = fuzzSeed("lists");
beforeAll(async () => {
  service = await startFuzzService();
});
afterAll(async () => service.h.close());

const HEADERS = { authorization: KEY, "content-type": "application/json" };

interface Endpoint {
  id: string;
  version?: number;
  [field: string]: unknown;
}
interface Read {
  gpuIds: string;
  locations: string | null;
  allowedCudaVersions: string;
}

async function call(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: Endpoint }> {
  const req: FuzzRequest = { method, path, headers: body === undefined ? { authorization: KEY } : HEADERS };
  if (body !== undefined) req.body = JSON.stringify(body);
  const reply = await send(service, req);
  await expectServed(service, req, reply);
  return { status: reply.status, json: reply.text === "" ? { id: "" } : JSON.parse(reply.text) };
}

async function gql<T>(query: string, variables: Record<string, unknown>): Promise<T> {
  const reply = await call("POST", "/graphql", { query, variables });
  expect(reply.json.errors, JSON.stringify(reply.json)).toBeUndefined();
  return reply.json.data as T;
}

const save = async (input: Record<string, unknown>) =>
  (await gql<{ saveEndpoint: { id: string } }>(SAVE, { i: input })).saveEndpoint.id;
const readBack = async (id: string) =>
  (await gql<{ myself: { endpoint: Read } }>(READ, { id })).myself.endpoint;

const SAVE = `mutation($i: EndpointInput!) { saveEndpoint(input: $i) { id } }`;
const READ = `query($id: String!) { myself { endpoint(id: $id) { gpuIds locations allowedCudaVersions } } }`;

/** A list with repeats (some items given two or three times). */
const listOf = (items: readonly string[], max: number) =>
  fc.array(fc.constantFrom(...items), { minLength: 1, maxLength: max });
/** A comma list as a person types it: spaces around items at random. */
const commaList = (items: string[]) =>
  fc
    .array(fc.constantFrom("", " ", "  ", "\t"), { minLength: items.length * 2, maxLength: items.length * 2 })
    .map((spaces) => items.map((item, i) => `${spaces[2 * i]}${item}${spaces[2 * i + 1]}`).join(","));

const unique = (items: string[]) => [...new Set(items)];

/** The stored endpoint as REST reads it, without what every save changes. */
async function restRecord(id: string): Promise<Record<string, unknown>> {
  const read = await call("GET", `/v1/endpoints/${id}`);
  expect(read.status).toBe(200);
  const { version: _v, ...record } = read.json as Record<string, unknown>;
  return record;
}

describe("fuzz: endpoint lists", () => {
  let made = 0;
  it("GraphQL and REST store the same canonical lists, and saving what was read back changes nothing", {
    timeout: 120_000,
  }, async () => {
    const templateId = service.endpoint.templateId;
    const input = fc.record({
      cuda: listOf(CUDA_VERSIONS, 6),
      pools: listOf(GPU_POOL_IDS, 5),
      locations: fc.option(listOf(LOCATIONS, 5), { nil: undefined }),
      gpuTypes: listOf(GPU_TYPE_IDS, 5),
      dataCenters: listOf(DATA_CENTER_IDS, 5),
    });
    await fc.assert(
      fc.asyncProperty(
        input.chain((lists) =>
          fc.record({
            lists: fc.constant(lists),
            cudaText: commaList(lists.cuda),
            poolsText: commaList(lists.pools),
            locationsText:
              lists.locations === undefined ? fc.constant(undefined) : commaList(lists.locations),
          }),
        ),
        async ({ lists, cudaText, poolsText, locationsText }) => {
          const name = `lists-${++made}`;
          // GraphQL: comma lists, spaces and repeats.
          const id = await save({
            name,
            templateId,
            gpuIds: poolsText,
            locations: locationsText,
            allowedCudaVersions: cudaText,
          });
          const read = await readBack(id);
          expect(read).toEqual({
            gpuIds: unique(lists.pools).join(","),
            locations: lists.locations === undefined ? null : unique(lists.locations).join(","),
            allowedCudaVersions: unique(lists.cuda).join(","),
          });
          const viaGraphql = await restRecord(id);
          expect(viaGraphql.allowedCudaVersions).toEqual(unique(lists.cuda));

          // Saved again as read back (GraphQL's full replace): nothing changes.
          await save({ id, name, templateId, ...read });
          expect(await restRecord(id)).toEqual(viaGraphql);
          // A REST PATCH of what REST read: nothing changes.
          const { gpuTypeIds, dataCenterIds, allowedCudaVersions, networkVolumeIds } = viaGraphql;
          const patched = await call("PATCH", `/v1/endpoints/${id}`, {
            gpuTypeIds,
            dataCenterIds,
            allowedCudaVersions,
            networkVolumeIds,
          });
          expect(patched.status, JSON.stringify(patched.json)).toBe(200);
          expect(await restRecord(id)).toEqual(viaGraphql);

          // REST: arrays with repeats; the same canonical value as GraphQL stored.
          const created = await call("POST", "/v1/endpoints", {
            name: `${name}-rest`,
            templateId,
            allowedCudaVersions: lists.cuda,
            gpuTypeIds: lists.gpuTypes,
            dataCenterIds: lists.dataCenters,
          });
          expect(created.status, JSON.stringify(created.json)).toBe(200);
          const viaRest = await restRecord(created.json.id);
          expect(viaRest).toMatchObject({
            allowedCudaVersions: unique(lists.cuda),
            gpuTypeIds: unique(lists.gpuTypes),
            dataCenterIds: unique(lists.dataCenters),
          });
          const again = await call("PATCH", `/v1/endpoints/${created.json.id}`, {
            allowedCudaVersions: viaRest.allowedCudaVersions,
            gpuTypeIds: viaRest.gpuTypeIds,
            dataCenterIds: viaRest.dataCenterIds,
          });
          expect(again.status).toBe(200);
          expect(await restRecord(created.json.id)).toEqual(viaRest);
          // GraphQL reads gpuIds "" for GPU types that are no set of pools, and refuses to save it
          // (its refusal says to change them through REST): saved again only when it names pools.
          const restRead = await readBack(created.json.id);
          if (restRead.gpuIds !== "") {
            await save({ id: created.json.id, name: `${name}-rest`, templateId, ...restRead });
            expect(await restRecord(created.json.id)).toEqual(viaRest);
          }
          await call("DELETE", `/v1/endpoints/${id}`);
          await call("DELETE", `/v1/endpoints/${created.json.id}`);
        },
      ),
      fuzzParameters(seed, 30),
    );
  });

  it("a template's volumeMountPath: both wires take or refuse it alike, store it alike, and keep it when saved again", {
    timeout: 120_000,
  }, async () => {
    const path = fc.oneof(
      fc.constantFrom(
        "/workspace",
        "/",
        "",
        "workspace",
        "./data",
        " /x",
        "/x ",
        "//x",
        "/a/../b",
        "~/x",
        "C:\\x",
      ),
      fc.string({ maxLength: 20 }).map((rest) => `/${rest}`),
      hostileString.map((text) => text.slice(0, 5_000)),
    );
    await fc.assert(
      fc.asyncProperty(path, async (volumeMountPath) => {
        const name = `mount-${++made}`;
        const rest = await call("POST", "/v1/templates", {
          name,
          imageName: "x",
          isServerless: true,
          volumeMountPath,
        });
        const graphql = await call("POST", "/graphql", {
          query: "mutation($i: SaveTemplateInput!) { saveTemplate(input: $i) { id volumeMountPath } }",
          variables: {
            i: {
              name: `${name}-g`,
              imageName: "x",
              isServerless: true,
              containerDiskInGb: 5,
              volumeInGb: 0,
              dockerArgs: "",
              volumeMountPath,
            },
          },
        });
        const errors = graphql.json.errors as { extensions: { field: string } }[] | undefined;
        expect(errors === undefined, JSON.stringify([rest.json, graphql.json]).slice(0, 500)).toBe(
          rest.status === 200,
        );
        if (rest.status !== 200) {
          expect(rest.status).toBe(400);
          expect(rest.json.field).toBe("volumeMountPath");
          expect(errors?.[0]?.extensions.field).toBe("volumeMountPath");
          return;
        }
        const saved = (graphql.json.data as { saveTemplate: { id: string; volumeMountPath: string } })
          .saveTemplate;
        expect(saved.volumeMountPath).toBe(rest.json.volumeMountPath);
        // Saved again with what was read: the same path.
        const again = await call("PATCH", `/v1/templates/${rest.json.id}`, {
          volumeMountPath: rest.json.volumeMountPath,
        });
        expect(again.status, JSON.stringify(again.json)).toBe(200);
        expect(again.json.volumeMountPath).toBe(rest.json.volumeMountPath);
        await call("DELETE", `/v1/templates/${rest.json.id}`);
        await call("DELETE", `/v1/templates/${saved.id}`);
      }),
      fuzzParameters(seed, 100),
    );
  });
});
