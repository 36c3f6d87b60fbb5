import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import type { JobPlaneConfig } from "../../../service/jobs/config";
import { type Harness, startHarness } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

/**
 * A deep queue waits in the store: past `hotQueuedPerEndpoint` jobs, /run's jobs are not held in
 * memory (issue 13: memory that does not grow with the queue). Every rule of a queued job still holds.
 */
describe("deep queues (jobs left in the store)", () => {
  const running: Harness[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    for (const h of running.splice(0)) await h.close().catch(() => {});
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  const config: Partial<JobPlaneConfig> = { hotQueuedPerEndpoint: 2 };
  const start = async (clock = new ManualClock(), data?: string) => {
    const h = await startHarness({ config, clock, ...(data ? { data } : {}) });
    running.push(h);
    return h;
  };
  const run = async (h: Harness, endpointId: string, body: object) => {
    const reply = await h.call("POST", `/v2/${endpointId}/run`, { body });
    expect(reply.status).toBe(200);
    return (reply.body as { id: string }).id;
  };
  const fill = async (h: Harness, endpointId: string, n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(await run(h, endpointId, { input: { i } }));
    return ids;
  };
  const inQueue = async (h: Harness, endpointId: string) =>
    ((await h.call("GET", `/v2/${endpointId}/health`)).body as { jobs: { inQueue: number } }).jobs.inQueue;
  const takeAll = async (worker: ProtocolWorker, n: number) => {
    const taken: unknown[] = [];
    for (let i = 0; i < n; i++) {
      const reply = await worker.take();
      const job = reply.body as { id: string; input: unknown };
      taken.push(job.input);
      await worker.done(job.id, { output: job.input });
    }
    return taken;
  };

  it("keeps queue order, answers /status IN_QUEUE and holds only the head in memory", async () => {
    const h = await start();
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const ids = await fill(h, ep.id, 6);
    await h.plane.store.flushed();
    expect(h.plane.book.liveJobs(ep.id)).toHaveLength(2);
    expect(await inQueue(h, ep.id)).toBe(6);
    const status = await h.call("GET", `/v2/${ep.id}/status/${ids[5]}`);
    expect(status.body).toEqual({
      id: ids[5],
      status: "IN_QUEUE",
      delayTime: expect.any(Number),
      executionTime: 0,
    });
    const worker = new ProtocolWorker(h, ep.id, "w-order");
    expect(await takeAll(worker, 6)).toEqual([0, 1, 2, 3, 4, 5].map((i) => ({ i })));
    expect(await inQueue(h, ep.id)).toBe(0);
    expect((await h.call("GET", `/v2/${ep.id}/status/${ids[4]}`)).body).toMatchObject({
      status: "COMPLETED",
      output: { i: 4 },
    });
  });

  it("cancel of a job left in the store: CANCELLED, counted, never handed out", async () => {
    const h = await start();
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const ids = await fill(h, ep.id, 5);
    expect((await h.call("POST", `/v2/${ep.id}/cancel/${ids[3]}`)).body).toEqual({
      id: ids[3],
      status: "CANCELLED",
    });
    expect(await inQueue(h, ep.id)).toBe(4);
    const worker = new ProtocolWorker(h, ep.id, "w-cancel");
    expect(await takeAll(worker, 4)).toEqual([0, 1, 2, 4].map((i) => ({ i })));
    expect(await inQueue(h, ep.id)).toBe(0);
    expect((await h.call("GET", `/v2/${ep.id}/status/${ids[3]}`)).body).toMatchObject({
      status: "CANCELLED",
    });
  });

  it("a ttl passes for a job left in the store: gone at the next sweep, counts follow", async () => {
    const clock = new ManualClock();
    const h = await start(clock);
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    await fill(h, ep.id, 2);
    const short = await run(h, ep.id, { input: { i: "short" }, policy: { ttl: 10_000 } });
    const kept = await run(h, ep.id, { input: { i: "kept" } });
    await h.plane.store.flushed();
    expect(await inQueue(h, ep.id)).toBe(4);
    await clock.advance(10_000 + h.plane.config.sweepIntervalMs);
    expect(await inQueue(h, ep.id)).toBe(3);
    expect((await h.call("GET", `/v2/${ep.id}/status/${short}`)).status).toBe(404);
    const worker = new ProtocolWorker(h, ep.id, "w-ttl");
    expect(await takeAll(worker, 3)).toEqual([{ i: 0 }, { i: 1 }, { i: "kept" }]);
    expect((await h.call("GET", `/v2/${ep.id}/status/${kept}`)).body).toMatchObject({ status: "COMPLETED" });
  });

  it("purge-queue removes the jobs in memory and in the store alike", async () => {
    const h = await start();
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const ids = await fill(h, ep.id, 7);
    // One read back by /status (held in memory since), one cancelled.
    await h.call("GET", `/v2/${ep.id}/status/${ids[5]}`);
    await h.call("POST", `/v2/${ep.id}/cancel/${ids[6]}`);
    expect((await h.call("POST", `/v2/${ep.id}/purge-queue`)).body).toEqual({
      removed: 6,
      status: "completed",
    });
    expect(await inQueue(h, ep.id)).toBe(0);
    expect(h.plane.book.counts(ep.id).inQueueScaling).toBe(0);
    for (const id of ids.slice(0, 6)) {
      expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).status).toBe(404);
    }
    expect(h.plane.memory.used).toBe(0);
    // The queue works on: a new job is taken first.
    const next = await run(h, ep.id, { input: { i: "next" } });
    const taken = await new ProtocolWorker(h, ep.id, "w-purge").take();
    expect(taken.body).toMatchObject({ id: next, input: { i: "next" } });
  });

  it("a restart reads back only the head of a deep queue; order, counts and fields are kept", async () => {
    const dir = mkdtempSync(join(tmpdir(), "runpodkit-deep-"));
    dirs.push(dir);
    const data = join(dir, "service.sqlite");
    const clock = new ManualClock();
    const first = await start(clock, data);
    const ep = first.endpoint("runpodkit/echo", { workersMax: 0 });
    await fill(first, ep.id, 4);
    const hooked = await run(first, ep.id, {
      input: { i: 4 },
      webhook: "http://127.0.0.1:9/hook",
      policy: { lowPriority: true },
    });
    await first.close();
    running.splice(running.indexOf(first), 1);

    const second = await start(clock, data);
    expect(second.plane.book.liveJobs(ep.id)).toHaveLength(2);
    expect(await inQueue(second, ep.id)).toBe(5);
    expect(second.plane.book.counts(ep.id).inQueueScaling).toBe(4);
    const worker = new ProtocolWorker(second, ep.id, "w-restart");
    expect(await takeAll(worker, 4)).toEqual([0, 1, 2, 3].map((i) => ({ i })));
    const last = await worker.take();
    expect(last.body).toMatchObject({ id: hooked, input: { i: 4 }, webhook: "http://127.0.0.1:9/hook" });
  });
});
