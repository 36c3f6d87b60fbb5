import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { inputFields } from "../../provider/check";
import { createTemplateProvider, templateSpec } from "../../provider/template";
import { UNKNOWN } from "../../provider/unknowns";
import { isPrintableName } from "../../sdk/schemas/common";
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
    const badPort = await provider.check(
      {},
      { __logicalName: "t", imageName: "i", ports: ["22/tcp", "70000/udp"] },
    );
    expect(badPort.failures).toEqual([
      { property: "ports.1", reason: 'ports.1: expected "<port>/http" or "<port>/tcp", port 1-65535' },
    ]);
    const noImage = await provider.check({}, { __logicalName: "t" });
    expect(noImage.failures).toEqual([{ property: "imageName", reason: "imageName is required" }]);
    const relative = await provider.check(
      {},
      { __logicalName: "t", imageName: "i", volumeMountPath: "workspace" },
    );
    expect(relative.failures).toEqual([
      {
        property: "volumeMountPath",
        reason:
          'volumeMountPath: must be an absolute path (starting with "/", e.g. "/workspace"), not "workspace"',
      },
    ]);
    const dotted = await provider.check(
      {},
      { __logicalName: "t", imageName: "i", volumeMountPath: "/a/../b" },
    );
    expect(dotted.failures).toEqual([
      {
        property: "volumeMountPath",
        reason: 'volumeMountPath: must not have "." or ".." parts or "//": write "/b", not "/a/../b"',
      },
    ]);
    // A property a letter or two off a known one is named with it; one far from all is not.
    const typos = await provider.check(
      {},
      { __logicalName: "t", imageName: "img:1", contanerDiskInGb: 5, zzz: 1 },
    );
    expect(typos.failures).toEqual([
      {
        property: "contanerDiskInGb",
        reason: "contanerDiskInGb is not a property of Template (did you mean containerDiskInGb?)",
      },
      { property: "zzz", reason: "zzz is not a property of Template" },
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

  test("a start command still unknown makes the other spelling unknown, not its default", async () => {
    const fromCmd = await provider.check(
      {},
      { __logicalName: "t", imageName: "img:1", dockerStartCmd: ["python", "--volume", UNKNOWN] },
    );
    expect(fromCmd.failures).toEqual([]);
    expect(fromCmd.inputs).toMatchObject({
      dockerStartCmd: ["python", "--volume", UNKNOWN],
      dockerArgs: UNKNOWN,
    });
    const fromArgs = await provider.check(
      {},
      { __logicalName: "t", imageName: "img:1", dockerArgs: UNKNOWN },
    );
    expect(fromArgs.failures).toEqual([]);
    expect(fromArgs.inputs).toMatchObject({ dockerArgs: UNKNOWN, dockerStartCmd: UNKNOWN });
    // Both given: each stays as written.
    const both = await provider.check(
      {},
      { __logicalName: "t", imageName: "img:1", dockerArgs: "python run", dockerStartCmd: UNKNOWN },
    );
    expect(both.inputs).toMatchObject({ dockerArgs: "python run", dockerStartCmd: UNKNOWN });
  });
});

describe("Template lifecycle", () => {
  test("a port given twice is one: no drift and no diff, also for a stack that applied it twice before", async () => {
    const program = { imageName: "img:1", ports: ["8888/http", "22/tcp", "8888/http"] };
    const created = await up(program);
    expect(created.inputs.ports).toEqual(["8888/http", "22/tcp"]);
    expect(created.outs.ports).toEqual(["8888/http", "22/tcp"]);
    const read = await provider.read(created.id, created.outs);
    expect(read.props).toMatchObject({ ports: ["8888/http", "22/tcp"] });
    const noChange = { changes: false, replaces: [], deleteBeforeReplace: false };
    const next = await provider.check(inputsOf(created.outs, fields), { __logicalName: "tpl", ...program });
    expect(await provider.diff(created.id, read.props, next.inputs)).toEqual(noChange);
    const applied = created.outs.__runpodkitApplied as Record<string, unknown>;
    const earlier = {
      ...created.outs,
      ports: program.ports,
      __runpodkitApplied: { ...applied, ports: program.ports },
    };
    const again = await provider.check(inputsOf(earlier, fields), { __logicalName: "tpl", ...program });
    expect(await provider.diff(created.id, earlier, again.inputs)).toEqual(noChange);
  });

  test('a name with surrounding spaces is applied trimmed; a stack that applied " web " before sees no diff', async () => {
    const program = { name: " web ", imageName: "img:1" };
    const created = await up(program);
    expect(created.inputs.name).toBe("web");
    expect(created.outs.name).toBe("web");
    expect((await h.rest.templates.get(created.id)).name).toBe("web");
    const noChange = { changes: false, replaces: [], deleteBeforeReplace: false };
    const applied = created.outs.__runpodkitApplied as Record<string, unknown>;
    const earlier = { ...created.outs, name: " web ", __runpodkitApplied: { ...applied, name: " web " } };
    const again = await provider.check(inputsOf(earlier, fields), { __logicalName: "tpl", ...program });
    expect(again.inputs.name).toBe("web");
    expect(await provider.diff(created.id, earlier, again.inputs)).toEqual(noChange);
    // Unicode's decomposed "é" (e and a combining accent) is applied composed, as the service stores it.
    const decomposed = await provider.check(
      {},
      { __logicalName: "tpl", name: " cafe\u0301 ", imageName: "i" },
    );
    expect(decomposed.inputs.name).toBe("caf\u00e9");
  });

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

  test("update applies what the program changed; drift elsewhere stays until a refresh shows it, then is put right", async () => {
    const created = await up({ imageName: "img:1", readme: "hello" });
    await h.rest.templates.update(created.id, { volumeInGb: 99 }); // drift made elsewhere
    const news = (
      await provider.check(created.inputs, { __logicalName: "tpl", imageName: "img:2", readme: "hello" })
    ).inputs;
    // Not a field the program changed (it may be under ignoreChanges): its live value is kept.
    const updated = await provider.update(created.id, created.outs, news);
    expect(updated.outs).toMatchObject({ imageName: "img:2", volumeInGb: 99, readme: "hello" });
    expect(await h.rest.templates.get(created.id)).toMatchObject({ imageName: "img:2", volumeInGb: 99 });
    // The next run compares with what was applied: nothing to do.
    const again = (await provider.check(news, { __logicalName: "tpl", imageName: "img:2", readme: "hello" }))
      .inputs;
    expect(await provider.diff(created.id, updated.outs, again)).toMatchObject({ changes: false });
    // A refresh shows the drift; the next up puts the program's value back.
    const read = await provider.read(created.id, updated.outs);
    const refreshed = (
      await provider.check(read.inputs ?? {}, { __logicalName: "tpl", imageName: "img:2", readme: "hello" })
    ).inputs;
    expect(await provider.diff(created.id, read.props, refreshed)).toMatchObject({ changes: true });
    const restored = await provider.update(created.id, read.props, refreshed);
    expect(await h.rest.templates.get(created.id)).toMatchObject({ imageName: "img:2", volumeInGb: 20 });
    // Without drift a refresh reads back exactly what the update left (it reports no change).
    expect((await provider.read(created.id, restored.outs)).props).toEqual(restored.outs);
  });

  test("an env key the program left as it was keeps its value set elsewhere while another key changes; a refresh shows it, the next up puts it back", async () => {
    const created = await up({ imageName: "img:1", env: { TOKEN: "t1", MODE: "a", GONE: "g" } });
    await h.rest.templates.update(created.id, { env: { TOKEN: "rotated", MODE: "a", GONE: "g" } });
    // MODE changes and GONE is removed; TOKEN is as the program last applied it (or under
    // ignoreChanges: ["env.TOKEN"], which hands over its old value).
    const program = { __logicalName: "tpl", imageName: "img:1", env: { TOKEN: "t1", MODE: "b", NEW: "n" } };
    const news = (await provider.check(created.inputs, program)).inputs;
    const updated = await provider.update(created.id, created.outs, news);
    expect((await h.rest.templates.get(created.id)).env).toEqual({ TOKEN: "rotated", MODE: "b", NEW: "n" });
    expect(updated.outs.env).toEqual({ TOKEN: "rotated", MODE: "b", NEW: "n" });
    const again = (await provider.check(news, program)).inputs;
    expect(await provider.diff(created.id, updated.outs, again)).toMatchObject({ changes: false });
    // The drift in a key the program manages is put back once a refresh has shown it.
    const read = await provider.read(created.id, updated.outs);
    const refreshed = (await provider.check(read.inputs ?? {}, program)).inputs;
    expect(await provider.diff(created.id, read.props, refreshed)).toMatchObject({ changes: true });
    await provider.update(created.id, read.props, refreshed);
    expect((await h.rest.templates.get(created.id)).env).toEqual({ TOKEN: "t1", MODE: "b", NEW: "n" });
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
    expect((await h.rest.templates.list({ includeEndpointBoundTemplates: true })).map((t) => t.name)).toEqual(
      ["worker"],
    );
  });

  test("a resource name of emoji past the bound gets a generated name of whole characters", async () => {
    // 100 rockets: 200 UTF-16 units, cut to fit the 191 bound with the suffix (a cut inside a
    // surrogate pair was refused by the service as unprintable).
    const created = await checkAndCreate(provider, "\u{1f680}".repeat(100), { imageName: "img:1" });
    const name = String(created.outs.name);
    expect(isPrintableName(name)).toBe(true);
    expect(name).toMatch(/^(\u{1f680})+-[0-9a-f]{7}$/u);
    expect((await h.rest.templates.get(created.id)).name).toBe(name);
  });

  test("a template named at the 191-character bound with emoji moves aside under whole characters", async () => {
    // 95 rockets: 190 UTF-16 units; the aside name keeps whole characters (a cut surrogate pair was
    // refused by the service as unprintable, and the replacement failed).
    const program = { name: "\u{1f680}".repeat(95), imageName: "img:1", isServerless: true };
    const old = await up(program);
    const news = { ...program, category: "AMD" };
    await provider.diff(old.id, old.outs, (await provider.check(old.inputs, news)).inputs);
    const replacement = await provider.create((await provider.check({}, news)).inputs);
    expect(replacement.outs).toMatchObject({ name: program.name, category: "AMD" });
    const aside = (await h.rest.templates.get(old.id)).name;
    expect(aside.endsWith(`-replaced-${old.id}`)).toBe(true);
    expect(aside.startsWith("\u{1f680}".repeat(10))).toBe(true);
    expect(isPrintableName(aside)).toBe(true);
    await provider.delete(old.id, old.outs);
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

  test("customTimeouts added to an existing template: an update records it (no service call), and delete honours it", async () => {
    const created = await up({ imageName: "img:1", isServerless: true });
    const before = await h.rest.templates.get(created.id);
    const timed = (
      await provider.check(created.inputs, {
        __logicalName: "tpl",
        imageName: "img:1",
        isServerless: true,
        __customTimeouts: { delete: "3s" },
      })
    ).inputs;
    expect(await provider.diff(created.id, created.outs, timed)).toEqual({
      changes: true,
      replaces: [],
      deleteBeforeReplace: false,
    });
    const updated = await provider.update(created.id, created.outs, timed);
    expect(updated.outs.__customTimeouts).toEqual({ delete: "3s" });
    expect(await h.rest.templates.get(created.id)).toEqual(before);
    expect(await provider.diff(created.id, updated.outs, timed)).toMatchObject({ changes: false });
    await h.rest.endpoints.create({ templateId: created.id, workersMax: 0 }); // on its way out
    await expect(provider.delete(created.id, updated.outs)).rejects.toThrow(/bound of 3s/);
  });

  test("adoption: takes over an existing template and applies the desired configuration", async () => {
    const existing = await h.rest.templates.create({ name: "legacy", imageName: "old:1" });
    const adopted = await up({ adoptId: existing.id, imageName: "new:2" });
    expect(adopted.id).toBe(existing.id);
    expect(adopted.outs).toMatchObject({ name: "legacy", imageName: "new:2", adoptId: existing.id });
    expect((await h.rest.templates.list({ includeEndpointBoundTemplates: true })).map((t) => t.id)).toEqual([
      existing.id,
    ]);
  });

  test("adoption refuses a category or isServerless the service cannot change, naming it, and changes nothing", async () => {
    const existing = await h.rest.templates.create({
      name: "legacy",
      imageName: "old:1",
      category: "NVIDIA",
      isServerless: true,
    });
    await expect(
      up({ adoptId: existing.id, imageName: "new:2", isServerless: true, category: "CPU" }),
    ).rejects.toMatchObject({
      code: "VALIDATION",
      field: "category",
      message: expect.stringContaining(
        `template ${existing.id} has category "NVIDIA"; the service cannot change a template's category (set category to "NVIDIA", or create a new template instead of adopting this one)`,
      ),
    });
    await expect(up({ adoptId: existing.id, imageName: "new:2" })).rejects.toMatchObject({
      code: "VALIDATION",
      field: "isServerless",
      message: expect.stringContaining(
        `template ${existing.id} has isServerless true; the service cannot change a template's isServerless (set isServerless to true,`,
      ),
    });
    // Nothing was applied: the image is the old one, and the template is the only one.
    expect(await h.rest.templates.list()).toEqual([
      expect.objectContaining({
        id: existing.id,
        imageName: "old:1",
        category: "NVIDIA",
        isServerless: true,
      }),
    ]);
    const adopted = await up({ adoptId: existing.id, imageName: "new:2", isServerless: true });
    expect(adopted.outs).toMatchObject({ category: "NVIDIA", isServerless: true, imageName: "new:2" });
  });

  test("a name taken in the account fails create by code, with no key in it", async () => {
    await h.rest.templates.create({ name: "taken", imageName: "x:1" });
    const failure = up({ name: "taken", imageName: "img:1" });
    await expect(failure).rejects.toMatchObject({ code: "NAME_TAKEN", operation: "create template taken" });
    await expect(failure).rejects.not.toThrow(h.settings.apiKey);
  });
});

describe("Template start fields (GraphQL) and dockerArgs", () => {
  /** The start fields as GraphQL reports them (REST has none). */
  const startOf = async (id: string) => {
    const view = (await h.graphql.listTemplates()).find((t) => t.id === id);
    return { startSsh: view?.startSsh, startJupyter: view?.startJupyter, startScript: view?.startScript };
  };
  /** Counts the provider's GraphQL saveTemplate calls (and can make them fail). */
  const countSaves = (fail?: Error) => {
    const saves: string[] = [];
    h.intercept((api) => ({
      ...api,
      templates: {
        ...api.templates,
        save: async (input) => {
          saves.push(String(input.id));
          if (fail) throw fail;
          return api.templates.save(input);
        },
      },
    }));
    return saves;
  };

  test("check: dockerArgs and dockerStartCmd are one command; either fills the other, in one spelling", async () => {
    const fromArgs = await provider.check(
      {},
      { __logicalName: "t", imageName: "i", dockerArgs: 'bash -c "sleep 1 && echo hi"' },
    );
    expect(fromArgs.failures).toEqual([]);
    expect(fromArgs.inputs).toMatchObject({
      dockerStartCmd: ["bash", "-c", "sleep 1 && echo hi"],
      dockerArgs: "bash -c 'sleep 1 && echo hi'",
      startSsh: false,
      startJupyter: false,
      startScript: "",
    });
    const fromCmd = await provider.check(
      {},
      { __logicalName: "t", imageName: "i", dockerStartCmd: ["python", "a b.py"] },
    );
    expect(fromCmd.inputs).toMatchObject({
      dockerStartCmd: ["python", "a b.py"],
      dockerArgs: "python 'a b.py'",
    });
    const both = await provider.check(
      {},
      { __logicalName: "t", imageName: "i", dockerArgs: "python x", dockerStartCmd: ["python", "x"] },
    );
    expect(both.failures).toEqual([]);
    expect(h.apiRequests()).toBe(0);
  });

  test("check refuses a dockerArgs that needs a shell, one that disagrees, and a too long startScript, by field", async () => {
    const shell = await provider.check(
      {},
      { __logicalName: "t", imageName: "i", dockerArgs: "cd /app && serve" },
    );
    expect(shell.failures).toEqual([
      {
        property: "dockerArgs",
        reason: expect.stringMatching(/^dockerArgs: shell operator && outside quotes/) as unknown as string,
      },
    ]);
    const disagree = await provider.check(
      {},
      { __logicalName: "t", imageName: "i", dockerArgs: "python a", dockerStartCmd: ["python", "b"] },
    );
    expect(disagree.failures).toEqual([
      {
        property: "dockerArgs",
        reason: 'dockerArgs: reads as ["python","a"] but dockerStartCmd is ["python","b"]; set one of them',
      },
    ]);
    const long = await provider.check(
      {},
      { __logicalName: "t", imageName: "i", startScript: "x".repeat(65_537), startSsh: "yes" },
    );
    expect(long.failures.map((f) => f.property).sort()).toEqual(["startScript", "startSsh"]);
    expect(long.failures.find((f) => f.property === "startScript")?.reason).toMatch(/^startScript: .*65536/);
    expect(h.apiRequests()).toBe(0);
  });

  test("create sets the start fields through saveTemplate, keeps REST-only dockerEntrypoint; a second up changes nothing", async () => {
    const saves = countSaves();
    const program = {
      imageName: "img:1",
      dockerEntrypoint: ["/bin/sh", "-c"],
      dockerArgs: "bash -c 'sleep 1 && echo hi'",
      startSsh: true,
      startScript: "echo ready",
    };
    const created = await up(program);
    expect(saves).toEqual([created.id]);
    expectPlainJson(created.outs);
    expect(created.outs).toMatchObject({
      dockerEntrypoint: ["/bin/sh", "-c"],
      dockerStartCmd: ["bash", "-c", "sleep 1 && echo hi"],
      dockerArgs: "bash -c 'sleep 1 && echo hi'",
      startSsh: true,
      startJupyter: false,
      startScript: "echo ready",
    });
    expect(await h.rest.templates.get(created.id)).toMatchObject({
      dockerEntrypoint: ["/bin/sh", "-c"],
      dockerStartCmd: ["bash", "-c", "sleep 1 && echo hi"],
    });
    expect(await startOf(created.id)).toEqual({
      startSsh: true,
      startJupyter: false,
      startScript: "echo ready",
    });
    const next = await provider.check(inputsOf(created.outs, fields), { __logicalName: "tpl", ...program });
    expect(await provider.diff(created.id, created.outs, next.inputs)).toEqual({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
  });

  test("a template without start fields is created and updated over REST only", async () => {
    const saves = countSaves();
    const created = await up({ imageName: "img:1", dockerStartCmd: ["python", "serve.py"] });
    expect(created.outs).toMatchObject({
      startSsh: false,
      startJupyter: false,
      startScript: "",
      dockerArgs: "python serve.py",
    });
    const news = (
      await provider.check(created.inputs, {
        __logicalName: "tpl",
        imageName: "img:2",
        dockerArgs: "python serve.py",
      })
    ).inputs;
    const updated = await provider.update(created.id, created.outs, news);
    expect(updated.outs).toMatchObject({ imageName: "img:2", dockerStartCmd: ["python", "serve.py"] });
    expect(saves).toEqual([]);
  });

  test("changing a start field or dockerArgs is an update in place, never a replacement", async () => {
    const created = await up({ imageName: "img:1", dockerEntrypoint: ["/entry"], startSsh: true });
    const news = (
      await provider.check(created.inputs, {
        __logicalName: "tpl",
        imageName: "img:1",
        dockerEntrypoint: ["/entry"],
        startSsh: false,
        startJupyter: true,
        startScript: "pip install x",
        dockerArgs: "python -u main.py",
      })
    ).inputs;
    const diff = await provider.diff(created.id, created.outs, news);
    expect(diff).toEqual({ changes: true, replaces: [], deleteBeforeReplace: false });
    const updated = await provider.update(created.id, created.outs, news);
    expect(updated.outs).toMatchObject({
      startSsh: false,
      startJupyter: true,
      startScript: "pip install x",
      dockerStartCmd: ["python", "-u", "main.py"],
      dockerEntrypoint: ["/entry"],
    });
    expect(await startOf(created.id)).toEqual({
      startSsh: false,
      startJupyter: true,
      startScript: "pip install x",
    });
    expect(await h.rest.templates.get(created.id)).toMatchObject({
      id: created.id,
      dockerEntrypoint: ["/entry"],
      dockerStartCmd: ["python", "-u", "main.py"],
    });
  });

  test("read brings the start fields back from GraphQL, so a change made elsewhere is drift, put right by up", async () => {
    const program = { imageName: "img:1", startJupyter: true, dockerArgs: "python main.py" };
    const created = await up(program);
    // Elsewhere: saveTemplate (a full replace) turns Jupyter off and changes the command.
    const elsewhere = await h.graphql.saveTemplate({
      id: created.id,
      name: String(created.outs.name),
      imageName: "img:1",
      dockerArgs: "python other.py",
      startJupyter: false,
    });
    expect(elsewhere.startJupyter).toBe(false);
    const read = await provider.read(created.id, created.outs);
    expect(read.props).toMatchObject({
      startJupyter: false,
      dockerArgs: "python other.py",
      dockerStartCmd: ["python", "other.py"],
    });
    const next = await provider.check(read.inputs ?? {}, { __logicalName: "tpl", ...program });
    const diff = await provider.diff(created.id, read.props, next.inputs);
    expect(diff).toEqual({ changes: true, replaces: [], deleteBeforeReplace: false });
    const restored = await provider.update(created.id, read.props, next.inputs);
    expect(restored.outs).toMatchObject({ startJupyter: true, dockerStartCmd: ["python", "main.py"] });
    expect(await startOf(created.id)).toMatchObject({ startJupyter: true });
  });

  test("adoption reads the existing start fields and applies the desired ones", async () => {
    const existing = await h.graphql.saveTemplate({
      name: "legacy",
      imageName: "old:1",
      startSsh: true,
      startScript: "old",
    });
    const adopted = await up({ adoptId: existing.id, imageName: "new:2", startScript: "new" });
    expect(adopted.id).toBe(existing.id);
    expect(adopted.outs).toMatchObject({
      name: "legacy",
      startSsh: false,
      startScript: "new",
      imageName: "new:2",
    });
    expect(await startOf(existing.id)).toEqual({ startSsh: false, startJupyter: false, startScript: "new" });
  });

  test("state written before these fields existed: the same program shows no change", async () => {
    const program = { imageName: "img:1", dockerStartCmd: ["python", "main.py"] };
    const created = await up(program);
    const NEW = ["dockerArgs", "startSsh", "startJupyter", "startScript"];
    const oldOuts = Object.fromEntries(Object.entries(created.outs).filter(([k]) => !NEW.includes(k)));
    expect(Object.keys(oldOuts)).not.toContain("dockerArgs");
    const next = await provider.check(inputsOf(oldOuts, fields), { __logicalName: "tpl", ...program });
    expect(await provider.diff(created.id, oldOuts, next.inputs)).toEqual({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
  });

  test("a create whose saveTemplate fails deletes the new template again and reports the failure", async () => {
    countSaves(new Error("saveTemplate refused"));
    await expect(up({ name: "half", imageName: "img:1", startSsh: true })).rejects.toMatchObject({
      field: "startSsh",
      message: expect.stringMatching(
        /^create template half: startSsh: the template was created \(id \w+\) but this step failed: saveTemplate refused; the template was deleted again, so nothing is left behind\. .*or leave them at their defaults\.$/,
      ),
    });
    expect((await h.rest.templates.list({ includeEndpointBoundTemplates: true })).map((t) => t.name)).toEqual(
      [],
    );
  });
});
