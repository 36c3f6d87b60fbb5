import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { inputFields } from "../../provider/check";
import { createManagementApi } from "../../provider/clients";
import { CREATE_MARK } from "../../provider/endpoint";
import { createPodProvider, podSpec } from "../../provider/pod";
import { createTemplateProvider } from "../../provider/template";
import { UNKNOWN } from "../../provider/unknowns";
import { startScriptedServer } from "../sdk/scripted-server";
import { checkAndCreate, expectPlainJson, type Harness, inputsOf, startHarness } from "./support";

let h: Harness;
let provider: ReturnType<typeof createPodProvider>;

beforeEach(async () => {
  h = await startHarness({ deleteTimeoutMs: 20_000 });
  provider = createPodProvider(h.context);
});
afterEach(async () => {
  await h.close();
});

const fields = inputFields(podSpec);
const GPU_POD = { imageName: "runpod/pytorch:2.4", gpuTypeIds: ["NVIDIA GeForce RTX 4090"], gpuCount: 1 };
const up = (news: Record<string, unknown>) => checkAndCreate(provider, "box", news);
/** The mark a create of a generated name leaves in the pod's env (outside the outputs). */
const MARK = { [CREATE_MARK]: expect.stringMatching(/^[0-9a-f-]{36}$/) };

describe("Pod check", () => {
  test("names each bad property without calling the service; unknowns pass in preview", async () => {
    const { failures } = await provider.check(
      {},
      { __logicalName: "p", imageName: "x", gpuTypeIds: ["NO SUCH GPU"], cpuFlavorIds: ["cpu3c"], colour: 1 },
    );
    expect(failures.map((f) => f.property).sort()).toEqual(["colour", "cpuFlavorIds", "gpuTypeIds.0"]);
    const cpu = await provider.check(
      {},
      { __logicalName: "p", imageName: "x", computeType: "CPU", gpuTypeIds: ["NVIDIA GeForce RTX 4090"] },
    );
    expect(cpu.failures).toEqual([
      {
        property: "gpuTypeIds",
        reason: 'gpuTypeIds: only for GPU pods (remove it or set computeType: "GPU")',
      },
    ]);
    const shrink = await provider.check(
      { name: "p", imageName: "x", volumeInGb: 50, __autoNamed: false },
      { name: "p", imageName: "x", volumeInGb: 20 },
    );
    expect(shrink.failures.map((f) => f.property)).toEqual(["volumeInGb"]);
    const asString = await provider.check({}, { __logicalName: "p", ...GPU_POD, locked: "true" });
    expect(asString.failures).toEqual([
      {
        property: "locked",
        reason: 'locked: expected a boolean, got the string "true" (use config.requireBoolean / getBoolean)',
      },
    ]);
    const preview = await provider.check({}, { __logicalName: "p", imageName: UNKNOWN, gpuTypeIds: UNKNOWN });
    expect(preview.failures).toEqual([]);
    expect(h.apiRequests()).toBe(0);
  });
});

describe("Pod lifecycle", () => {
  test("a GPU pod: created RUNNING with its price, read whole, unchanged on a second up", async () => {
    const created = await up({ ...GPU_POD, env: { TOKEN: "{{ RUNPOD_SECRET_hf }}" }, ports: ["8888/http"] });
    expect(created.outs).toMatchObject({
      imageName: "runpod/pytorch:2.4",
      computeType: "GPU",
      desiredStatus: "RUNNING",
      env: { TOKEN: "{{ RUNPOD_SECRET_hf }}" },
      ports: ["8888/http"],
      adoptId: null,
    });
    expect(created.outs.costPerHr).toBeGreaterThan(0);
    expectPlainJson(created.outs);
    expect(await h.rest.pods.get(created.id)).toMatchObject({
      desiredStatus: "RUNNING",
      image: "runpod/pytorch:2.4",
    });
    const next = await provider.check(inputsOf(created.outs, fields), {
      __logicalName: "box",
      ...GPU_POD,
      env: { TOKEN: "{{ RUNPOD_SECRET_hf }}" },
      ports: ["8888/http"],
    });
    expect(await provider.diff(created.id, created.outs, next.inputs)).toEqual({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
  });

  test("desiredStatus stops and starts it; env updates in place; a new GPU type replaces", async () => {
    const created = await up(GPU_POD);
    const stopped = (await provider.check(created.inputs, { ...created.inputs, desiredStatus: "EXITED" }))
      .inputs;
    expect(await provider.diff(created.id, created.outs, stopped)).toMatchObject({
      changes: true,
      replaces: [],
    });
    const afterStop = await provider.update(created.id, created.outs, stopped);
    expect(afterStop.outs.desiredStatus).toBe("EXITED");
    expect((await h.rest.pods.get(created.id)).desiredStatus).toBe("EXITED");

    const running = (await provider.check(stopped, { ...stopped, desiredStatus: "RUNNING", env: { A: "1" } }))
      .inputs;
    const afterStart = await provider.update(created.id, afterStop.outs, running);
    expect(afterStart.outs).toMatchObject({ desiredStatus: "RUNNING", env: { A: "1" } });
    expect(await h.rest.pods.get(created.id)).toMatchObject({ desiredStatus: "RUNNING", env: { A: "1" } });

    const moved = (await provider.check(running, { ...running, gpuTypeIds: ["NVIDIA A100 80GB PCIe"] }))
      .inputs;
    expect(await provider.diff(created.id, afterStart.outs, moved)).toMatchObject({
      replaces: ["gpuTypeIds"],
    });
  });

  test("a CPU pod gets a CPU flavor; drift (stopped elsewhere) is read back and put right", async () => {
    const created = await up({
      imageName: "alpine:3",
      computeType: "CPU",
      cpuFlavorIds: ["cpu3c"],
      vcpuCount: 2,
    });
    expect(created.outs).toMatchObject({ computeType: "CPU", cpuFlavorId: "cpu3c", gpuTypeId: null });
    await h.rest.pods.stop(created.id);
    const read = await provider.read(created.id, created.outs);
    expect(read.props).toMatchObject({ desiredStatus: "EXITED" });
    const next = await provider.check(read.inputs ?? {}, {
      __logicalName: "box",
      imageName: "alpine:3",
      computeType: "CPU",
      cpuFlavorIds: ["cpu3c"],
      vcpuCount: 2,
    });
    expect(await provider.diff(created.id, read.props, next.inputs)).toMatchObject({
      changes: true,
      replaces: [],
    });
    await provider.update(created.id, read.props, next.inputs);
    expect((await h.rest.pods.get(created.id)).desiredStatus).toBe("RUNNING");
  });

  test("without env in the program a second up and a refresh change nothing (the service reports env {})", async () => {
    const created = await up(GPU_POD);
    expect(created.outs.env).toBeNull();
    // The service holds the create's mark; the outputs (the program manages no env) do not.
    expect((await h.rest.pods.get(created.id)).env).toEqual({ ...MARK });
    const next = await provider.check(inputsOf(created.outs, fields), { __logicalName: "box", ...GPU_POD });
    const unchanged = { changes: false, replaces: [], deleteBeforeReplace: false };
    expect(await provider.diff(created.id, created.outs, next.inputs)).toEqual(unchanged);
    const read = await provider.read(created.id, created.outs);
    expect((read.props as Record<string, unknown>).env).toBeNull();
    const afterRefresh = await provider.check(read.inputs ?? {}, { __logicalName: "box", ...GPU_POD });
    expect(await provider.diff(created.id, read.props, afterRefresh.inputs)).toEqual(unchanged);
  });

  test("env the pod gets from its template is not drift: only the program's keys are managed", async () => {
    const templates = createTemplateProvider(h.context);
    const template = await checkAndCreate(templates, "tpl", {
      imageName: "img:1",
      env: { FROM_TEMPLATE: "1" },
    });
    const news = { ...GPU_POD, templateId: template.id, env: { MINE: "2" } };
    const created = await up(news);
    expect((await h.rest.pods.get(created.id)).env).toEqual({ FROM_TEMPLATE: "1", MINE: "2", ...MARK });
    expect(created.outs.env).toEqual({ MINE: "2" });
    const next = await provider.check(inputsOf(created.outs, fields), { __logicalName: "box", ...news });
    expect(await provider.diff(created.id, created.outs, next.inputs)).toMatchObject({ changes: false });
    // A managed key changed elsewhere is drift, read back and shown.
    await h.rest.pods.update(created.id, { env: { FROM_TEMPLATE: "1", MINE: "changed" } });
    const read = await provider.read(created.id, created.outs);
    expect((read.props as Record<string, unknown>).env).toEqual({ MINE: "changed" });
    expect(await provider.diff(created.id, read.props, next.inputs)).toMatchObject({ changes: true });
  });

  test("an env update keeps the template's keys (the service replaces a pod's env whole)", async () => {
    const templates = createTemplateProvider(h.context);
    const template = await checkAndCreate(templates, "tpl", {
      imageName: "img:1",
      env: { FROM_TEMPLATE: "1" },
    });
    const news = { ...GPU_POD, templateId: template.id, env: { MINE: "2", GONE: "x" } };
    const created = await up(news);
    expect((await h.rest.pods.get(created.id)).env).toEqual({
      FROM_TEMPLATE: "1",
      MINE: "2",
      GONE: "x",
      ...MARK,
    });
    const changed = await provider.check(inputsOf(created.outs, fields), {
      __logicalName: "box",
      ...news,
      env: { MINE: "3" },
    });
    expect(await provider.diff(created.id, created.outs, changed.inputs)).toMatchObject({
      changes: true,
      replaces: [],
    });
    const updated = await provider.update(created.id, created.outs, changed.inputs);
    // The program's key changed, the key it dropped is gone, the template's key and the mark stay.
    expect((await h.rest.pods.get(created.id)).env).toEqual({ FROM_TEMPLATE: "1", MINE: "3", ...MARK });
    expect(updated.outs.env).toEqual({ MINE: "3" });
    // An update of another field leaves env (and so the running container) alone.
    const locked = await provider.check(inputsOf(updated.outs, fields), {
      __logicalName: "box",
      ...news,
      env: { MINE: "3" },
      locked: true,
    });
    const before = await h.rest.pods.get(created.id);
    await provider.update(created.id, updated.outs, locked.inputs);
    const after = await h.rest.pods.get(created.id);
    expect(after).toMatchObject({ locked: true, env: { FROM_TEMPLATE: "1", MINE: "3" } });
    expect(after.lastStatusChange).toBe(before.lastStatusChange);
  });

  test("locked with desiredStatus EXITED: rented, stopped, then locked", async () => {
    const created = await up({ ...GPU_POD, locked: true, desiredStatus: "EXITED" });
    expect(created.outs).toMatchObject({ locked: true, desiredStatus: "EXITED" });
    expect(await h.rest.pods.get(created.id)).toMatchObject({ locked: true, desiredStatus: "EXITED" });
    // The same on an update of a running, unlocked pod: stopped before it is locked.
    const other = await checkAndCreate(provider, "other", GPU_POD);
    const wanted = (
      await provider.check(other.inputs, { ...other.inputs, locked: true, desiredStatus: "EXITED" })
    ).inputs;
    const updated = await provider.update(other.id, other.outs, wanted);
    expect(updated.outs).toMatchObject({ locked: true, desiredStatus: "EXITED" });
    expect(await h.rest.pods.get(other.id)).toMatchObject({ locked: true, desiredStatus: "EXITED" });
  });

  test("a step after the rent that fails terminates the pod, and the error names the property and the fix", async () => {
    // Another writer locks the pod between its rent and the provider's stop: the real service refuses the stop.
    h.intercept((api) => ({
      ...api,
      pods: {
        ...api.pods,
        create: async (input) => {
          const pod = await api.pods.create(input);
          await h.rest.pods.update(pod.id, { locked: true });
          return pod;
        },
      },
    }));
    const failure = up({ ...GPU_POD, desiredStatus: "EXITED" });
    await expect(failure).rejects.toMatchObject({
      field: "desiredStatus",
      message: expect.stringMatching(
        /^create pod box-[0-9a-f]{7}: desiredStatus: the pod was created \(id (\w+)\) but this step failed: .*pod \1 is locked; unlock it before stopping it.*; the pod was deleted again, so nothing is left behind\. Fix the cause and run up again, or set desiredStatus: "RUNNING"\.$/,
      ),
    });
    await expect(failure).rejects.not.toThrow(h.settings.apiKey);
    expect(await h.rest.pods.list()).toEqual([]);
  });

  test("delete terminates it; a gone pod reads as blank; a serverless worker cannot be adopted", async () => {
    const created = await up(GPU_POD);
    await provider.delete(created.id, created.outs);
    await expect(h.rest.pods.get(created.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect(await provider.read(created.id, created.outs)).toEqual({ id: "", props: {} });
    await expect(up({ ...GPU_POD, adoptId: "no-such-pod" })).rejects.toThrow(/no-such-pod/);
  });
});

describe("Pod reads against the real API's defaults", () => {
  test("a read asks for the machine (the real GET /pods/{id} leaves it out unless includeMachine)", async () => {
    const pod = await h.rest.pods.create({
      imageName: "runpod/pytorch:2.4",
      gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
      name: "m",
    });
    const seen: string[] = [];
    // The local service, seen through a recording proxy: what the provider asks for is on the wire.
    const proxy = await startScriptedServer((hit, res) => {
      seen.push(hit.url);
      fetch(`${h.settings.restUrl.replace(/\/v1$/, "")}${hit.url}`, {
        method: hit.method,
        headers: { authorization: String(hit.headers.authorization) },
      })
        .then(async (reply) =>
          res.writeHead(reply.status, { "content-type": "application/json" }).end(await reply.text()),
        )
        .catch(() => res.writeHead(502).end());
    });
    try {
      const api = createManagementApi({ ...h.settings, restUrl: `${proxy.url}/v1` });
      const record = await api.pods.get(pod.id);
      expect(seen).toEqual([`/v1/pods/${pod.id}?includeMachine=true`]);
      expect(record.machine?.dataCenterId).toEqual(expect.any(String));
    } finally {
      await proxy.close();
    }
  });
});
