import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { inputFields } from "../../provider/check";
import { createNetworkVolumeProvider, networkVolumeSpec, volumeOutputs } from "../../provider/network-volume";
import { UNKNOWN } from "../../provider/unknowns";
import { GqlNetworkVolume, isNextGenStorageType } from "../../sdk/schemas/network-volume";
import {
  checkAndCreate,
  expectPlainJson,
  generatedNameOf,
  type Harness,
  inputsOf,
  startHarness,
} from "./support";

let h: Harness;
let provider: ReturnType<typeof createNetworkVolumeProvider>;

beforeEach(async () => {
  h = await startHarness({ deleteTimeoutMs: 20_000 });
  provider = createNetworkVolumeProvider(h.context);
});
afterEach(async () => {
  await h.close();
});

const fields = inputFields(networkVolumeSpec);
const DATA = generatedNameOf(networkVolumeSpec, "data", { dataCenterId: "EU-RO-1" });
const VOL = generatedNameOf(networkVolumeSpec, "vol", { dataCenterId: "EU-RO-1" });

const up = (news: Record<string, unknown>) => checkAndCreate(provider, "vol", news);

describe("NetworkVolume check", () => {
  test("auto-names and keeps the generated name on later checks", async () => {
    const first = await provider.check({}, { __logicalName: "data", size: 10, dataCenterId: "EU-RO-1" });
    expect(first.inputs.name).toBe(DATA);
    const again = await provider.check(first.inputs, {
      __logicalName: "data",
      size: 20,
      dataCenterId: "EU-RO-1",
    });
    expect(again.inputs).toMatchObject({ name: DATA, size: 20, __autoNamed: true });
  });

  test("rejects what the service would, naming each property, without calling it", async () => {
    const { failures } = await provider.check(
      {},
      { __logicalName: "v", size: 5000, dataCenterId: "MARS-1", colour: "red" },
    );
    expect(failures.map((f) => f.property).sort()).toEqual(["colour", "dataCenterId", "size"]);
    const missing = await provider.check({}, { __logicalName: "v" });
    expect(missing.failures.map((f) => f.property).sort()).toEqual(["dataCenterId", "size"]);
    expect(h.apiRequests()).toBe(0);
  });

  test("a shrinking volume is refused by comparing olds and news", async () => {
    const olds = { name: "v", size: 100, dataCenterId: "EU-RO-1", __autoNamed: false };
    const { failures } = await provider.check(olds, { name: "v", size: 50, dataCenterId: "EU-RO-1" });
    expect(failures).toEqual([
      { property: "size", reason: "size: a network volume can only grow (from 100 GB, not to 50 GB)" },
    ]);
  });

  test("tolerates unknown values during preview", async () => {
    const { failures, inputs } = await provider.check(
      {},
      { __logicalName: "v", size: UNKNOWN, dataCenterId: UNKNOWN },
    );
    expect(failures).toEqual([]);
    expect(inputs.size).toBe(UNKNOWN);
  });
});

describe("NetworkVolume lifecycle", () => {
  test("create returns the whole record as plain JSON; a second up changes nothing", async () => {
    const created = await up({ size: 10, dataCenterId: "EU-RO-1" });
    expect(created.outs).toMatchObject({
      name: VOL,
      size: 10,
      dataCenterId: "EU-RO-1",
      adoptId: null,
    });
    expectPlainJson(created.outs);
    expect(await h.rest.networkVolumes.get(created.id)).toMatchObject({ name: VOL, size: 10 });

    const next = await provider.check(inputsOf(created.outs, fields), {
      __logicalName: "vol",
      size: 10,
      dataCenterId: "EU-RO-1",
    });
    expect(await provider.diff(created.id, created.outs, next.inputs)).toEqual({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
  });

  test("growing and renaming update in place; a new data center replaces", async () => {
    const created = await up({ name: "v1", size: 10, dataCenterId: "EU-RO-1" });
    const grown = (await provider.check(created.inputs, { name: "v2", size: 20, dataCenterId: "EU-RO-1" }))
      .inputs;
    expect(await provider.diff(created.id, created.outs, grown)).toMatchObject({
      changes: true,
      replaces: [],
    });
    const updated = await provider.update(created.id, created.outs, grown);
    expect(updated.outs).toMatchObject({ name: "v2", size: 20 });
    expect(await h.rest.networkVolumes.get(created.id)).toMatchObject({ name: "v2", size: 20 });

    const moved = (await provider.check(updated.outs, { name: "v2", size: 20, dataCenterId: "US-TX-3" }))
      .inputs;
    expect(await provider.diff(created.id, updated.outs, moved)).toEqual({
      changes: true,
      replaces: ["dataCenterId"],
      deleteBeforeReplace: false,
    });
  });

  test("read reports drift in every field and a blank id once the volume is gone", async () => {
    const created = await up({ size: 10, dataCenterId: "EU-RO-1" });
    await h.rest.networkVolumes.update(created.id, { name: "renamed-elsewhere", size: 40 });
    const read = await provider.read(created.id, created.outs);
    expect(read.id).toBe(created.id);
    expect(read.props).toMatchObject({ name: "renamed-elsewhere", size: 40 });
    // The refreshed inputs keep the generated name, so the next up renames it back.
    expect(read.inputs).toMatchObject({ name: VOL, size: 40, __autoNamed: true });
    const next = await provider.check(read.inputs ?? {}, {
      __logicalName: "vol",
      size: 40,
      dataCenterId: "EU-RO-1",
    });
    expect(await provider.diff(created.id, read.props, next.inputs)).toMatchObject({
      changes: true,
      replaces: [],
    });
    const restored = await provider.update(created.id, read.props, next.inputs);
    expect(restored.outs).toMatchObject({ name: VOL, size: 40 });

    await h.rest.networkVolumes.delete(created.id);
    expect(await provider.read(created.id, read.props)).toEqual({ id: "", props: {} });
  });

  test("delete of a volume already gone succeeds", async () => {
    const created = await up({ size: 10, dataCenterId: "EU-RO-1" });
    await h.rest.networkVolumes.delete(created.id);
    await expect(provider.delete(created.id, created.outs)).resolves.toBeUndefined();
  });

  test("delete waits while an endpoint still uses the volume, within the bound", async () => {
    const created = await up({ size: 10, dataCenterId: "EU-RO-1" });
    const template = await h.rest.templates.create({ name: "t", imageName: "img:1", isServerless: true });
    const endpoint = await h.rest.endpoints.create({
      templateId: template.id,
      networkVolumeId: created.id,
      workersMax: 0,
    });
    // Meanwhile (during the provider's second wait) the endpoint goes away.
    h.pause.onSleep = async () => {
      if (h.pause.slept.length === 2) await h.rest.endpoints.delete(endpoint.id);
    };
    await provider.delete(created.id, created.outs);
    expect(h.pause.slept).toEqual([1000, 2000]);
    await expect(h.rest.networkVolumes.get(created.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  test("a refusal that outlasts the bound fails with the bound in the message", async () => {
    const created = await up({ size: 10, dataCenterId: "EU-RO-1" });
    const template = await h.rest.templates.create({ name: "t", imageName: "img:1", isServerless: true });
    await h.rest.endpoints.create({ templateId: template.id, networkVolumeId: created.id, workersMax: 0 });
    await expect(provider.delete(created.id, created.outs)).rejects.toThrow(/within the bound of 20s/);
    expect(h.pause.slept.reduce((a, b) => a + b, 0)).toBe(20_000);
  });

  test("adoption takes over an existing volume, keeps its name and applies the size", async () => {
    const existing = await h.rest.networkVolumes.create({
      name: "legacy",
      size: 10,
      dataCenterId: "EU-RO-1",
    });
    const adopted = await up({ adoptId: existing.id, size: 30, dataCenterId: "EU-RO-1" });
    expect(adopted.id).toBe(existing.id);
    expect(adopted.outs).toMatchObject({ name: "legacy", size: 30, adoptId: existing.id });
    expect(await h.rest.networkVolumes.get(existing.id)).toMatchObject({ name: "legacy", size: 30 });
    expect((await h.rest.networkVolumes.list()).length).toBe(1);
  });

  test("adoption of a missing id or another data center fails by field", async () => {
    await expect(up({ adoptId: "nosuchvol1", size: 10, dataCenterId: "EU-RO-1" })).rejects.toMatchObject({
      code: "NOT_FOUND",
      field: "adoptId",
    });
    const existing = await h.rest.networkVolumes.create({ name: "x", size: 10, dataCenterId: "EU-RO-1" });
    await expect(up({ adoptId: existing.id, size: 10, dataCenterId: "US-TX-3" })).rejects.toMatchObject({
      code: "VALIDATION",
      field: "dataCenterId",
    });
  });

  test("Resource.get: read by id alone returns the whole record", async () => {
    const existing = await h.rest.networkVolumes.create({ name: "seen", size: 7, dataCenterId: "EU-RO-1" });
    const read = await provider.read(existing.id, {});
    expect(read.props).toMatchObject({ name: "seen", size: 7, dataCenterId: "EU-RO-1" });
    expectPlainJson(read.props);
  });
});

describe("NetworkVolume storage (isNextGenStorage, storageType)", () => {
  /** Records which create the provider uses. */
  const countCreates = () => {
    const calls: string[] = [];
    h.intercept((api) => ({
      ...api,
      networkVolumes: {
        ...api.networkVolumes,
        create: (input) => {
          calls.push("rest");
          return api.networkVolumes.create(input);
        },
        createGraphql: (input) => {
          calls.push(`graphql isNextGenStorage=${String(input.isNextGenStorage)}`);
          return api.networkVolumes.createGraphql(input);
        },
      },
    }));
    return calls;
  };
  const storageOf = async (id: string) =>
    (await h.graphql.listNetworkVolumes()).find((v) => v.id === id)?.storageType;

  test("a create whose storageType read fails deletes the new volume again and names the step", async () => {
    h.intercept((api) => ({
      ...api,
      networkVolumes: {
        ...api.networkVolumes,
        listGraphql: async () => {
          throw new Error("graphql unreachable");
        },
      },
    }));
    await expect(up({ name: "half", size: 10, dataCenterId: "EU-RO-1" })).rejects.toMatchObject({
      field: "isNextGenStorage",
      message: expect.stringMatching(
        /^create network volume half: isNextGenStorage: the network volume was created \(id \w+\) but this step failed: graphql unreachable; the network volume was deleted again, so nothing is left behind\. Its storage type is read over GraphQL/,
      ),
    });
    expect(await h.rest.networkVolumes.list()).toEqual([]);
  });

  test("check defaults isNextGenStorage to false and refuses a non-boolean by name", async () => {
    const { inputs } = await provider.check({}, { __logicalName: "v", size: 1, dataCenterId: "EU-RO-1" });
    expect(inputs.isNextGenStorage).toBe(false);
    const bad = await provider.check(
      {},
      { __logicalName: "v", size: 1, dataCenterId: "EU-RO-1", isNextGenStorage: 1 },
    );
    expect(bad.failures.map((f) => f.property)).toEqual(["isNextGenStorage"]);
  });

  test("a next-gen volume is created through GraphQL; storageType is an output; a second up changes nothing", async () => {
    const calls = countCreates();
    const created = await up({ size: 10, dataCenterId: "EU-RO-1", isNextGenStorage: true });
    expect(calls).toEqual(["graphql isNextGenStorage=true"]);
    expectPlainJson(created.outs);
    expect(created.outs).toMatchObject({ size: 10, isNextGenStorage: true, storageType: "VAST" });
    expect(await storageOf(created.id)).toBe("VAST");
    expect(await h.rest.networkVolumes.get(created.id)).toEqual({
      id: created.id,
      name: created.outs.name,
      size: 10,
      dataCenterId: "EU-RO-1",
    });
    const next = await provider.check(inputsOf(created.outs, fields), {
      __logicalName: "vol",
      size: 10,
      dataCenterId: "EU-RO-1",
      isNextGenStorage: true,
    });
    expect(await provider.diff(created.id, created.outs, next.inputs)).toEqual({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
  });

  test("a standard volume keeps the REST create and reads its storage type", async () => {
    const calls = countCreates();
    const created = await up({ size: 10, dataCenterId: "EU-RO-1" });
    expect(calls).toEqual(["rest"]);
    expect(created.outs).toMatchObject({ isNextGenStorage: false, storageType: "MOOSE_FS" });
  });

  test("changing isNextGenStorage replaces the volume; growing it does not", async () => {
    const created = await up({ name: "data", size: 10, dataCenterId: "EU-RO-1" });
    const nextGen = (
      await provider.check(created.inputs, {
        name: "data",
        size: 10,
        dataCenterId: "EU-RO-1",
        isNextGenStorage: true,
      })
    ).inputs;
    expect(await provider.diff(created.id, created.outs, nextGen)).toEqual({
      changes: true,
      replaces: ["isNextGenStorage"],
      deleteBeforeReplace: false,
    });
    const grown = (await provider.check(created.inputs, { name: "data", size: 20, dataCenterId: "EU-RO-1" }))
      .inputs;
    expect(await provider.diff(created.id, created.outs, grown)).toEqual({
      changes: true,
      replaces: [],
      deleteBeforeReplace: false,
    });
    const updated = await provider.update(created.id, created.outs, grown);
    expect(updated.outs).toMatchObject({ size: 20, isNextGenStorage: false, storageType: "MOOSE_FS" });
  });

  test("read brings storageType back and reads isNextGenStorage from it (drift against the program)", async () => {
    const made = await h.graphql.createNetworkVolume({
      name: "made-elsewhere",
      size: 5,
      dataCenterId: "EU-RO-1",
      isNextGenStorage: true,
    });
    // State that claims standard storage (e.g. written before the field existed).
    const state = { name: "made-elsewhere", size: 5, dataCenterId: "EU-RO-1", isNextGenStorage: false };
    const read = await provider.read(made.id, state);
    expect(read.props).toMatchObject({ isNextGenStorage: true, storageType: "VAST" });
    expect(read.inputs).toMatchObject({ isNextGenStorage: true });
    const next = await provider.check(read.inputs ?? {}, state);
    expect(await provider.diff(made.id, read.props, next.inputs)).toMatchObject({
      changes: true,
      replaces: ["isNextGenStorage"],
    });
  });

  test("state written before isNextGenStorage existed: the same program shows no change, refresh fills it in", async () => {
    const created = await up({ size: 10, dataCenterId: "EU-RO-1" });
    const { isNextGenStorage: _n, storageType: _s, ...oldOuts } = created.outs;
    const next = await provider.check(inputsOf(oldOuts, fields), {
      __logicalName: "vol",
      size: 10,
      dataCenterId: "EU-RO-1",
    });
    expect(await provider.diff(created.id, oldOuts, next.inputs)).toEqual({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
    const read = await provider.read(created.id, oldOuts);
    expect(read.props).toMatchObject({ isNextGenStorage: false, storageType: "MOOSE_FS" });
  });

  test("adoption keeps the storage it finds, and refuses to convert it, naming isNextGenStorage", async () => {
    const nextGen = await h.graphql.createNetworkVolume({
      name: "ng",
      size: 5,
      dataCenterId: "EU-RO-1",
      isNextGenStorage: true,
    });
    const adopted = await up({
      adoptId: nextGen.id,
      size: 6,
      dataCenterId: "EU-RO-1",
      isNextGenStorage: true,
    });
    expect(adopted.outs).toMatchObject({ name: "ng", size: 6, isNextGenStorage: true, storageType: "VAST" });
    const refused = up({ adoptId: nextGen.id, size: 6, dataCenterId: "EU-RO-1" });
    await expect(refused).rejects.toMatchObject({ code: "VALIDATION", field: "isNextGenStorage" });
    await expect(refused).rejects.toThrow(/storage cannot be converted \(set isNextGenStorage to true\)/);
    expect(await storageOf(nextGen.id)).toBe("VAST");
  });
});

describe("storage types the provider does not know", () => {
  const record = { id: "nv1", name: "v", size: 10, dataCenterId: "US-TX-3" };

  test("read as unknown: the last known isNextGenStorage stands, so no change and no replacement shows", () => {
    expect(isNextGenStorageType("VAST")).toBe(true);
    expect(isNextGenStorageType("MOOSE_FS")).toBe(false);
    expect(isNextGenStorageType("PURE")).toBeNull();
    expect(isNextGenStorageType("SOME_FUTURE_FS")).toBeNull();
    expect(volumeOutputs({ ...record, storageType: "DDN" }, { isNextGenStorage: true })).toMatchObject({
      isNextGenStorage: true,
      storageType: "DDN",
    });
    expect(
      volumeOutputs({ ...record, storageType: "DDN" }, { isNextGenStorage: false }).isNextGenStorage,
    ).toBe(false);
  });

  test("a GraphQL volume with a storage type added later still parses, its type read as not reported", () => {
    const parsed = GqlNetworkVolume.parse({ ...record, storageType: "SOME_FUTURE_FS" });
    expect(parsed.storageType).toBeNull();
    expect(GqlNetworkVolume.parse({ ...record, storageType: "VAST" }).storageType).toBe("VAST");
  });
});
