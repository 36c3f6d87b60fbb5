import { afterEach, describe, expect, it } from "vitest";
import type { ManualClock } from "../../../service/clock";
import { decideScale, type ScalerInput, type ScalerWorker } from "../../../service/jobs/workers/scaler";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { ACCOUNT, eventually, type Harness, KEY, startHarness } from "../jobs/harness";

const endpoint = (over: Partial<ScalerInput["endpoint"]> = {}): ScalerInput["endpoint"] => ({
  workersMin: 0,
  workersMax: 3,
  scalerType: "QUEUE_DELAY",
  scalerValue: 4,
  idleTimeout: 5,
  ...over,
});
const worker = (id: string, over: Partial<ScalerWorker> = {}): ScalerWorker => ({
  id,
  starting: false,
  busy: false,
  idleSince: 0,
  ...over,
});
const input = (over: Partial<ScalerInput> = {}): ScalerInput => ({
  endpoint: endpoint(),
  now: 100_000,
  workers: [],
  queued: 0,
  inProgress: 0,
  oldestQueuedAt: undefined,
  ...over,
});

describe("decideScale", () => {
  it("keeps workersMin up, and never more than workersMax", () => {
    expect(decideScale(input({ endpoint: endpoint({ workersMin: 2 }) }))).toEqual({ start: 2, stop: [] });
    expect(
      decideScale(
        input({ endpoint: endpoint({ workersMin: 0, workersMax: 0 }), queued: 10, oldestQueuedAt: 0 }),
      ),
    ).toEqual({ start: 0, stop: [] });
  });

  it("QUEUE_DELAY: with no worker, a queued job starts one at once", () => {
    expect(decideScale(input({ queued: 1, oldestQueuedAt: 100_000 }))).toEqual({ start: 1, stop: [] });
  });

  it("QUEUE_DELAY: one more worker once the oldest job waited scalerValue seconds with none idle or starting", () => {
    const busy = [worker("a", { busy: true })];
    expect(decideScale(input({ workers: busy, queued: 3, oldestQueuedAt: 100_000 - 3_999 })).start).toBe(0);
    expect(decideScale(input({ workers: busy, queued: 3, oldestQueuedAt: 100_000 - 4_000 })).start).toBe(1);
    const withStarting = [...busy, worker("b", { starting: true })];
    expect(decideScale(input({ workers: withStarting, queued: 3, oldestQueuedAt: 0 })).start).toBe(0);
    const full = [worker("a", { busy: true }), worker("b", { busy: true }), worker("c", { busy: true })];
    expect(decideScale(input({ workers: full, queued: 3, oldestQueuedAt: 0 })).start).toBe(0);
  });

  it("REQUEST_COUNT: ceil((queued + in progress) / scalerValue) workers", () => {
    const e = endpoint({ scalerType: "REQUEST_COUNT", scalerValue: 2, workersMax: 10 });
    expect(decideScale(input({ endpoint: e, queued: 5, inProgress: 0 })).start).toBe(3);
    const two = [worker("a", { busy: true }), worker("b", { busy: true })];
    expect(decideScale(input({ endpoint: e, workers: two, queued: 3, inProgress: 2 })).start).toBe(1);
  });

  it("idle workers above the target stop after idleTimeout seconds, oldest idle first; workersMin stay", () => {
    const e = endpoint({ workersMin: 1, idleTimeout: 5 });
    const workers = [
      worker("a", { idleSince: 96_000 }),
      worker("b", { idleSince: 95_000 }),
      worker("c", { idleSince: 90_000 }),
    ];
    expect(decideScale(input({ endpoint: e, workers })).stop).toEqual(["c", "b"]);
    const recent = [worker("a", { idleSince: 99_000 }), worker("b", { idleSince: 98_000 })];
    expect(decideScale(input({ endpoint: e, workers: recent })).stop).toEqual([]);
  });

  it("above workersMax (settings lowered): idle ones stop at once, busy ones drain", () => {
    const e = endpoint({ workersMax: 1 });
    const workers = [
      worker("busy1", { busy: true }),
      worker("idle", { idleSince: 99_999 }),
      worker("busy2", { busy: true }),
    ];
    expect(decideScale(input({ endpoint: e, workers })).stop).toEqual(["idle", "busy1"]);
  });
});

/** The scaler applied to real endpoints, on the ManualClock. */
describe("scaling endpoints", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  const pods = (ep: EndpointRecord) =>
    h.plane.workers.list(ACCOUNT, ep.id).filter((p) => p.desiredStatus === "RUNNING");
  const run = async (ep: EndpointRecord, input: object, policy: object = {}) =>
    ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input, policy } })).body as { id: string }).id;

  it("cold start: the configured delay, shorter with FLASHBOOT and with a cached model", async () => {
    h = await startHarness({
      config: { coldStartMs: 10_000, flashBootColdStartMs: 2_000, cachedModelFactor: 0.5 },
    });
    const clock = h.clock as ManualClock;
    const plain = h.endpoint("runpodkit/echo", { workersMin: 1 });
    const flash = h.endpoint("runpodkit/echo", { workersMin: 1, flashBootType: "FLASHBOOT" });
    const cached = h.endpoint("runpodkit/echo", { workersMin: 1, modelName: "org/model" });
    await clock.advance(h.plane.config.scalerIntervalMs);
    const started = (ep: EndpointRecord) => pods(ep)[0]?.lastStartedAt ?? null;
    for (const ep of [plain, flash, cached]) expect(pods(ep).map((p) => p.state)).toEqual(["initializing"]);
    const t0 = (pods(plain)[0]?.createdAt ?? 0) - clock.now();
    await clock.advance(t0 + 2_000);
    expect([started(plain), started(flash), started(cached)].map((v) => v !== null)).toEqual([
      false,
      true,
      false,
    ]);
    await clock.advance(3_000);
    expect([started(plain), started(cached)].map((v) => v !== null)).toEqual([false, true]);
    await clock.advance(5_000);
    expect(started(plain)).not.toBeNull();
    await eventually(() => (pods(plain)[0]?.state === "idle" ? true : undefined));
  });

  it("QUEUE_DELAY: scales from zero at once, adds a worker after scalerValue seconds of delay, stops idle ones after idleTimeout", async () => {
    h = await startHarness();
    const clock = h.clock as ManualClock;
    const ep = h.endpoint("runpodkit/misbehave", { workersMax: 2, scalerValue: 4, idleTimeout: 5 });
    const first = await run(ep, { mode: "hang" });
    await eventually(async () =>
      ((await h.call("GET", `/v2/${ep.id}/status/${first}`)).body as { status: string }).status ===
      "IN_PROGRESS"
        ? true
        : undefined,
    );
    expect(pods(ep).length).toBe(1);
    const second = await run(ep, { mode: "hang" });
    await clock.advance(3_999);
    expect(pods(ep).length).toBe(1);
    await clock.advance(1_001);
    expect(pods(ep).length).toBe(2);
    await eventually(async () =>
      ((await h.call("GET", `/v2/${ep.id}/status/${second}`)).body as { status: string }).status ===
      "IN_PROGRESS"
        ? true
        : undefined,
    );
    const third = await run(ep, { mode: "hang" });
    await clock.advance(60_000);
    expect(pods(ep).length).toBe(2); // workersMax
    expect(((await h.call("GET", `/v2/${ep.id}/status/${third}`)).body as { status: string }).status).toBe(
      "IN_QUEUE",
    );
    // Cancel everything: workers go idle, and stop idleTimeout seconds later.
    await h.call("POST", `/v2/${ep.id}/cancel/${third}`);
    for (const id of [first, second]) await h.call("POST", `/v2/${ep.id}/cancel/${id}`);
    await eventually(async () => {
      const health = (await h.call("GET", `/v2/${ep.id}/health`)).body as { workers: { idle: number } };
      return health.workers.idle === 2 ? true : undefined;
    });
    await clock.advance(4_000);
    expect(pods(ep).length).toBe(2);
    await clock.advance(2_000);
    await eventually(() => (pods(ep).length === 0 ? true : undefined));
    expect(h.plane.workers.list(ACCOUNT, ep.id).map((p) => p.desiredStatus)).toEqual(["EXITED", "EXITED"]);
  });

  it("REQUEST_COUNT: one worker per scalerValue pending requests", async () => {
    h = await startHarness({ config: { coldStartMs: 3_600_000 } });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 5, scalerType: "REQUEST_COUNT", scalerValue: 2 });
    for (let i = 0; i < 5; i++) await run(ep, {});
    await (h.clock as ManualClock).advance(0);
    expect(pods(ep).length).toBe(3);
  });

  it("runs at most maxWorkers worker processes over every endpoint, whatever workersMin asks; jobs wait", async () => {
    h = await startHarness({ config: { coldStartMs: 3_600_000, maxWorkers: 3 } });
    const clock = h.clock as ManualClock;
    const rest = (method: string, path: string, body?: unknown) =>
      h.call(method, `/v1${path}`, { body, key: `Bearer ${KEY}` });
    const template = (
      await rest("POST", "/templates", { name: "w", imageName: "runpodkit/echo", isServerless: true })
    ).body as { id: string };
    const create = async (body: object) =>
      ((await rest("POST", "/endpoints", { templateId: template.id, ...body })).body as { id: string }).id;
    // One REST call asks for 5,000 workers: each would be a process on this machine.
    const a = await create({ workersMin: 2, workersMax: 2 });
    const b = await create({ workersMin: 5_000, workersMax: 5_000 });
    await clock.advance(h.plane.config.scalerIntervalMs);
    const live = (id: string) =>
      h.plane.workers.list(ACCOUNT, id).filter((p) => p.desiredStatus === "RUNNING");
    expect(live(a).length + live(b).length).toBe(3);
    expect(live(a)).toHaveLength(2);
    const capped = h.logs.filter((line) => line.includes("config.jobs.maxWorkers: 3"));
    expect(capped).toEqual([
      `endpoint ${b} wants 4999 more worker(s), but the service already runs 3, its bound (--max-workers, config.jobs.maxWorkers: 3); its jobs wait in the queue until a worker stops`,
    ]);
    // A job of b waits in the queue; b's worker is still starting.
    const job = (await h.call("POST", `/v2/${b}/run`, { body: { input: {} } })).body as { id: string };
    expect(((await h.call("GET", `/v2/${b}/status/${job.id}`)).body as { status: string }).status).toBe(
      "IN_QUEUE",
    );
    // a scales to zero: b takes the room it leaves, and still no more than 3 in all; said once.
    expect((await rest("PATCH", `/endpoints/${a}`, { workersMin: 0, workersMax: 0 })).status).toBe(200);
    await eventually(() => (live(a).length === 0 ? true : undefined));
    await clock.advance(h.plane.config.scalerIntervalMs);
    expect(live(b)).toHaveLength(3);
    await clock.advance(10 * h.plane.config.scalerIntervalMs);
    expect(live(b)).toHaveLength(3);
    expect(h.logs.filter((line) => line.includes("config.jobs.maxWorkers"))).toHaveLength(1);
  });

  it("a stopped worker's lastStatusChange says when it stopped (REST includeWorkers, GraphQL pods)", async () => {
    h = await startHarness();
    const clock = h.clock as ManualClock;
    const ep = h.endpoint("runpodkit/echo", { workersMin: 1, workersMax: 1, idleTimeout: 1 });
    await eventually(() => (pods(ep)[0]?.state === "idle" ? true : undefined));
    const rest = async () =>
      (
        (await h.call("GET", `/v1/endpoints/${ep.id}?includeWorkers=true`, { key: `Bearer ${KEY}` }))
          .body as {
          workers: { desiredStatus: string; lastStatusChange: string }[];
        }
      ).workers;
    expect((await rest())[0]?.lastStatusChange).toMatch(/^idle since /);
    const patched = await h.call("PATCH", `/v1/endpoints/${ep.id}`, {
      body: { workersMin: 0 },
      key: `Bearer ${KEY}`,
    });
    expect(patched.status).toBe(200);
    const patchedAt = clock.now();
    await clock.advance(5_000);
    await eventually(() => (pods(ep).length === 0 ? true : undefined));
    // The worker's process exits on its own time while the clock advances in steps: its exit is
    // stamped with the clock's time when the service saw it, somewhere between the PATCH and now.
    const [worker] = await rest();
    expect(worker?.desiredStatus).toBe("EXITED");
    const stamped = /^exited since (.+)$/.exec(worker?.lastStatusChange ?? "")?.[1] ?? "";
    const stoppedAt = new Date(stamped).toISOString();
    expect(stamped).toBe(stoppedAt);
    expect(Date.parse(stoppedAt)).toBeGreaterThanOrEqual(patchedAt);
    expect(Date.parse(stoppedAt)).toBeLessThanOrEqual(clock.now());
    const gql = await h.call("POST", `/graphql?api_key=${KEY}`, {
      body: { query: `{ myself { endpoint(id: "${ep.id}") { pods { desiredStatus lastStatusChange } } } }` },
    });
    expect(gql.body).toEqual({
      data: {
        myself: {
          endpoint: { pods: [{ desiredStatus: "EXITED", lastStatusChange: `exited since ${stoppedAt}` }] },
        },
      },
    });
  });

  it("lowPriority jobs never trigger a scale-up", async () => {
    h = await startHarness({ config: { coldStartMs: 3_600_000 } });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 5, scalerType: "REQUEST_COUNT", scalerValue: 1 });
    for (let i = 0; i < 4; i++) await run(ep, {}, { lowPriority: true });
    await (h.clock as ManualClock).advance(60_000);
    expect(pods(ep).length).toBe(0);
  });

  it("new settings apply: raising workersMin starts workers, a new template replaces them", async () => {
    h = await startHarness();
    const ep = h.endpoint("runpodkit/echo", { workersMin: 1, workersMax: 2 });
    await eventually(() => (pods(ep)[0]?.state === "idle" ? pods(ep)[0] : undefined));
    const before = pods(ep)[0]?.id;
    h.management.endpoints.replace(ACCOUNT, ep.id, {
      name: ep.name,
      templateId: ep.templateId,
      workersMin: 2,
      workersMax: 2,
    });
    await eventually(() => (pods(ep).filter((p) => p.state === "idle").length === 2 ? true : undefined));
    expect(pods(ep).map((p) => p.id)).toContain(before);
    const other = h.endpoint("runpodkit/fail");
    h.management.endpoints.replace(ACCOUNT, ep.id, {
      name: ep.name,
      templateId: other.templateId,
      workersMin: 1,
      workersMax: 2,
    });
    await eventually(() => {
      const live = pods(ep);
      return live.length === 1 && live[0]?.imageName === "runpodkit/fail" && live[0].state === "idle"
        ? true
        : undefined;
    });
  });
});
