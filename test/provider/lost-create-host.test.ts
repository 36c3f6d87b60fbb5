import type { ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { endpointForwarder } from "../../provider/endpoint";
import { GraphQLClient } from "../../sdk/graphql";
import { RestClient } from "../../sdk/rest";
import { ManualClock } from "../../service/clock";
import {
  type DynamicProviderHost,
  dynamicUrn,
  serializeProvider,
  stackConfig,
  startCheckoutHost,
} from "../helpers/pulumi-host";
import { type TestService, withService } from "../helpers/service";
import { type Hit, json, startScriptedServer } from "../sdk/scripted-server";

/**
 * Endpoint faults of a busy or failing service, through Pulumi's own provider host: two hosts (two
 * stacks of the same project and stack names, in two backends) on one service, the second behind a
 * relay that refuses requests by rule before they reach the service.
 */

type Rule = (hit: Hit) => number | undefined;

let service: TestService;
let rest: RestClient;
let graphql: GraphQLClient;
let relay: Awaited<ReturnType<typeof startScriptedServer>>;
let rule: Rule = () => undefined;
let direct: DynamicProviderHost;
let relayed: DynamicProviderHost;
let text: string;
let templateId: string;

async function forward(hit: Hit, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = { authorization: String(hit.headers.authorization ?? "") };
  if (hit.headers["content-type"]) headers["content-type"] = String(hit.headers["content-type"]);
  const reply = await fetch(`${new URL(service.restUrl).origin}${hit.url}`, {
    method: hit.method,
    headers,
    ...(hit.body === "" ? {} : { body: hit.body }),
  });
  res.writeHead(reply.status, { "content-type": reply.headers.get("content-type") ?? "application/json" });
  res.end(await reply.text());
}

beforeAll(async () => {
  service = await withService({ clock: new ManualClock() });
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
  graphql = new GraphQLClient({ apiKey: service.apiKey, baseUrl: service.graphqlUrl });
  relay = await startScriptedServer((hit, res) => {
    const status = rule(hit);
    if (status !== undefined) json(res, status, { message: "refused by the relay" });
    else forward(hit, res).catch(() => res.writeHead(502).end());
  });
  const swap = (url: string) => {
    const parsed = new URL(url);
    return `${relay.url}${parsed.pathname}${parsed.search}`;
  };
  text = await serializeProvider(endpointForwarder);
  [direct, relayed] = await Promise.all([startCheckoutHost(), startCheckoutHost()]);
  await direct.configure(stackConfig(service, service.apiKey));
  await relayed.configure(
    stackConfig(
      { restUrl: swap(service.restUrl), graphqlUrl: swap(service.graphqlUrl), queueUrl: service.queueUrl },
      service.apiKey,
    ),
  );
  templateId = (await rest.templates.create({ name: "worker", imageName: "img:1", isServerless: true })).id;
});

afterAll(async () => {
  await Promise.all([direct?.close(), relayed?.close()]);
  await relay?.close();
  await Promise.all([rest?.close(), graphql?.close()]);
  await service?.close();
});

/** `times` requests that `matches` are refused with `status`; the rest pass. */
function refuse(matches: (hit: Hit) => boolean, times: number, status: number): Rule {
  let left = times;
  return (hit) => {
    if (left <= 0 || !matches(hit)) return undefined;
    left--;
    return status;
  };
}

async function create(host: DynamicProviderHost, name: string, program: Record<string, unknown>) {
  const urn = dynamicUrn("Endpoint", name);
  const checked = await host.check(urn, {}, { ...program, __logicalName: name, __provider: text });
  expect(checked.failures).toEqual([]);
  return { urn, ...(await host.create(urn, checked.inputs)) };
}

describe("Endpoint through Pulumi's provider host, the service failing by rule", () => {
  test("a create refused with 503 (an answer the provider cannot tell from a lost one) does not take over the other stack's endpoint of its generated name", async () => {
    const theirs = await create(direct, "twin", { templateId, workersMax: 1 });
    rule = refuse((hit) => hit.body.includes("saveEndpoint"), 1, 503);
    const ours = await create(relayed, "twin", { templateId, workersMax: 3 });
    rule = () => undefined;
    expect(ours.properties.name).toBe(theirs.properties.name);
    expect(ours.id).not.toBe(theirs.id);
    expect(await graphql.getEndpoint(theirs.id)).toMatchObject({ workersMax: 1 });
    expect(await graphql.getEndpoint(ours.id)).toMatchObject({ workersMax: 3 });
  });

  test("a delete whose REST GPU types put-back is refused, then the delete too, leaves the endpoint with its workers and its GPU types", async () => {
    const made = await create(relayed, "gpus", { templateId, workersMin: 1, workersMax: 2 });
    await rest.endpoints.update(made.id, { gpuTypeIds: ["NVIDIA B200"] });
    const patch = refuse((hit) => hit.method === "PATCH" && hit.url.includes(made.id), 1, 401);
    const deletes = refuse((hit) => hit.body.includes("deleteEndpoint"), 1_000, 401);
    rule = (hit) => patch(hit) ?? deletes(hit);
    const failure = await relayed.delete(made.urn, made.id, made.properties).catch((error: unknown) => error);
    rule = () => undefined;
    expect(String((failure as Error).message)).toContain(
      'its worker counts (workersMin 1, workersMax 2) and its GPU types set through REST (gpuTypeIds ["NVIDIA B200"]) were put back, so it serves as before',
    );
    expect(await rest.endpoints.get(made.id)).toMatchObject({
      workersMin: 1,
      workersMax: 2,
      gpuTypeIds: ["NVIDIA B200"],
    });
  });
});
