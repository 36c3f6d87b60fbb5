import { request } from "node:http";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { inputFields } from "../../provider/check";
import { createManagementApi } from "../../provider/clients";
import {
  CREATE_MARK,
  createEndpointProvider,
  endpointSpec,
  recordAsDesired,
  toSaveInput,
} from "../../provider/endpoint";
import { UNKNOWN } from "../../provider/unknowns";
import {
  checkAndCreate,
  expectPlainJson,
  generatedNameOf,
  type Harness,
  inputsOf,
  startHarness,
} from "./support";

let h: Harness;
let provider: ReturnType<typeof createEndpointProvider>;
let templateId: string;

beforeEach(async () => {
  h = await startHarness({ deleteTimeoutMs: 30_000 });
  provider = createEndpointProvider(h.context);
  templateId = (await h.rest.templates.create({ name: "worker", imageName: "img:1", isServerless: true })).id;
});
afterEach(async () => {
  await h.close();
});

const fields = inputFields(endpointSpec);
const API = generatedNameOf(endpointSpec, "api");

/** Deletes an endpoint behind the provider's back (the service wants it scaled to zero first). */
async function deleteElsewhere(id: string) {
  await h.rest.endpoints.update(id, { workersMin: 0, workersMax: 0 });
  await h.graphql.deleteEndpoint(id);
}

const up = (news: Record<string, unknown>) => checkAndCreate(provider, "api", news);

describe("Endpoint check", () => {
  test("a number or boolean given as a string (config.get) names the property once and the config getter", async () => {
    const { failures } = await provider.check(
      {},
      { __logicalName: "api", templateId: "t1", workersMax: "3", workersMin: "0" },
    );
    expect(failures).toEqual([
      {
        property: "workersMin",
        reason: 'workersMin: expected a number, got the string "0" (use config.requireNumber / getNumber)',
      },
      {
        property: "workersMax",
        reason: 'workersMax: expected a number, got the string "3" (use config.requireNumber / getNumber)',
      },
    ]);
  });

  test("fills defaults and auto-names; failures name each property; no call is made", async () => {
    const ok = await provider.check({}, { __logicalName: "api", templateId: "t1" });
    expect(ok.failures).toEqual([]);
    expect(ok.inputs).toMatchObject({
      name: API,
      gpuIds: "AMPERE_16",
      workersMin: 0,
      workersMax: 3,
      idleTimeout: 5,
      scalerType: "QUEUE_DELAY",
      type: "QB",
      computeType: "GPU",
      env: {},
      locations: null,
    });
    const bad = await provider.check(
      {},
      {
        __logicalName: "api",
        gpuIds: "AMPERE_99",
        idleTimeout: 0,
        scalerType: "FASTEST",
        workersMin: 5,
        workersMax: 2,
        locations: "US,MOON",
        executionTimeoutMs: 10,
        flashBootType: "flashboot",
        workerz: 1,
        env: { "PYTHONPATH=/x": "" },
      },
    );
    expect(bad.failures.map((f) => f.property).sort()).toEqual([
      "env.PYTHONPATH=/x",
      "executionTimeoutMs",
      "flashBootType",
      "gpuIds",
      "idleTimeout",
      "locations",
      "scalerType",
      "templateId",
      "workersMin",
      "workerz",
    ]);
    expect(bad.failures.find((f) => f.property.startsWith("env"))?.reason).toContain('must not contain "="');
    // A GPU choice whose exclusions leave no GPU type, and the "" a REST-only choice reads as.
    const none = await provider.check(
      {},
      { __logicalName: "api", templateId: "t1", gpuIds: "AMPERE_48,-NVIDIA A40,-NVIDIA RTX A6000" },
    );
    expect(none.failures).toEqual([
      {
        property: "gpuIds",
        reason:
          'gpuIds: excludes every GPU type of its pools ("AMPERE_48,-NVIDIA A40,-NVIDIA RTX A6000"); a GPU endpoint needs at least one',
      },
    ]);
    const empty = await provider.check({}, { __logicalName: "api", templateId: "t1", gpuIds: "" });
    expect(empty.failures.map((f) => f.property)).toEqual(["gpuIds"]);
    expect(empty.failures[0]?.reason).toMatch(/^gpuIds: is empty: name at least one GPU pool/);
    // A negative workersMax is its own failure, not also a workersMin one; a bad CUDA version lists the good ones.
    const negative = await provider.check(
      {},
      { __logicalName: "api", templateId: "t1", workersMax: -1, allowedCudaVersions: "12.4,99.1" },
    );
    expect(negative.failures).toEqual([
      { property: "workersMax", reason: "workersMax: Too small: expected number to be >=0" },
      {
        property: "allowedCudaVersions",
        reason: expect.stringMatching(
          /^allowedCudaVersions: unknown CUDA version "99\.1"; expected a comma list of 13\.0, 12\.9, .*12\.4/,
        ),
      },
    ]);
    expect(h.apiRequests()).toBe(0);
  });

  test("a name with a control character or an unpaired surrogate is refused before any call", async () => {
    for (const name of ["two\nlines", "x\ud800"]) {
      const { failures } = await provider.check({}, { __logicalName: "api", templateId: "t1", name });
      expect(failures).toEqual([
        {
          property: "name",
          reason:
            "name: must be printable text: no control character (such as NUL, a tab or a line break) and no unpaired UTF-16 surrogate",
        },
      ]);
    }
    expect(h.apiRequests()).toBe(0);
  });

  test("a volume given both as networkVolumeId and in networkVolumeIds is refused naming networkVolumeIds", async () => {
    const both = await provider.check(
      {},
      { __logicalName: "api", templateId: "t1", networkVolumeId: "v1", networkVolumeIds: ["v2", "v1"] },
    );
    expect(both.failures).toEqual([
      {
        property: "networkVolumeIds",
        reason:
          "networkVolumeIds: network volume v1 is also the endpoint's networkVolumeId; give each volume once: as networkVolumeId, or in networkVolumeIds (volumes in several data centers), not both",
      },
    ]);
    const apart = await provider.check(
      {},
      { __logicalName: "api", templateId: "t1", networkVolumeId: UNKNOWN, networkVolumeIds: ["v1"] },
    );
    expect(apart.failures).toEqual([]);
    expect(h.apiRequests()).toBe(0);
  });

  test("preview: unknown values anywhere are accepted, and an unknown type may replace", async () => {
    const checked = await provider.check(
      {},
      {
        __logicalName: "api",
        templateId: UNKNOWN,
        networkVolumeId: UNKNOWN,
        env: { KEY: UNKNOWN },
        type: UNKNOWN,
      },
    );
    expect(checked.failures).toEqual([]);
    const created = await up({ templateId });
    const diff = await provider.diff(created.id, created.outs, { ...created.inputs, type: UNKNOWN });
    expect(diff).toMatchObject({ changes: true, replaces: ["type"] });
  });
});

/** A GET to the local service at `path`, addressed to `host` (its port; *.localhost is loopback). */
function getVia(host: string, path: string): Promise<{ status: number; body: string }> {
  const port = Number(new URL(h.service.queueUrl).port);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, path, headers: { host, authorization: `Bearer ${h.service.apiKey}` } },
      (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => {
          body += chunk.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("Endpoint url", () => {
  test("a load-balancing endpoint's url is its workers' address, not the job API that refuses it", async () => {
    const lb = await up({ templateId, type: "LB" });
    // The local service's queueUrl is an IP address: localhost stands in for it (*.localhost is loopback).
    const port = new URL(h.service.queueUrl).port;
    expect(lb.outs.url).toBe(`http://${lb.id}.localhost:${port}`);
    // The local service serves no LB traffic: a worker path there is a plain 404, not a queue call.
    const ping = await getVia(`${lb.id}.localhost:${port}`, "/ping");
    expect(ping.status).toBe(404);
    expect(ping.body).not.toContain("UNSUPPORTED");
    // A refresh reads the same address.
    expect((await provider.read(lb.id, lb.outs)).props).toMatchObject({ url: lb.outs.url });

    // Against the real service's queue host, the id is a subdomain: https://{id}.api.runpod.ai.
    h.settings.queueUrl = "https://api.runpod.ai";
    const real = await checkAndCreate(provider, "lb-real", { templateId, type: "LB" });
    expect(real.outs.url).toBe(`https://${real.id}.api.runpod.ai`);
    const queue = await checkAndCreate(provider, "qb-real", { templateId });
    expect(queue.outs.url).toBe(`https://api.runpod.ai/v2/${queue.id}`);
  });
});

describe("Endpoint lifecycle", () => {
  test("create: outputs are every input plus url, createdAt and version, as plain JSON", async () => {
    const created = await up({
      templateId,
      gpuIds: "AMPERE_48,-NVIDIA RTX A6000",
      workersMax: 2,
      idleTimeout: 30,
      env: { MODEL: "llama" },
      modelName: "https://huggingface.co/acme/tiny",
      locations: "US, CZ",
    });
    expectPlainJson(created.outs);
    for (const field of fields) expect(created.outs, field).toHaveProperty(field);
    expect(created.outs).toMatchObject({
      name: API,
      templateId,
      gpuIds: "AMPERE_48,-NVIDIA RTX A6000",
      workersMin: 0,
      workersMax: 2,
      idleTimeout: 30,
      env: { MODEL: "llama" },
      modelName: "https://huggingface.co/acme/tiny",
      locations: "US,CZ",
      url: `${h.service.queueUrl}/v2/${created.id}`,
      version: 0,
      adoptId: null,
    });
    expect(created.outs.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await h.graphql.getEndpoint(created.id)).toMatchObject({ idleTimeout: 30, workersMax: 2 });
  });

  test("a second up with the same program (defaults omitted or spelled out) changes nothing", async () => {
    const created = await up({ templateId, workersMax: 2 });
    const next = await provider.check(inputsOf(created.outs, fields), {
      __logicalName: "api",
      templateId,
      workersMax: 2,
      workersMin: 0,
      idleTimeout: 5,
    });
    expect(await provider.diff(created.id, created.outs, next.inputs)).toEqual({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
  });

  test("update sends the whole configuration: fields not changed keep their values", async () => {
    const created = await up({ templateId, idleTimeout: 30, scalerValue: 9, workersMax: 2 });
    const news = (
      await provider.check(created.inputs, {
        __logicalName: "api",
        templateId,
        idleTimeout: 30,
        scalerValue: 9,
        workersMax: 4,
      })
    ).inputs;
    const updated = await provider.update(created.id, created.outs, news);
    expect(updated.outs).toMatchObject({ workersMax: 4, idleTimeout: 30, scalerValue: 9 });
    expect(await h.graphql.getEndpoint(created.id)).toMatchObject({
      workersMax: 4,
      idleTimeout: 30,
      scalerValue: 9,
    });
  });

  test("workersMin 0 is a value, not absence: scaling down to zero is applied", async () => {
    const created = await up({ templateId, workersMin: 1, workersMax: 2 });
    const news = (
      await provider.check(created.inputs, { __logicalName: "api", templateId, workersMin: 0, workersMax: 2 })
    ).inputs;
    await provider.update(created.id, created.outs, news);
    expect((await h.graphql.getEndpoint(created.id))?.workersMin).toBe(0);
  });

  test("computeType and type replace; other changes update in place", async () => {
    const created = await up({ templateId });
    const diffOf = async (change: Record<string, unknown>) =>
      provider.diff(
        created.id,
        created.outs,
        (await provider.check(created.inputs, { __logicalName: "api", templateId, ...change })).inputs,
      );
    expect(await diffOf({ computeType: "CPU" })).toEqual({
      changes: true,
      replaces: ["computeType"],
      deleteBeforeReplace: false,
    });
    expect(await diffOf({ type: "LB" })).toEqual({
      changes: true,
      replaces: ["type"],
      deleteBeforeReplace: false,
    });
    expect(await diffOf({ name: "renamed", gpuCount: 2 })).toEqual({
      changes: true,
      replaces: [],
      deleteBeforeReplace: false,
    });
  });

  test("read detects drift in every field; refresh then up restores the program's values", async () => {
    const created = await up({ templateId, idleTimeout: 30, env: { A: "1" } });
    await h.rest.endpoints.update(created.id, { idleTimeout: 99, workersMax: 7, name: "edited-in-console" });
    const read = await provider.read(created.id, created.outs);
    expect(read.props).toMatchObject({
      idleTimeout: 99,
      workersMax: 7,
      name: "edited-in-console",
      env: { A: "1" },
    });
    const diff = await provider.diff(created.id, read.props, created.inputs);
    expect(diff.changes).toBe(true);
    const restored = await provider.update(created.id, read.props, created.inputs);
    expect(restored.outs).toMatchObject({ idleTimeout: 30, workersMax: 3, name: API });
  });

  test('GPU types set through REST that no pools describe read as gpuIds "": drift, and up restores the program\'s', async () => {
    const created = await up({ templateId, gpuIds: "AMPERE_48", workersMax: 0 });
    await h.rest.endpoints.update(created.id, { gpuTypeIds: ["NVIDIA B200"] });
    const read = await provider.read(created.id, created.outs);
    expect(read.props).toHaveProperty("gpuIds", "");
    const diff = await provider.diff(created.id, read.props, created.inputs);
    expect(diff).toMatchObject({ changes: true, replaces: [] });
    const restored = await provider.update(created.id, read.props, created.inputs);
    expect(restored.outs).toHaveProperty("gpuIds", "AMPERE_48");
    expect((await h.rest.endpoints.get(created.id)).gpuTypeIds).toEqual(["NVIDIA RTX A6000", "NVIDIA A40"]);
    // A REST change pools can describe reads as that choice, in the REST list's priority order.
    await h.rest.endpoints.update(created.id, { gpuTypeIds: ["NVIDIA L4", "NVIDIA A40"] });
    const moved = await provider.read(created.id, restored.outs);
    expect(moved.props).toHaveProperty(
      "gpuIds",
      "AMPERE_24,AMPERE_48,-NVIDIA RTX A5000,-NVIDIA GeForce RTX 3090,-NVIDIA RTX A6000",
    );
  });

  test("comma lists with spaces or repeats (gpuIds, locations) read back in one spelling, with no drift and no diff, also for a stack applied before", async () => {
    const program = { templateId, gpuIds: "AMPERE_48, -NVIDIA RTX A6000,AMPERE_48", locations: "US , CZ,US" };
    const created = await up(program);
    // The service keeps each item once, trimmed; the provider's check spells the inputs the same way.
    expect(created.inputs).toMatchObject({ gpuIds: "AMPERE_48,-NVIDIA RTX A6000", locations: "US,CZ" });
    expect(created.outs).toMatchObject({ gpuIds: "AMPERE_48,-NVIDIA RTX A6000", locations: "US,CZ" });
    const read = await provider.read(created.id, created.outs);
    expect(read.props).toMatchObject({ gpuIds: "AMPERE_48,-NVIDIA RTX A6000", locations: "US,CZ" });
    const next = await provider.check(inputsOf(created.outs, fields), { __logicalName: "api", ...program });
    const noChange = { changes: false, replaces: [], deleteBeforeReplace: false };
    expect(await provider.diff(created.id, read.props, next.inputs)).toEqual(noChange);
    // A stack whose inputs an earlier version applied as written (repeats and spaces kept).
    const applied = created.outs.__runpodkitApplied as Record<string, unknown>;
    const earlier = {
      ...created.outs,
      gpuIds: program.gpuIds,
      locations: "US,CZ,US",
      __runpodkitApplied: { ...applied, gpuIds: program.gpuIds, locations: "US,CZ,US" },
    };
    const again = await provider.check(inputsOf(earlier, fields), { __logicalName: "api", ...program });
    expect(await provider.diff(created.id, earlier, again.inputs)).toEqual(noChange);
  });

  test("delete of an endpoint whose GPU types no pools describe still scales it to zero and deletes it", async () => {
    const created = await up({ templateId, workersMax: 0 });
    await h.rest.endpoints.update(created.id, { gpuTypeIds: ["NVIDIA GeForce RTX 5090"], workersMax: 2 });
    await provider.delete(created.id, created.outs);
    expect(await h.graphql.getEndpoint(created.id)).toBeNull();
  });

  test("a network volume outside the endpoint's locations is the service's refusal, naming the field and the data centers", async () => {
    const volume = await h.rest.networkVolumes.create({ name: "tx", size: 10, dataCenterId: "US-TX-3" });
    const failure = up({ templateId, networkVolumeId: volume.id, locations: "CZ", workersMax: 0 });
    await expect(failure).rejects.toMatchObject({ code: "SERVICE", field: "networkVolumeId" });
    const error = (await failure.catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/^create endpoint api-[0-9a-f]{7}: /);
    expect(error.message).toContain(
      `networkVolumeId: network volume ${volume.id} is in US-TX-3, which is not among the endpoint's data centers (EU-CZ-1: dataCenterIds within locations CZ)`,
    );
  });

  test("an update that overwrites a change made outside Pulumi says which fields, without secret values; an unchanged up makes no call", async () => {
    const warnings: string[] = [];
    const warned = createEndpointProvider({ ...h.context, warn: (message) => void warnings.push(message) });
    const created = await checkAndCreate(warned, "api", {
      templateId,
      workersMax: 3,
      idleTimeout: 5,
      env: { TOKEN: "t1", MODE: "a" },
    });
    // A console user raises workersMax and idleTimeout and rotates TOKEN; no refresh follows.
    const current = (await h.graphql.getEndpoint(created.id))!;
    await h.graphql.saveEndpoint({
      ...toSaveInput(recordAsDesired(current), created.id),
      workersMax: 4,
      idleTimeout: 30,
      env: current.env.map((e) => (e.key === "TOKEN" ? { key: "TOKEN", value: "rotated-elsewhere" } : e)),
    });
    // Nothing changed in the program: diff (all a no-op up calls) asks the service nothing.
    const requests = h.apiRequests();
    const same = await warned.check(created.outs, created.inputs);
    expect((await warned.diff(created.id, created.outs, same.inputs)).changes).toBe(false);
    expect(h.apiRequests()).toBe(requests);
    // The program changes workersMax and TOKEN (both changed elsewhere) and MODE (not).
    const news = (
      await warned.check(created.outs, { ...created.inputs, workersMax: 5, env: { TOKEN: "t2", MODE: "b" } })
    ).inputs;
    await warned.update(created.id, created.outs, news);
    expect(warnings).toEqual([
      `update endpoint ${API} (resource Endpoint "api"): overwrote what was changed outside Pulumi since the last up or refresh: workersMax (4 there, now 5), env.TOKEN. The service keeps no versions, so the program's value wins; run pulumi refresh (or up --refresh) first to see such changes in the preview.`,
    ]);
    expect(warnings.join()).not.toContain("rotated-elsewhere");
    // idleTimeout, which the program left, keeps the value set elsewhere.
    expect(await h.graphql.getEndpoint(created.id)).toMatchObject({ workersMax: 5, idleTimeout: 30 });
  });

  test("after a refresh, an update of a field changed outside Pulumi warns of nothing: the preview showed it", async () => {
    const warnings: string[] = [];
    const warned = createEndpointProvider({ ...h.context, warn: (message) => void warnings.push(message) });
    const created = await checkAndCreate(warned, "api", { templateId, workersMax: 3 });
    await h.rest.endpoints.update(created.id, { workersMax: 4 });
    const read = await warned.read(created.id, created.outs);
    const news = (await warned.check(read.inputs!, { ...created.inputs, workersMax: 5 })).inputs;
    await warned.update(created.id, read.props, news);
    expect(warnings).toEqual([]);
    expect(await h.graphql.getEndpoint(created.id)).toMatchObject({ workersMax: 5 });
  });

  test("env keys added elsewhere are no drift and survive updates; managed keys are compared", async () => {
    const created = await up({ templateId, env: { MODEL: "llama", TOKEN: "t1" } });
    // Out of band, through the service's GraphQL API: a full saveEndpoint with one more key.
    const current = (await h.graphql.getEndpoint(created.id))!;
    await h.graphql.saveEndpoint({
      ...toSaveInput(recordAsDesired(current), created.id),
      env: [...current.env, { key: "ADDED_IN_CONSOLE", value: "1" }],
    });
    // refresh: the managed keys only, so diff against the same program reports nothing.
    const read = await provider.read(created.id, created.outs);
    expect(read.props).toHaveProperty("env", { MODEL: "llama", TOKEN: "t1" });
    const same = await provider.check(read.inputs!, {
      __logicalName: "api",
      templateId,
      env: { MODEL: "llama", TOKEN: "t1" },
    });
    expect(await provider.diff(created.id, read.props, same.inputs)).toMatchObject({ changes: false });
    // update: a managed key changes, one is dropped by the program; the foreign key is kept.
    const news = (
      await provider.check(read.inputs!, { __logicalName: "api", templateId, env: { MODEL: "mistral" } })
    ).inputs;
    expect(await provider.diff(created.id, read.props, news)).toMatchObject({ changes: true });
    const updated = await provider.update(created.id, read.props, news);
    expect(updated.outs.env).toEqual({ MODEL: "mistral" });
    const stored = (await h.graphql.getEndpoint(created.id))!.env;
    // The create's mark (CREATE_MARK) is a key the program does not manage: kept, never reported.
    expect(Object.fromEntries(stored.map(({ key, value }) => [key, value]))).toEqual({
      MODEL: "mistral",
      ADDED_IN_CONSOLE: "1",
      [CREATE_MARK]: expect.any(String),
    });
    // A managed key changed elsewhere is drift.
    await h.graphql.saveEndpoint({
      ...toSaveInput(recordAsDesired((await h.graphql.getEndpoint(created.id))!), created.id),
      env: [
        { key: "MODEL", value: "hotfix" },
        { key: "ADDED_IN_CONSOLE", value: "1" },
      ],
    });
    const drifted = await provider.read(created.id, updated.outs);
    expect(drifted.props).toHaveProperty("env", { MODEL: "hotfix" });
    expect(await provider.diff(created.id, drifted.props, news)).toMatchObject({ changes: true });
  });

  test("dependent-replacement pass: templateId unknown (its template is being replaced) is an update", async () => {
    const created = await up({ templateId, workersMax: 2 });
    // The engine sends the old inputs with the replaced resource's output unknown.
    const diff = await provider.diff(created.id, created.outs, { ...created.inputs, templateId: UNKNOWN });
    expect(diff).toEqual({ changes: true, replaces: [], deleteBeforeReplace: false });
  });

  test("read of a deleted endpoint returns a blank id, so refresh drops it", async () => {
    const created = await up({ templateId });
    await deleteElsewhere(created.id);
    expect(await provider.read(created.id, created.outs)).toEqual({ id: "", props: {} });
  });

  test("delete of an endpoint with workers scales it to zero (full save) and deletes it", async () => {
    const created = await up({ templateId, workersMin: 1, workersMax: 3, idleTimeout: 42, env: { A: "1" } });
    const saves: Record<string, unknown>[] = [];
    h.intercept((api) => ({
      ...api,
      endpoints: {
        ...api.endpoints,
        save: (input) => {
          saves.push({ ...input });
          return api.endpoints.save(input);
        },
      },
    }));
    await provider.delete(created.id, created.outs);
    expect(await h.graphql.getEndpoint(created.id)).toBeNull();
    expect(h.pause.slept).toEqual([]);
    // One save, carrying the whole configuration with both worker counts at zero.
    expect(saves).toEqual([
      expect.objectContaining({
        id: created.id,
        name: API,
        templateId,
        workersMin: 0,
        workersMax: 0,
        idleTimeout: 42,
        env: [
          { key: "A", value: "1" },
          { key: CREATE_MARK, value: expect.any(String) },
        ],
      }),
    ]);
  });

  test("delete of an endpoint that is already gone succeeds", async () => {
    const created = await up({ templateId });
    await deleteElsewhere(created.id);
    await expect(provider.delete(created.id, created.outs)).resolves.toBeUndefined();
  });

  test("a refusal is retried with backoff, and each attempt scales to zero again", async () => {
    const created = await up({ templateId, workersMax: 2 });
    let raced = false;
    h.intercept((api) => ({
      ...api,
      endpoints: {
        ...api.endpoints,
        // Right after the provider's scale-to-zero, another writer (REST) sets workersMax again, once.
        save: async (input) => {
          const saved = await api.endpoints.save(input);
          if (!raced) {
            raced = true;
            await h.rest.endpoints.update(created.id, { workersMax: 1 });
          }
          return saved;
        },
      },
    }));
    await provider.delete(created.id, created.outs);
    expect(h.pause.slept).toEqual([1000]);
    expect(await h.graphql.getEndpoint(created.id)).toBeNull();
  });

  test("any other error fails the delete at once, without waiting", async () => {
    const created = await up({ templateId, workersMax: 0 });
    // The service refuses the delete call itself with another code (a key it does not know).
    const stranger = createManagementApi({ ...h.settings, apiKey: "rpk_not-a-known-key" });
    h.intercept((api) => ({ ...api, endpoints: { ...api.endpoints, delete: stranger.endpoints.delete } }));
    await expect(provider.delete(created.id, created.outs)).rejects.toMatchObject({
      code: "SERVICE",
      serviceCode: "UNAUTHORIZED",
    });
    expect(h.pause.slept).toEqual([]);
  });

  test("a delete that fails after scaling to zero puts the worker counts back, so the endpoint left in the stack still serves", async () => {
    const created = await up({ templateId, workersMin: 1, workersMax: 2 });
    const stranger = createManagementApi({ ...h.settings, apiKey: "rpk_not-a-known-key" });
    h.intercept((api) => ({ ...api, endpoints: { ...api.endpoints, delete: stranger.endpoints.delete } }));
    const failure = await provider.delete(created.id, created.outs).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "SERVICE", serviceCode: "UNAUTHORIZED" });
    expect(String((failure as Error).message)).toContain(
      "the endpoint had been scaled to zero first; its worker counts were put back (workersMin 1, workersMax 2), so it serves as before",
    );
    expect(await h.graphql.getEndpoint(created.id)).toMatchObject({ workersMin: 1, workersMax: 2 });
    // The next up compares with what it applied: nothing to do, and it does serve.
    const checked = await provider.check(created.outs, created.inputs);
    expect((await provider.diff(created.id, created.outs, checked.inputs)).changes).toBe(false);
  });

  test("a delete that fails on an endpoint whose GPU types no pools describe leaves those types as they were", async () => {
    const created = await up({ templateId, workersMin: 1, workersMax: 2 });
    await h.rest.endpoints.update(created.id, { gpuTypeIds: ["NVIDIA B200"] });
    const stranger = createManagementApi({ ...h.settings, apiKey: "rpk_not-a-known-key" });
    h.intercept((api) => ({ ...api, endpoints: { ...api.endpoints, delete: stranger.endpoints.delete } }));
    const failure = await provider.delete(created.id, created.outs).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "SERVICE", serviceCode: "UNAUTHORIZED" });
    // Scaled to zero and back: the endpoint left in the stack keeps its workers and its GPU types.
    expect(await h.rest.endpoints.get(created.id)).toMatchObject({
      workersMin: 1,
      workersMax: 2,
      gpuTypeIds: ["NVIDIA B200"],
    });
  });

  test("a delete whose REST GPU types put-back fails, then the delete too: the undo puts the types back with the worker counts", async () => {
    const created = await up({ templateId, workersMin: 1, workersMax: 2 });
    await h.rest.endpoints.update(created.id, { gpuTypeIds: ["NVIDIA B200"] });
    const stranger = createManagementApi({ ...h.settings, apiKey: "rpk_not-a-known-key" });
    let puts = 0;
    h.intercept((api) => ({
      ...api,
      endpoints: {
        ...api.endpoints,
        // The put-back after the scale to zero is refused once; the undo's goes through.
        setGpuTypes: (id, types) =>
          puts++ === 0 ? stranger.endpoints.setGpuTypes(id, types) : api.endpoints.setGpuTypes(id, types),
        delete: stranger.endpoints.delete,
      },
    }));
    const failure = await provider.delete(created.id, created.outs).catch((error: unknown) => error);
    const message = String((failure as Error).message);
    expect(message).toContain(
      'its worker counts (workersMin 1, workersMax 2) and its GPU types set through REST (gpuTypeIds ["NVIDIA B200"]) were put back, so it serves as before',
    );
    expect(message).not.toContain("rpk_not-a-known-key");
    expect(puts).toBe(2);
    expect(await h.rest.endpoints.get(created.id)).toMatchObject({
      workersMin: 1,
      workersMax: 2,
      gpuTypeIds: ["NVIDIA B200"],
    });
  });

  test("when the REST GPU types cannot be put back at all, the undo says which pools the endpoint runs on and how to restore its types", async () => {
    const created = await up({ templateId, workersMin: 1, workersMax: 2 });
    await h.rest.endpoints.update(created.id, { gpuTypeIds: ["NVIDIA B200"] });
    const stranger = createManagementApi({ ...h.settings, apiKey: "rpk_not-a-known-key" });
    h.intercept((api) => ({
      ...api,
      endpoints: { ...api.endpoints, setGpuTypes: stranger.endpoints.setGpuTypes },
    }));
    const failure = await provider.delete(created.id, created.outs).catch((error: unknown) => error);
    const message = String((failure as Error).message);
    // The operation that ran was a delete: its scale to zero was saved, not an update.
    expect(message).toMatch(
      new RegExp(
        `^delete endpoint ${API}: gpuIds: the endpoint was not deleted: its scale to zero, which the delete needs first, was saved, but putting back the GPU types set through REST \\(gpuTypeIds \\["NVIDIA B200"\\]; saveEndpoint can only send pools, so it sent AMPERE_16\\) failed: rest\\.endpoints\\.update: Unauthorized`,
      ),
    );
    expect(message).not.toContain("update was saved");
    expect(message).toContain(
      `its worker counts were put back (workersMin 1, workersMax 2), but it now runs on the pools AMPERE_16, not its GPU types set through REST (gpuTypeIds ["NVIDIA B200"])`,
    );
    expect(message).toContain(`PATCH /endpoints/${created.id} with gpuTypeIds ["NVIDIA B200"]`);
    expect(message).not.toContain("serves as before");
    expect(message).not.toContain("rpk_not-a-known-key");
    expect(await h.graphql.getEndpoint(created.id)).toMatchObject({
      workersMin: 1,
      workersMax: 2,
      gpuIds: "AMPERE_16",
    });
  });

  test("when putting the worker counts back fails too, the error says the endpoint stays at zero and how to restore it", async () => {
    const created = await up({ templateId, workersMax: 2 });
    const stranger = createManagementApi({ ...h.settings, apiKey: "rpk_not-a-known-key" });
    let saves = 0;
    h.intercept((api) => ({
      ...api,
      endpoints: {
        ...api.endpoints,
        save: (input) => (saves++ === 0 ? api.endpoints.save(input) : stranger.endpoints.save(input)),
        delete: stranger.endpoints.delete,
      },
    }));
    const failure = await provider.delete(created.id, created.outs).catch((error: unknown) => error);
    const message = String((failure as Error).message);
    expect(message).toContain(
      "the endpoint had been scaled to zero first, and putting its worker counts back failed",
    );
    expect(message).toContain("pulumi refresh then up restores workersMin 0 and workersMax 2");
    expect(message).not.toContain("rpk_not-a-known-key");
    expect(await h.graphql.getEndpoint(created.id)).toMatchObject({ workersMax: 0 });
  });

  test("a refusal past the configured bound fails with the bound in the error", async () => {
    const created = await up({ templateId, workersMax: 2 });
    h.intercept((api) => ({
      ...api,
      endpoints: {
        ...api.endpoints,
        save: async (input) => {
          const saved = await api.endpoints.save(input);
          await h.rest.endpoints.update(created.id, { workersMax: 1 });
          return saved;
        },
      },
    }));
    const failure = provider.delete(created.id, created.outs);
    await expect(failure).rejects.toMatchObject({
      code: "TIMEOUT",
      operation: `delete endpoint ${API}`,
    });
    await expect(failure).rejects.toThrow(/within the bound of 30s/);
    expect(await h.graphql.getEndpoint(created.id)).not.toBeNull();
  });

  test("adoption: create verifies the id, applies the whole desired configuration, keeps the name", async () => {
    const existing = await h.graphql.saveEndpoint({
      name: "prod-api",
      templateId,
      gpuIds: "ADA_24",
      idleTimeout: 60,
    });
    const adopted = await up({ adoptId: existing.id, templateId, workersMax: 5 });
    expect(adopted.id).toBe(existing.id);
    expect(adopted.outs).toMatchObject({
      name: "prod-api",
      workersMax: 5,
      idleTimeout: 5,
      gpuIds: "AMPERE_16",
    });
    expect((await h.graphql.listEndpoints()).length).toBe(1);
    await expect(up({ adoptId: "nosuchendpoint", templateId })).rejects.toMatchObject({
      code: "NOT_FOUND",
      field: "adoptId",
    });
  });

  test("Resource.get: read by id alone gives the whole record", async () => {
    const existing = await h.graphql.saveEndpoint({
      name: "seen",
      templateId,
      gpuIds: "AMPERE_24",
      workersMax: 1,
    });
    const read = await provider.read(existing.id, {});
    expect(read.props).toMatchObject({ name: "seen", gpuIds: "AMPERE_24", workersMax: 1, templateId });
    expectPlainJson(read.props);
  });

  test("a refusal by the service reaches the user with the operation and field, without the key", async () => {
    const failure = up({ templateId: "nosuchtemplate" });
    await expect(failure).rejects.toMatchObject({ code: "SERVICE", field: "templateId" });
    const error = (await failure.catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(/^create endpoint api-[0-9a-f]{7}: /);
    expect(error.message).not.toContain(h.settings.apiKey);
  });
});
