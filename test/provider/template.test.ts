import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { inputFields } from "../../provider/check";
import { createTemplateProvider, templateSpec } from "../../provider/template";
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
let provider: ReturnType<typeof createTemplateProvider>;

beforeEach(async () => {
  h = await startHarness({ deleteTimeoutMs: 15_000 });
  provider = createTemplateProvider(h.context);
});
afterEach(async () => {
  await h.close();
});

const fields = inputFields(templateSpec);
const TPL = generatedNameOf(templateSpec, "tpl");
const SERVERLESS_TPL = generatedNameOf(templateSpec, "tpl", { isServerless: true });

const up = (news: Record<string, unknown>) => checkAndCreate(provider, "tpl", news);

describe("Template check", () => {
  test("fills the service's defaults, so omitted and default-valued fields are the same", async () => {
    const { inputs, failures } = await provider.check({}, { __logicalName: "tpl", imageName: "img:1" });
    expect(failures).toEqual([]);
    expect(inputs).toMatchObject({
      name: TPL,
      category: "NVIDIA",
      isServerless: false,
      containerDiskInGb: 50,
      volumeInGb: 20,
      volumeMountPath: "/workspace",
      ports: ["8888/http", "22/tcp"],
      env: {},
      containerRegistryAuthId: null,
    });
  });

  test("rejects bad values by property before any call", async () => {
    const { failures } = await provider.check(
      {},
      { name: "", imageName: "img:1", category: "TPU", ports: ["http"], containerDiskInGb: -1 },
    );
    expect(failures.map((f) => f.property).sort()).toEqual([
      "category",
      "containerDiskInGb",
      "name",
      "ports.0",
    ]);
    const noImage = await provider.check({}, { __logicalName: "t" });
    expect(noImage.failures).toEqual([
      { property: "imageName", reason: expect.stringMatching(/^imageName: /) as unknown as string },
    ]);
    expect(h.apiRequests()).toBe(0);
  });

  test("tolerates unknowns nested in env and in whole fields", async () => {
    const { failures } = await provider.check(
      {},
      { __logicalName: "t", imageName: UNKNOWN, env: { TOKEN: UNKNOWN }, ports: UNKNOWN },
    );
    expect(failures).toEqual([]);
  });
});

describe("Template lifecycle", () => {
  test("create, then a second up with the same program changes nothing", async () => {
    const created = await up({ imageName: "img:1", isServerless: true, env: { A: "1" } });
    expectPlainJson(created.outs);
    expect(created.outs).toMatchObject({
      name: SERVERLESS_TPL,
      imageName: "img:1",
      isServerless: true,
      env: { A: "1" },
    });
    const next = await provider.check(inputsOf(created.outs, fields), {
      __logicalName: "tpl",
      imageName: "img:1",
      isServerless: true,
      env: { A: "1" },
      containerDiskInGb: 50, // explicit default: still no change
    });
    expect((await provider.diff(created.id, created.outs, next.inputs)).changes).toBe(false);
  });

  test("update sends the whole configuration, so drift in other fields is put right too", async () => {
    const created = await up({ imageName: "img:1", readme: "hello" });
    await h.rest.templates.update(created.id, { volumeInGb: 99 }); // drift made elsewhere
    const news = (
      await provider.check(created.inputs, { __logicalName: "tpl", imageName: "img:2", readme: "hello" })
    ).inputs;
    const updated = await provider.update(created.id, created.outs, news);
    expect(updated.outs).toMatchObject({ imageName: "img:2", volumeInGb: 20, readme: "hello" });
    expect(await h.rest.templates.get(created.id)).toMatchObject({ imageName: "img:2", volumeInGb: 20 });
  });

  test("category and isServerless replace, created before the old one is deleted, named or not", async () => {
    const named = await up({ name: "fixed", imageName: "img:1" });
    const changed = (
      await provider.check(named.inputs, { name: "fixed", imageName: "img:1", category: "AMD" })
    ).inputs;
    expect(await provider.diff(named.id, named.outs, changed)).toEqual({
      changes: true,
      replaces: ["category"],
      deleteBeforeReplace: false,
    });
    const auto = await up({ imageName: "img:1" });
    const serverless = (
      await provider.check(auto.inputs, { __logicalName: "tpl", imageName: "img:1", isServerless: true })
    ).inputs;
    expect(await provider.diff(auto.id, auto.outs, serverless)).toEqual({
      changes: true,
      replaces: ["isServerless"],
      deleteBeforeReplace: false,
    });
  });

  test("an explicitly named template in use is replaced without downtime (the engine's steps, in order)", async () => {
    const program = { name: "worker", imageName: "img:1", isServerless: true };
    const old = await up(program);
    const endpoint = await h.rest.endpoints.create({ templateId: old.id, workersMax: 2 });
    // check with olds, then diff: a replacement under the same name, old one not deleted first.
    const news = { ...program, category: "AMD" };
    const checked = (await provider.check(old.inputs, news)).inputs;
    const diff = await provider.diff(old.id, old.outs, checked);
    expect(diff).toMatchObject({ replaces: ["category"], deleteBeforeReplace: false });
    // The engine re-checks the replacement without olds and creates it: the old one moves aside.
    const replacement = await provider.create((await provider.check({}, news)).inputs);
    expect(replacement.outs).toMatchObject({ name: "worker", category: "AMD" });
    expect(await h.rest.templates.get(old.id)).toMatchObject({ name: `worker-replaced-${old.id}` });
    // Meanwhile the endpoint still runs the old template; the engine then updates it to the new id.
    expect(await h.rest.endpoints.get(endpoint.id)).toMatchObject({ templateId: old.id });
    await h.rest.endpoints.update(endpoint.id, { templateId: replacement.id });
    // Last, the old one is deleted, at once: nothing uses it any more.
    await provider.delete(old.id, old.outs);
    expect(h.pause.slept).toEqual([]);
    expect((await h.rest.templates.list()).map((t) => t.name)).toEqual(["worker"]);
  });

  test("a name held by an unrelated template is never taken over: NAME_TAKEN with the fix", async () => {
    const stranger = await h.rest.templates.create({ name: "worker", imageName: "x:1" });
    // A forced replacement (no diff announced it) under a taken name, or a plain create: same answer.
    const failure = up({ name: "worker", imageName: "img:1" });
    await expect(failure).rejects.toMatchObject({ code: "NAME_TAKEN", field: "name" });
    await expect(failure).rejects.toThrow(
      new RegExp(
        `named "worker" already exists \\(id ${stranger.id}\\).*adoptId: "${stranger.id}".*deleteBeforeReplace`,
      ),
    );
    expect(await h.rest.templates.get(stranger.id)).toMatchObject({ name: "worker", imageName: "x:1" });
  });

  test("a generated name already taken (a forced replacement): the next generation is used, and kept", async () => {
    const first = TPL;
    await h.rest.templates.create({ name: first, imageName: "x:1" }); // e.g. the resource being replaced
    const created = await up({ imageName: "img:1" });
    expect(created.outs.name).not.toBe(first);
    expect(String(created.outs.name)).toMatch(/^tpl-[0-9a-f]{7}$/);
    // The inputs still propose the first name; the name in the outputs is this resource's too: no diff.
    const next = await provider.check(created.inputs, { __logicalName: "tpl", imageName: "img:1" });
    expect(next.inputs.name).toBe(first);
    expect(await provider.diff(created.id, created.outs, next.inputs)).toMatchObject({ changes: false });
    const updated = await provider.update(created.id, created.outs, { ...next.inputs, readme: "r" });
    expect(updated.outs).toMatchObject({ name: created.outs.name, readme: "r" });
  });

  test("delete of a template an endpoint keeps using fails at the first refusal, naming it and the fix", async () => {
    const created = await up({ name: "worker", imageName: "img:1", isServerless: true });
    const endpoint = await h.graphql.saveEndpoint({
      name: "api",
      templateId: created.id,
      gpuIds: "AMPERE_16",
    });
    const failure = provider.delete(created.id, created.outs);
    await expect(failure).rejects.toMatchObject({ code: "IN_USE", operation: "delete template worker" });
    await expect(failure).rejects.toThrow(
      new RegExp(`still used by endpoint api \\(id ${endpoint.id}\\).*remove that option`),
    );
    expect(h.pause.slept).toEqual([]);
    expect(await h.rest.templates.get(created.id)).toMatchObject({ name: "worker" });
  });

  test("read returns the current record, not the old inputs; blank id when gone", async () => {
    const created = await up({ imageName: "img:1", env: { A: "1" } });
    await h.rest.templates.update(created.id, { imageName: "img:hotfix", env: { A: "2", B: "3" } });
    const read = await provider.read(created.id, created.outs);
    expect(read.props).toMatchObject({ imageName: "img:hotfix", env: { A: "2", B: "3" } });
    expectPlainJson(read.props);
    await h.rest.templates.delete(created.id);
    expect((await provider.read(created.id, read.props)).id).toBe("");
    await expect(provider.delete(created.id, read.props)).resolves.toBeUndefined();
  });

  test("delete waits while an endpoint uses the template, then deletes it", async () => {
    const created = await up({ imageName: "img:1", isServerless: true });
    const endpoint = await h.rest.endpoints.create({ templateId: created.id, workersMax: 0 });
    h.pause.onSleep = async () => {
      if (h.pause.slept.length === 3) await h.rest.endpoints.delete(endpoint.id);
    };
    await provider.delete(created.id, created.outs);
    expect(h.pause.slept).toEqual([1000, 2000, 4000]);
    await expect(h.rest.templates.get(created.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  test("a template still in use past the bound: TIMEOUT naming the bound", async () => {
    const created = await up({ imageName: "img:1", isServerless: true });
    await h.rest.endpoints.create({ templateId: created.id, workersMax: 0 });
    await expect(provider.delete(created.id, created.outs)).rejects.toMatchObject({ code: "TIMEOUT" });
    await expect(provider.delete(created.id, created.outs)).rejects.toThrow(/bound of 15s/);
  });

  test("customTimeouts.delete (recorded from the resource option) bounds the wait instead", async () => {
    const checked = await provider.check(
      {},
      { __logicalName: "tpl", imageName: "img:1", isServerless: true, __customTimeouts: { delete: "3s" } },
    );
    const created = await provider.create(checked.inputs);
    expect(created.outs.__customTimeouts).toEqual({ delete: "3s" });
    await h.rest.endpoints.create({ templateId: created.id, workersMax: 0 }); // on its way out
    await expect(provider.delete(created.id, created.outs)).rejects.toThrow(/bound of 3s/);
    expect(h.pause.slept).toEqual([1000, 2000]);
  });

  test("adoption: takes over an existing template and applies the desired configuration", async () => {
    const existing = await h.rest.templates.create({ name: "legacy", imageName: "old:1" });
    const adopted = await up({ adoptId: existing.id, imageName: "new:2" });
    expect(adopted.id).toBe(existing.id);
    expect(adopted.outs).toMatchObject({ name: "legacy", imageName: "new:2", adoptId: existing.id });
    expect((await h.rest.templates.list()).map((t) => t.id)).toEqual([existing.id]);
  });

  test("a name taken in the account fails create by code, with no key in it", async () => {
    await h.rest.templates.create({ name: "taken", imageName: "x:1" });
    const failure = up({ name: "taken", imageName: "img:1" });
    await expect(failure).rejects.toMatchObject({ code: "NAME_TAKEN", operation: "create template taken" });
    await expect(failure).rejects.not.toThrow(h.settings.apiKey);
  });
});
