import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { nameBasis, normalizeInputs } from "../../provider/check";
import { endpointForwarder, recordAsDesired, toSaveInput } from "../../provider/endpoint";
import { hostEngineLog } from "../../provider/engine-log";
import { MAX_GENERATION, nextGenerations } from "../../provider/naming";
import { templateForwarder, templateSpec } from "../../provider/template";
import { GraphQLClient } from "../../sdk/graphql";
import { RestClient } from "../../sdk/rest";
import type { NetworkVolumeCreateInput } from "../../sdk/schemas";
import { ManualClock } from "../../service/clock";
import {
  type DynamicProviderHost,
  dynamicUrn,
  type Props,
  serializeProvider,
  stackConfig,
  startCheckoutHost,
  startEngineLog,
} from "../helpers/pulumi-host";
import { type TestService, withService } from "../helpers/service";

/**
 * ignoreChanges through Pulumi's own provider host. Pulumi's engine applies the option before Check:
 * each ignored path of the new inputs gets the old INPUTS' value (pkg/resource/deploy/step_generator.go,
 * processIgnoreChanges), and a refresh stores the inputs read returns. These tests do the same.
 */

let service: TestService;
let host: DynamicProviderHost;
let rest: RestClient;
let graphql: GraphQLClient;
let templateId: string;
const text: Record<string, string> = {};

beforeAll(async () => {
  service = await withService({ clock: new ManualClock() });
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
  graphql = new GraphQLClient({ apiKey: service.apiKey, baseUrl: service.graphqlUrl });
  text.Endpoint = await serializeProvider(endpointForwarder);
  text.Template = await serializeProvider(templateForwarder);
  host = await startCheckoutHost();
  await host.configure(stackConfig(service, service.apiKey));
});

afterAll(async () => {
  await host?.close();
  await Promise.all([rest?.close(), graphql?.close()]);
  await service?.close();
});

let serial = 0;
beforeEach(async () => {
  serial++;
  templateId = (
    await rest.templates.create({ name: `worker-${serial}`, imageName: "img:1", isServerless: true })
  ).id;
});

/** One resource's life as Pulumi's engine keeps it: its inputs and outputs in state. */
interface Tracked {
  urn: string;
  id: string;
  inputs: Props;
  outputs: Props;
}

async function up(type: string, name: string, program: Props, on = host): Promise<Tracked> {
  const urn = dynamicUrn(type, name);
  const checked = await on.check(urn, {}, { ...program, __logicalName: name, __provider: text[type] });
  expect(checked.failures).toEqual([]);
  const created = await on.create(urn, checked.inputs);
  return { urn, id: created.id, inputs: checked.inputs, outputs: created.properties };
}

/** Pulumi's ignoreChanges on top-level keys: the new inputs keep the old inputs' values there. */
function ignoring(program: Props, old: Props, paths: readonly string[]): Props {
  const out = { ...program };
  for (const path of paths) {
    if (old[path] === undefined) delete out[path];
    else out[path] = old[path];
  }
  return out;
}

/** A later `up` of `program` (ignoreChanges applied first): check, diff and, when it changes, update. */
async function upAgain(
  resource: Tracked,
  name: string,
  program: Props,
  ignore: readonly string[] = [],
  on = host,
) {
  const type = resource.urn.split(":").at(-3) ?? "";
  const news = ignoring({ ...program, __logicalName: name, __provider: text[type] }, resource.inputs, ignore);
  const checked = await on.check(resource.urn, resource.inputs, news);
  if (checked.failures.length > 0) return { failures: checked.failures };
  const diff = await on.diff(resource.urn, resource.id, resource.outputs, checked.inputs, resource.inputs);
  if (diff.changes === "none") return { failures: [], diff };
  const updated = await on.update(
    resource.urn,
    resource.id,
    resource.outputs,
    checked.inputs,
    resource.inputs,
  );
  resource.inputs = checked.inputs;
  resource.outputs = updated.properties;
  return { failures: [], diff };
}

/** pulumi refresh: read, and the state takes the outputs and the inputs read returns. */
async function refresh(resource: Tracked): Promise<void> {
  const read = await host.read(resource.urn, resource.id, resource.outputs, resource.inputs);
  resource.outputs = read.properties;
  if (read.inputs) resource.inputs = read.inputs;
}

const liveGpuTypes = async (id: string) => (await rest.endpoints.get(id)).gpuTypeIds;

describe('ignoreChanges: ["gpuIds"] and GPU types set through REST (no pool describes them)', () => {
  const program = () => ({ templateId, gpuIds: "AMPERE_48", workersMax: 0, idleTimeout: 5 });

  test("an update of another field keeps the REST GPU types, and the next up has nothing to do", async () => {
    const endpoint = await up("Endpoint", "api", program());
    await rest.endpoints.update(endpoint.id, { gpuTypeIds: ["NVIDIA B200"] });

    const changed = await upAgain(endpoint, "api", { ...program(), idleTimeout: 30 }, ["gpuIds"]);
    expect(changed.failures).toEqual([]);
    expect(await rest.endpoints.get(endpoint.id)).toMatchObject({
      idleTimeout: 30,
      gpuTypeIds: ["NVIDIA B200"],
    });
    expect(endpoint.outputs).toMatchObject({ idleTimeout: 30, gpuIds: "" });
    const again = await upAgain(endpoint, "api", { ...program(), idleTimeout: 30 }, ["gpuIds"]);
    expect(again).toMatchObject({ failures: [], diff: { changes: "none" } });
    expect(await liveGpuTypes(endpoint.id)).toEqual(["NVIDIA B200"]);
  });

  test('after a refresh (which reads gpuIds ""), preview and up still pass and keep the REST GPU types', async () => {
    const endpoint = await up("Endpoint", "api2", program());
    await rest.endpoints.update(endpoint.id, { gpuTypeIds: ["NVIDIA B200", "NVIDIA H200"] });
    await refresh(endpoint);
    expect(endpoint.inputs).toHaveProperty("gpuIds", "");

    const same = await upAgain(endpoint, "api2", program(), ["gpuIds"]);
    expect(same).toMatchObject({ failures: [], diff: { changes: "none" } });
    const changed = await upAgain(endpoint, "api2", { ...program(), idleTimeout: 30 }, ["gpuIds"]);
    expect(changed.failures).toEqual([]);
    expect(await rest.endpoints.get(endpoint.id)).toMatchObject({
      idleTimeout: 30,
      gpuTypeIds: ["NVIDIA B200", "NVIDIA H200"],
    });
    await refresh(endpoint);
    expect(
      (await upAgain(endpoint, "api2", { ...program(), idleTimeout: 30 }, ["gpuIds"])).diff,
    ).toMatchObject({
      changes: "none",
    });
  });

  test('a replacement after a refresh: Pulumi re-checks the program\'s gpuIds and makes the new endpoint; "" alone is refused saying where it came from', async () => {
    const endpoint = await up("Endpoint", "api5", program());
    await rest.endpoints.update(endpoint.id, { gpuTypeIds: ["NVIDIA B200"] });
    await refresh(endpoint);
    // type QB -> LB replaces. Pulumi's step generator checks with ignoreChanges applied and the old
    // inputs, then re-checks a replacement with no olds and the program's own inputs (goal.Properties,
    // ignoreChanges not applied: pkg/resource/deploy/step_generator.go).
    const changed = { ...program(), type: "LB", __logicalName: "api5", __provider: text.Endpoint };
    const first = await host.check(
      endpoint.urn,
      endpoint.inputs,
      ignoring(changed, endpoint.inputs, ["gpuIds"]),
    );
    expect(first.failures).toEqual([]);
    const diff = await host.diff(endpoint.urn, endpoint.id, endpoint.outputs, first.inputs, endpoint.inputs);
    expect(diff.replaces).toEqual(["type"]);
    const again = await host.check(endpoint.urn, {}, changed);
    expect(again.failures).toEqual([]);
    const replacement = await host.create(endpoint.urn, again.inputs);
    expect(replacement.properties).toMatchObject({ type: "LB", gpuIds: "AMPERE_48" });
    expect(await liveGpuTypes(replacement.id)).toEqual(["NVIDIA RTX A6000", "NVIDIA A40"]);
    // An engine that re-checks with ignoreChanges applied (or a program passing another endpoint's
    // gpuIds output) gives a new endpoint "": refused, naming where "" comes from and what to do.
    const carried = await host.check(endpoint.urn, {}, ignoring(changed, endpoint.inputs, ["gpuIds"]));
    expect(carried.failures).toHaveLength(1);
    const [failure] = carried.failures;
    expect(failure?.property).toBe("gpuIds");
    expect(failure?.reason).toMatch(/^gpuIds: is empty: name at least one GPU pool \(/);
    expect(failure?.reason).toContain(
      'change those through REST gpuTypeIds. "" is what gpuIds reads from an endpoint whose GPU types were set through REST (a refresh stores it in the inputs, and ignoreChanges: ["gpuIds"] carries it over): it keeps those types in an update of that endpoint, but a new endpoint (a create, or a replacement) cannot be made from it. Set gpuIds in the program to the pools the new endpoint should have',
    );
    expect(failure?.reason).toContain("take gpuIds out of ignoreChanges for this up");
  });

  test("without ignoreChanges, refresh shows the drift and up puts the program's pools back", async () => {
    const endpoint = await up("Endpoint", "api3", program());
    await rest.endpoints.update(endpoint.id, { gpuTypeIds: ["NVIDIA B200"] });
    await refresh(endpoint);
    // "" passes check only carried over from the old inputs: a program cannot start from it.
    const fresh = await host.check(
      dynamicUrn("Endpoint", "api4"),
      {},
      {
        ...program(),
        gpuIds: "",
        __logicalName: "api4",
        __provider: text.Endpoint,
      },
    );
    expect(fresh.failures.map((f) => f.property)).toEqual(["gpuIds"]);
    const restored = await upAgain(endpoint, "api3", program());
    expect(restored).toMatchObject({ failures: [], diff: { changes: "some" } });
    expect(endpoint.outputs).toHaveProperty("gpuIds", "AMPERE_48");
    expect(await liveGpuTypes(endpoint.id)).toEqual(["NVIDIA RTX A6000", "NVIDIA A40"]);
  });
});

describe("a resource renamed in the program without aliases", () => {
  test("the create of the new URN fails NAME_TAKEN naming aliases as the fix, and the old one is untouched", async () => {
    const program = { name: `shared-${serial}`, imageName: "img:1", isServerless: true };
    const old = await up("Template", "worker", program);
    // Renamed "worker" -> "inference": Pulumi creates the new URN first and deletes the old one last.
    const renamed = dynamicUrn("Template", "inference");
    const checked = await host.check(
      renamed,
      {},
      { ...program, __logicalName: "inference", __provider: text.Template },
    );
    expect(checked.failures).toEqual([]);
    const failure = host.create(renamed, checked.inputs);
    await expect(failure).rejects.toThrow(/NAME_TAKEN|already exists/);
    const message = String(await failure.catch((error: unknown) => (error as Error).message));
    expect(message).toContain(`a template named "${program.name}" already exists (id ${old.id})`);
    expect(message).toContain('aliases: [{ name: "<its old resource name>" }]');
    expect(message).toContain(`adoptId: "${old.id}"`);
    expect(await rest.templates.get(old.id)).toMatchObject({ name: program.name });
  });
});

describe("a generated name (no name in the program) taken in the account", () => {
  test("every generation taken: NAME_TAKEN says the generated names are taken and how to free one, not to omit name", async () => {
    // Left by earlier stacks of this project and stack name whose state went without destroy.
    const program = {
      imageName: "img:1",
      isServerless: true,
      __logicalName: "orphaned",
      __provider: text.Template,
    };
    const urn = dynamicUrn("Template", "orphaned");
    const checked = await host.check(urn, {}, program);
    expect(checked.failures).toEqual([]);
    const first = String(checked.inputs.name);
    const names = [
      first,
      ...nextGenerations(
        checked.inputs,
        nameBasis(templateSpec, normalizeInputs(templateSpec, checked.inputs)),
      ),
    ];
    expect(names).toHaveLength(1 + MAX_GENERATION);
    const ids: string[] = [];
    for (const name of names)
      ids.push((await rest.templates.create({ name, imageName: "img:0", isServerless: true })).id);
    const failure = host.create(urn, checked.inputs);
    await expect(failure).rejects.toThrow(/is taken in the account/);
    const message = String(await failure.catch((error: unknown) => (error as Error).message));
    expect(message).toContain(
      `create template ${first}: every name runpodkit generates for this template ("${first}" and its ${MAX_GENERATION} further generations) is taken in the account (${names.map((name, i) => `"${name}" id ${ids[i]}`).join(", ")}), and template names are unique in the account.`,
    );
    expect(message).toContain(`take one over with adoptId: "${ids[0]}", or give this resource a name.`);
    // Not the advice for a name the program chose: there is none to omit, and a rename changes these names.
    expect(message).not.toContain("omit name");
    expect(message).not.toContain("aliases");
    // Freeing one name is enough: the next up creates under it.
    await rest.templates.delete(ids[3] ?? "");
    const made = await host.create(urn, checked.inputs);
    expect(made.properties.name).toBe(names[3]);
  });
});

describe('ignoreChanges on one list item ("networkVolumeIds[0]")', () => {
  test("an update that changes another item keeps the ignored item's value set elsewhere", async () => {
    const volume = async (dataCenterId: NetworkVolumeCreateInput["dataCenterId"]) =>
      (await rest.networkVolumes.create({ name: `v-${serial}-${dataCenterId}`, size: 10, dataCenterId })).id;
    const [v1, v2, v3, v4] = [
      await volume("EU-RO-1"),
      await volume("US-TX-3"),
      await volume("EU-CZ-1"),
      await volume("US-KS-2"),
    ];
    const program = (second: string) => ({ templateId, workersMax: 0, networkVolumeIds: [v1, second] });
    const endpoint = await up("Endpoint", "vols", program(v2));
    // An operator moves the first volume elsewhere; the program changes the second one.
    await rest.endpoints.update(endpoint.id, { networkVolumeIds: [v3, v2] });
    // What Pulumi's engine passes for ignoreChanges: ["networkVolumeIds[0]"]: item 0 of the old inputs.
    const news = program(v4);
    news.networkVolumeIds[0] = (endpoint.inputs.networkVolumeIds as string[])[0] ?? "";
    const changed = await upAgain(endpoint, "vols", news);
    expect(changed.failures).toEqual([]);
    expect((await rest.endpoints.get(endpoint.id)).networkVolumeIds).toEqual([v3, v4]);
    expect((await upAgain(endpoint, "vols", news)).diff).toMatchObject({ changes: "none" });
  });
});

describe("an update over a change made outside Pulumi, through Pulumi's provider host", () => {
  const program = { workersMax: 3, env: { TOKEN: "t1" } };

  /** An up, a console user's change to workersMax and TOKEN (no refresh), an unchanged up, then an up over it. */
  async function overwrite(name: string, on: DynamicProviderHost) {
    const endpoint = await up("Endpoint", name, { ...program, templateId }, on);
    const live = await graphql.getEndpoint(endpoint.id);
    if (live === null) throw new Error("the endpoint just created is not found");
    await graphql.saveEndpoint({
      ...toSaveInput(recordAsDesired(live), endpoint.id),
      workersMax: 4,
      env: [{ key: "TOKEN", value: "rotated-elsewhere" }, ...live.env.filter((e) => e.key !== "TOKEN")],
    });
    const same = await upAgain(endpoint, name, { ...program, templateId }, [], on);
    expect(same).toMatchObject({ failures: [], diff: { changes: "none" } });
    await upAgain(endpoint, name, { templateId, workersMax: 5, env: { TOKEN: "t2" } }, [], on);
    expect(await graphql.getEndpoint(endpoint.id)).toMatchObject({
      workersMax: 5,
      env: expect.arrayContaining([{ key: "TOKEN", value: "t2" }]),
    });
    return `update endpoint ${String(endpoint.outputs.name)} (resource Endpoint "${name}"): overwrote what was changed outside Pulumi since the last up or refresh: workersMax (4 there, now 5), env.TOKEN. The service keeps no versions, so the program's value wins; run pulumi refresh (or up --refresh) first to see such changes in the preview.`;
  }

  test("without an engine to log to, the host prints the warning naming the field the update overwrote; an unchanged up reaches no update", async () => {
    const before = host.stderr.length;
    const warning = await overwrite("overwritten", host);
    const printed = host.stderr.slice(before);
    expect(printed).toContain(`warning: ${warning}`);
    expect(printed).not.toContain("rotated-elsewhere");
  });

  test("with the CLI's engine address, the warning goes through the engine's Log RPC as a warning, not to the host's output", async () => {
    // Pulumi's CLI shows a dynamic provider's output as info (severity info#err in --json), and on
    // Windows only with --debug (pkg/.../plugin.go isDynamicPluginBinary); a Log RPC shows as a warning.
    const engine = await startEngineLog();
    const logged = await startCheckoutHost({ engineAddress: engine.address });
    try {
      await logged.configure(stackConfig(service, service.apiKey));
      const warning = await overwrite("overwrittenlogged", logged);
      expect(engine.entries).toEqual([{ severity: "warning", urn: "", message: warning, ephemeral: false }]);
      expect(logged.stderr).not.toContain("overwrote");
    } finally {
      await logged.close();
      await engine.close();
    }
  });

  test("outside Pulumi's provider host, or given no engine (port 0, as the test engine starts it), there is no engine log to call", () => {
    const script = "/p/node_modules/@pulumi/pulumi/cmd/dynamic-provider/index.js";
    expect(hostEngineLog({ filename: script }, ["node", script, "127.0.0.1:0"])).toBeUndefined();
    expect(hostEngineLog({ filename: script }, ["node", script])).toBeUndefined();
    expect(
      hostEngineLog({ filename: "/p/program.js" }, ["node", "/p/program.js", "127.0.0.1:5000"]),
    ).toBeUndefined();
    expect(hostEngineLog(undefined, ["node"])).toBeUndefined();
    expect(hostEngineLog({ filename: script }, ["node", script, "127.0.0.1:5000"])).toBeDefined();
  });
});
