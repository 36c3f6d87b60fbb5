import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { containerRegistryAuthForwarder } from "../../provider/container-registry-auth";
import { endpointForwarder } from "../../provider/endpoint";
import { networkVolumeForwarder } from "../../provider/network-volume";
import { podForwarder } from "../../provider/pod";
import { secretForwarder } from "../../provider/secret";
import { templateForwarder } from "../../provider/template";
import { UNKNOWN } from "../../provider/unknowns";
import { GraphQLClient } from "../../sdk/graphql";
import { RestClient } from "../../sdk/rest";
import { ManualClock } from "../../service/clock";
import {
  type DynamicProviderHost,
  dynamicUrn,
  type Props,
  serializeProvider,
  stackConfig,
  startCheckoutHost,
} from "../helpers/pulumi-host";
import { type TestService, withService } from "../helpers/service";

/**
 * The same lifecycles through Pulumi's own provider host (cmd/dynamic-provider), over gRPC, with the
 * providers serialized exactly as pulumi.dynamic.Resource serializes them. Proves the provider text
 * holds no credential or address, loads its implementation by package path, reads config from
 * Configure, and returns outputs the wire accepts.
 */

let service: TestService;
let host: DynamicProviderHost;
let rest: RestClient;
let graphql: GraphQLClient;
const text: Record<string, string> = {};

beforeAll(async () => {
  service = await withService({ clock: new ManualClock() });
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
  graphql = new GraphQLClient({ apiKey: service.apiKey, baseUrl: service.graphqlUrl });
  text.Endpoint = await serializeProvider(endpointForwarder);
  text.Template = await serializeProvider(templateForwarder);
  text.NetworkVolume = await serializeProvider(networkVolumeForwarder);
  text.ContainerRegistryAuth = await serializeProvider(containerRegistryAuthForwarder);
  text.Pod = await serializeProvider(podForwarder);
  text.Secret = await serializeProvider(secretForwarder);
  // The host gets a clean environment: the key can only come from Configure.
  host = await startCheckoutHost();
  await host.configure(
    stackConfig(service, service.apiKey, { "runpodkit:deleteTimeout": "5", "other:setting": "ignored" }),
  );
});

afterAll(async () => {
  await host?.close();
  await Promise.all([rest?.close(), graphql?.close()]);
  await service?.close();
});

/** check then create over the wire, as the engine does for a new resource. */
async function up(type: string, name: string, props: Props) {
  const urn = dynamicUrn(type, name);
  const news = { ...props, __logicalName: name, __provider: text[type] };
  const checked = await host.check(urn, {}, news);
  expect(checked.failures).toEqual([]);
  const created = await host.create(urn, checked.inputs);
  return { urn, inputs: checked.inputs, ...created };
}

describe("serialized providers", () => {
  test("hold no credential and no address, and load the implementation by package path", () => {
    for (const [type, serialized] of Object.entries(text)) {
      expect(serialized, type).not.toContain(service.apiKey);
      expect(serialized, type).not.toContain(service.restUrl);
      expect(serialized, type).not.toContain(service.graphqlUrl);
      expect(serialized, type).not.toContain("127.0.0.1");
      expect(serialized, type).not.toMatch(/\/work\/|\/home\/|\/tmp\//); // no absolute path in the state
      expect(serialized, type).toMatch(/"runpodkit\/provider\/[a-z-]+-provider"/);
    }
  });
});

describe("through Pulumi's provider host", () => {
  test("Template: check, create, no-op diff, update, read, delete, gone", async () => {
    const t = await up("Template", "tpl", { imageName: "img:1", isServerless: true, env: { A: "1" } });
    expect(t.id).toMatch(/^[a-z0-9]{10}$/);
    expect(t.properties).toMatchObject({ imageName: "img:1", env: { A: "1" }, __provider: text.Template });
    expect(String(t.properties.name)).toMatch(/^tpl-[0-9a-f]{7}$/);

    const again = await host.check(t.urn, t.inputs, {
      imageName: "img:1",
      isServerless: true,
      env: { A: "1" },
      __logicalName: "tpl",
      __provider: text.Template,
    });
    expect(again.inputs.name).toBe(t.properties.name);
    expect((await host.diff(t.urn, t.id, t.properties, again.inputs)).changes).toBe("none");

    const next = await host.check(t.urn, t.inputs, { ...again.inputs, imageName: "img:2" });
    expect(await host.diff(t.urn, t.id, t.properties, next.inputs)).toEqual({
      changes: "some",
      replaces: [],
      deleteBeforeReplace: false,
    });
    const updated = await host.update(t.urn, t.id, t.properties, next.inputs);
    expect(updated.properties).toMatchObject({ imageName: "img:2" });

    await rest.templates.update(t.id, { readme: "edited elsewhere" });
    const refreshed = await host.read(t.urn, t.id, updated.properties);
    expect(refreshed).toMatchObject({ id: t.id, properties: { readme: "edited elsewhere" } });
    expect(refreshed.inputs).toMatchObject({ readme: "edited elsewhere", name: t.properties.name });

    await host.delete(t.urn, t.id, refreshed.properties);
    expect((await host.read(t.urn, t.id, refreshed.properties)).id).toBe("");
    await host.delete(t.urn, t.id, refreshed.properties); // already gone: still a success
  });

  test("Pod: create RUNNING, stop by desiredStatus, a new GPU type replaces, terminate, gone", async () => {
    const p = await up("Pod", "box", { imageName: "img:1", gpuTypeIds: ["NVIDIA GeForce RTX 4090"] });
    expect(p.properties).toMatchObject({
      desiredStatus: "RUNNING",
      computeType: "GPU",
      __provider: text.Pod,
    });
    expect((await rest.pods.get(p.id)).desiredStatus).toBe("RUNNING");
    const stopped = await host.check(p.urn, p.inputs, { ...p.inputs, desiredStatus: "EXITED" });
    expect((await host.diff(p.urn, p.id, p.properties, stopped.inputs)).changes).toBe("some");
    const updated = await host.update(p.urn, p.id, p.properties, stopped.inputs);
    expect(updated.properties.desiredStatus).toBe("EXITED");
    expect((await rest.pods.get(p.id)).desiredStatus).toBe("EXITED");
    const moved = await host.check(p.urn, stopped.inputs, {
      ...stopped.inputs,
      gpuTypeIds: ["NVIDIA A100 80GB PCIe"],
    });
    expect(await host.diff(p.urn, p.id, updated.properties, moved.inputs)).toMatchObject({
      replaces: ["gpuTypeIds"],
    });
    await host.delete(p.urn, p.id, updated.properties);
    expect((await host.read(p.urn, p.id, updated.properties)).id).toBe("");
  });

  test("Secret: the value travels only as input and state, never back from the service; rotated in place", async () => {
    const s = await up("Secret", "hf", { name: "hf_token", value: "hf_first" });
    expect(s.properties).toMatchObject({
      name: "hf_token",
      value: "hf_first",
      reference: "{{ RUNPOD_SECRET_hf_token }}",
    });
    const rotated = await host.check(s.urn, s.inputs, { ...s.inputs, value: "hf_second" });
    expect(await host.diff(s.urn, s.id, s.properties, rotated.inputs)).toMatchObject({
      changes: "some",
      replaces: [],
    });
    const updated = await host.update(s.urn, s.id, s.properties, rotated.inputs);
    expect(updated.properties.value).toBe("hf_second");
    const read = await host.read(s.urn, s.id, updated.properties);
    expect(read.properties).toMatchObject({ value: "hf_second", name: "hf_token" });
    expect(JSON.stringify(await graphql.listSecrets()).includes("hf_second")).toBe(false);
    await host.delete(s.urn, s.id, updated.properties);
    expect(await graphql.listSecrets()).toEqual([]);
  });

  test("NetworkVolume: shrinking fails check by property; a new data center replaces", async () => {
    const v = await up("NetworkVolume", "vol", { size: 20, dataCenterId: "EU-RO-1" });
    const shrink = await host.check(v.urn, v.inputs, { ...v.inputs, size: 10 });
    expect(shrink.failures).toEqual([{ property: "size", reason: expect.stringContaining("can only grow") }]);
    const moved = await host.check(v.urn, v.inputs, { ...v.inputs, dataCenterId: "US-TX-3" });
    expect(await host.diff(v.urn, v.id, v.properties, moved.inputs)).toMatchObject({
      replaces: ["dataCenterId"],
    });
    await host.delete(v.urn, v.id, v.properties);
  });

  test("Template start fields and dockerArgs: set through GraphQL, read back, changed in place; a shell command refused by field", async () => {
    const t = await up("Template", "pod-tpl", {
      imageName: "img:1",
      dockerArgs: 'bash -c "sleep 1 && echo hi"',
      startSsh: true,
      startScript: "echo ready",
    });
    expect(t.properties).toMatchObject({
      dockerArgs: "bash -c 'sleep 1 && echo hi'",
      dockerStartCmd: ["bash", "-c", "sleep 1 && echo hi"],
      startSsh: true,
      startJupyter: false,
      startScript: "echo ready",
    });
    expect((await graphql.listTemplates()).find((x) => x.id === t.id)).toMatchObject({
      startSsh: true,
      startScript: "echo ready",
      dockerArgs: "bash -c 'sleep 1 && echo hi'",
    });
    expect((await host.diff(t.urn, t.id, t.properties, t.inputs)).changes).toBe("none");
    const next = await host.check(t.urn, t.inputs, { ...t.inputs, startSsh: false, startJupyter: true });
    expect(await host.diff(t.urn, t.id, t.properties, next.inputs)).toEqual({
      changes: "some",
      replaces: [],
      deleteBeforeReplace: false,
    });
    const updated = await host.update(t.urn, t.id, t.properties, next.inputs);
    expect(updated.properties).toMatchObject({
      startSsh: false,
      startJupyter: true,
      startScript: "echo ready",
    });
    const refreshed = await host.read(t.urn, t.id, updated.properties);
    expect(refreshed.properties).toMatchObject({ startSsh: false, startJupyter: true });
    expect(refreshed.inputs).toMatchObject({
      startJupyter: true,
      dockerArgs: "bash -c 'sleep 1 && echo hi'",
    });
    // A misspelt property is named with the one meant; a required one left out says so.
    const misspelt = await host.check(
      dynamicUrn("Template", "typo"),
      {},
      {
        imageNme: "img:1",
        __logicalName: "typo",
        __provider: text.Template,
      },
    );
    expect(misspelt.failures).toEqual([
      { property: "imageName", reason: "imageName is required" },
      { property: "imageNme", reason: "imageNme is not a property of Template (did you mean imageName?)" },
    ]);
    const shell = await host.check(t.urn, t.inputs, { ...t.inputs, dockerArgs: "serve > log" });
    expect(shell.failures).toEqual([
      {
        property: "dockerArgs",
        reason: expect.stringMatching(/^dockerArgs: shell operator > outside quotes/),
      },
    ]);
    await host.delete(t.urn, t.id, refreshed.properties);
  });

  test("NetworkVolume isNextGenStorage: created with its storage, storageType read back, a change replaces", async () => {
    const v = await up("NetworkVolume", "fast", {
      size: 20,
      dataCenterId: "EU-RO-1",
      isNextGenStorage: true,
    });
    expect(v.properties).toMatchObject({ isNextGenStorage: true, storageType: "VAST", size: 20 });
    expect((await graphql.listNetworkVolumes()).find((x) => x.id === v.id)?.storageType).toBe("VAST");
    const read = await host.read(v.urn, v.id, v.properties);
    expect(read.properties).toMatchObject({ isNextGenStorage: true, storageType: "VAST" });
    const standard = await host.check(v.urn, v.inputs, { ...v.inputs, isNextGenStorage: false });
    expect(await host.diff(v.urn, v.id, v.properties, standard.inputs)).toEqual({
      changes: "some",
      replaces: ["isNextGenStorage"],
      deleteBeforeReplace: false,
    });
    const grown = await host.check(v.urn, v.inputs, { ...v.inputs, size: 30 });
    expect(await host.diff(v.urn, v.id, v.properties, grown.inputs)).toMatchObject({ replaces: [] });
    await host.delete(v.urn, v.id, v.properties);
  });

  test("ContainerRegistryAuth: credentials update in place; a new name is created before the old is deleted", async () => {
    const c = await up("ContainerRegistryAuth", "creds", {
      name: "ghcr",
      username: "bot",
      password: "s3cret-pass",
    });
    expect(c.properties).toMatchObject({ name: "ghcr", username: "bot", password: "s3cret-pass" });
    const rotated = await host.check(c.urn, c.inputs, { ...c.inputs, password: "n3w-pass" });
    expect((await host.diff(c.urn, c.id, c.properties, rotated.inputs)).replaces).toEqual([]);
    await host.update(c.urn, c.id, c.properties, rotated.inputs);
    const renamed = await host.check(c.urn, c.inputs, { ...c.inputs, name: "ghcr2" });
    expect(await host.diff(c.urn, c.id, c.properties, renamed.inputs)).toEqual({
      changes: "some",
      replaces: ["name"],
      deleteBeforeReplace: false,
    });
    await host.delete(c.urn, c.id, c.properties);
  });

  test("Endpoint: preview unknowns, create, drift, scale-to-zero delete", async () => {
    const template = await rest.templates.create({ name: "worker", imageName: "img:1", isServerless: true });
    const preview = await host.check(
      dynamicUrn("Endpoint", "api"),
      {},
      {
        templateId: UNKNOWN,
        env: { TOKEN: UNKNOWN },
        __logicalName: "api",
        __provider: text.Endpoint,
      },
    );
    expect(preview.failures).toEqual([]);

    const e = await up("Endpoint", "api", {
      templateId: template.id,
      workersMin: 1,
      workersMax: 2,
      env: { A: "1" },
    });
    expect(e.properties).toMatchObject({
      templateId: template.id,
      workersMin: 1,
      url: `${service.queueUrl}/v2/${e.id}`,
      locations: null,
      networkVolumeId: null,
    });

    await rest.endpoints.update(e.id, { idleTimeout: 77 });
    const refreshed = await host.read(e.urn, e.id, e.properties);
    expect(refreshed.properties.idleTimeout).toBe(77);
    expect((await host.diff(e.urn, e.id, refreshed.properties, e.inputs)).changes).toBe("some");

    await host.delete(e.urn, e.id, refreshed.properties);
    expect(await graphql.getEndpoint(e.id)).toBeNull();
  });

  test("check is deterministic: the same program gives the same name; a replacement a fresh one", async () => {
    const urn = dynamicUrn("Template", "det");
    const news = { imageName: "img:1", __logicalName: "det", __scope: "proj/dev", __provider: text.Template };
    const preview = await host.check(urn, {}, news);
    const up = await host.check(urn, {}, { ...news });
    expect(up).toEqual(preview);
    expect(String(preview.inputs.name)).toMatch(/^det-[0-9a-f]{7}$/);
    const otherStack = await host.check(urn, {}, { ...news, __scope: "proj/prod" });
    expect(otherStack.inputs.name).not.toBe(preview.inputs.name);
    // A replacement is re-checked without olds: its new category gives it a new name.
    const replacement = await host.check(urn, {}, { ...news, category: "AMD" });
    expect(replacement.inputs.name).not.toBe(preview.inputs.name);
    expect(await host.check(urn, {}, { ...news, category: "AMD" })).toEqual(replacement);
  });

  test("Template with an explicit name in use: diff then create in one host replace it without downtime", async () => {
    const t = await up("Template", "named", { name: "named-worker", imageName: "img:1", isServerless: true });
    const endpoint = await rest.endpoints.create({ templateId: t.id, workersMax: 1 });
    const news = { ...t.inputs, category: "AMD" };
    const checked = await host.check(t.urn, t.inputs, news);
    expect(await host.diff(t.urn, t.id, t.properties, checked.inputs)).toEqual({
      changes: "some",
      replaces: ["category"],
      deleteBeforeReplace: false,
    });
    const again = await host.check(t.urn, {}, news);
    const replacement = await host.create(t.urn, again.inputs);
    expect(replacement.properties).toMatchObject({ name: "named-worker", category: "AMD" });
    await rest.endpoints.update(endpoint.id, { templateId: replacement.id });
    await host.delete(t.urn, t.id, t.properties);
    expect(
      (await rest.templates.list({ includeEndpointBoundTemplates: true })).filter((x) =>
        x.name.startsWith("named-worker"),
      ),
    ).toEqual([expect.objectContaining({ id: replacement.id, name: "named-worker" })]);
  });

  test("pulumi import reaches no provider code: the host fails before loading it (use adoptId)", async () => {
    // The engine's import step sends Read with an id and neither properties nor inputs, so the host
    // has no serialized provider to load. README documents adoptId instead.
    const urn = dynamicUrn("Template", "imported");
    await expect(host.read(urn, "sometemplateid", {}, {})).rejects.toThrow(/code must be a string/);
  });

  test("Resource.get: a read with inputs only (no prior outputs) returns the record", async () => {
    const volume = await rest.networkVolumes.create({ name: "seen", size: 5, dataCenterId: "EU-RO-1" });
    const urn = dynamicUrn("NetworkVolume", "lookup");
    const read = await host.read(
      urn,
      volume.id,
      {},
      { __logicalName: "lookup", __provider: text.NetworkVolume },
    );
    expect(read).toMatchObject({
      id: volume.id,
      properties: { name: "seen", size: 5, dataCenterId: "EU-RO-1" },
    });
  });

  test("a service refusal reaches the engine with the operation and no credential", async () => {
    const urn = dynamicUrn("Endpoint", "broken");
    const checked = await host.check(
      urn,
      {},
      { templateId: "nosuchtemplate", __logicalName: "broken", __provider: text.Endpoint },
    );
    const failure = host.create(urn, checked.inputs);
    await expect(failure).rejects.toThrow(/create endpoint broken-[0-9a-f]{7}: .*templateId/);
    const error = (await failure.catch((e: unknown) => e)) as Error;
    expect(error.message).not.toContain(service.apiKey);
    expect(host.stderr).not.toContain(service.apiKey);
  });
});

describe("provider config, through Pulumi's provider host", () => {
  test("no API key, or a bad URL, fails check (so preview says so), naming the config key and the fix", async () => {
    const bare = await startCheckoutHost();
    try {
      await bare.configure({ "runpodkit:restUrl": "http://127.0.0.1:9/v1" });
      const checked = await bare.check(
        dynamicUrn("Endpoint", "api"),
        {},
        { templateId: UNKNOWN, __logicalName: "api", __provider: text.Endpoint },
      );
      expect(checked.failures).toEqual([
        {
          property: "runpodkit:apiKey",
          reason:
            "no API key: set the secret config runpodkit:apiKey (pulumi config set --secret runpodkit:apiKey ...) or the environment variable RUNPOD_API_KEY",
        },
      ]);
    } finally {
      await bare.close();
    }
    const misplaced = await startCheckoutHost({ env: { RUNPOD_API_KEY: "rpk_env_key_1234" } });
    try {
      await misplaced.configure({ "runpodkit:queueUrl": "https://api.runpod.ai/v2" });
      const checked = await misplaced.check(
        dynamicUrn("Template", "t"),
        {},
        { imageName: "img:1", __logicalName: "t", __provider: text.Template },
      );
      expect(checked.failures).toEqual([
        {
          property: "runpodkit:queueUrl",
          reason: expect.stringContaining("without /v2"),
        },
      ]);
    } finally {
      await misplaced.close();
    }
  });
});
