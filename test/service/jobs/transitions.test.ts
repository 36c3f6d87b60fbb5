import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ManualClock } from "../../../service/clock";
import { TRANSITIONS } from "../../../service/jobs/model/job";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { eventually, type Harness, startHarness } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

/** Each row of the spec's "States and transitions" table, driven over HTTP with a protocol worker. */
describe("job transitions", () => {
  let h: Harness;
  let clock: ManualClock;
  let ep: EndpointRecord;
  let worker: ProtocolWorker;

  beforeEach(async () => {
    h = await startHarness();
    clock = h.clock as ManualClock;
    // No managed workers: the protocol worker below is the only one.
    ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    worker = new ProtocolWorker(h, ep.id, "w-test-1");
  });
  afterEach(async () => h.close());

  const run = async (body: object = { input: { n: 1 } }) => {
    const reply = await h.call("POST", `/v2/${ep.id}/run`, { body });
    expect(reply.status).toBe(200);
    return (reply.body as { id: string }).id;
  };
  const status = (id: string) => h.call("GET", `/v2/${ep.id}/status/${id}`);
  const take = async (holding = false) => {
    const reply = await worker.take(holding);
    expect(reply.status).toBe(200);
    return reply.body as { id: string; input: unknown };
  };
  /** The long-poll is registered on the server before the clock moves. */
  const pollRegistered = (kind: "take" | "stopPoll") =>
    eventually(() => (h.plane.dispatcher.session(worker.endpointId, worker.id)?.[kind] ? true : undefined));

  it("(none) --/run--> IN_QUEUE: the reply has the id (real format) and status", async () => {
    const reply = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { prompt: "hi" } } });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}-u1$/), status: "IN_QUEUE" });
    const id = (reply.body as { id: string }).id;
    expect((await status(id)).body).toEqual({ id, status: "IN_QUEUE", delayTime: 0, executionTime: 0 });
  });

  it("IN_QUEUE --cancel--> CANCELLED: the job is removed before it starts", async () => {
    const id = await run();
    const cancelled = await h.call("POST", `/v2/${ep.id}/cancel/${id}`);
    expect(cancelled.body).toEqual({ id, status: "CANCELLED" });
    expect((await status(id)).body).toEqual({ id, status: "CANCELLED", delayTime: 0, executionTime: 0 });
    expect((await h.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({ jobs: { inQueue: 0 } });
    // A worker asking for work gets nothing: after the hold, 204.
    const taking = worker.take();
    await pollRegistered("take");
    await clock.advance(h.plane.config.pollHoldMs);
    expect((await taking).status).toBe(204);
  });

  it("a job cancelled in the queue keeps the delayTime it waited (until the cancel) and executionTime 0", async () => {
    const id = await run();
    await clock.advance(2_500);
    await h.call("POST", `/v2/${ep.id}/cancel/${id}`);
    await clock.advance(10_000);
    expect((await status(id)).body).toEqual({ id, status: "CANCELLED", delayTime: 2_500, executionTime: 0 });
  });

  it("IN_PROGRESS --cancel--> CANCELLED: the running job is stopped on its worker; a late result is ignored", async () => {
    const id = await run();
    expect((await take()).id).toBe(id);
    expect((await status(id)).body).toMatchObject({ status: "IN_PROGRESS", workerId: worker.id });
    // A progress value shows while the job runs, and is no result once it is cancelled.
    await worker.progress(id, { step: 1 });
    expect((await status(id)).body).toMatchObject({ status: "IN_PROGRESS", output: { step: 1 } });
    expect((await h.call("POST", `/v2/${ep.id}/cancel/${id}`)).body).toEqual({ id, status: "CANCELLED" });
    const stop = await worker.stopSignals();
    expect(stop.body).toEqual({ jobsToStop: [id] });
    expect((await worker.done(id, { output: "too late" })).status).toBe(200);
    const after = (await status(id)).body as Record<string, unknown>;
    expect(after.status).toBe("CANCELLED");
    expect(after.output).toBeUndefined();
  });

  it("FAILED --retry--> IN_QUEUE: same id and original input, previous output removed", async () => {
    const id = await run({ input: { n: 7 } });
    await take();
    await worker.done(id, { error: "boom", output: { partial: 1 } });
    expect((await status(id)).body).toMatchObject({ id, status: "FAILED", error: "boom" });
    expect(((await status(id)).body as Record<string, unknown>).output).toBeUndefined();

    expect((await h.call("POST", `/v2/${ep.id}/retry/${id}`)).body).toEqual({ id, status: "IN_QUEUE" });
    const requeued = (await status(id)).body as Record<string, unknown>;
    expect(requeued).toEqual({ id, status: "IN_QUEUE", delayTime: 0, executionTime: 0 });
    const again = await take();
    expect(again).toMatchObject({ id, input: { n: 7 } });
    expect((await h.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({
      jobs: { retried: 1, failed: 0, inProgress: 1 },
    });
  });

  it("TIMED_OUT --retry--> IN_QUEUE: the execution timeout ends a running job, retry requeues it", async () => {
    const id = await run({ input: {}, policy: { executionTimeout: 5_000 } });
    await take();
    await clock.advance(4_999);
    expect((await status(id)).body).toMatchObject({ status: "IN_PROGRESS" });
    await clock.advance(1);
    expect((await status(id)).body).toMatchObject({ status: "TIMED_OUT", executionTime: 5_000 });
    expect((await worker.stopSignals()).body).toEqual({ jobsToStop: [id] });
    expect((await h.call("POST", `/v2/${ep.id}/retry/${id}`)).body).toEqual({ id, status: "IN_QUEUE" });
  });

  it("retry is refused for jobs not FAILED or TIMED_OUT, and changes nothing", async () => {
    const queued = await run();
    const completed = await run();
    const cancelled = await run();
    await h.call("POST", `/v2/${ep.id}/cancel/${cancelled}`);
    const first = await take();
    expect(first.id).toBe(queued);
    // job_in_progress=1: it still holds the first one (0 would mean that one was lost).
    const second = await take(true);
    expect(second.id).toBe(completed);
    await worker.done(completed, { output: 1 });
    const fresh = await run();
    for (const [id, state] of [
      [fresh, "IN_QUEUE"],
      [queued, "IN_PROGRESS"],
      [completed, "COMPLETED"],
      [cancelled, "CANCELLED"],
    ] as const) {
      const reply = await h.call("POST", `/v2/${ep.id}/retry/${id}`);
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ code: "PRECONDITION", field: "status" });
      expect((await status(id)).body).toMatchObject({ status: state });
    }
  });

  it("retry is impossible once the results expired (30 min after an async job): 404", async () => {
    const id = await run();
    await take();
    await worker.done(id, { error: "bad input" });
    await clock.advance(30 * 60_000 - 1);
    expect((await status(id)).status).toBe(200);
    await clock.advance(1);
    expect((await status(id)).status).toBe(404);
    expect((await h.call("POST", `/v2/${ep.id}/retry/${id}`)).status).toBe(404);
  });

  it("IN_QUEUE --purge-queue--> removed; jobs in progress continue", async () => {
    const running = await run();
    await take();
    const purged = [await run(), await run()];
    expect((await h.call("POST", `/v2/${ep.id}/purge-queue`)).body).toEqual({
      removed: 2,
      status: "completed",
    });
    for (const id of purged) expect((await status(id)).status).toBe(404);
    expect((await status(running)).body).toMatchObject({ status: "IN_PROGRESS" });
    await worker.done(running, { output: "still ran" });
    expect((await status(running)).body).toMatchObject({ status: "COMPLETED", output: "still ran" });
  });

  it("any --TTL--> deleted: a queued job, then status is 404", async () => {
    const id = await run({ input: {}, policy: { ttl: 10_000 } });
    await clock.advance(9_999);
    expect((await status(id)).status).toBe(200);
    await clock.advance(1);
    expect((await status(id)).status).toBe(404);
    expect((await h.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({ jobs: { inQueue: 0 } });
  });

  it("any --TTL--> deleted even while running: the worker is told to stop, a late result changes nothing", async () => {
    const id = await run({ input: {}, policy: { ttl: 10_000, executionTimeout: 60_000 } });
    await clock.advance(4_000);
    await take();
    await clock.advance(6_000);
    expect((await status(id)).status).toBe(404);
    expect((await worker.stopSignals()).body).toEqual({ jobsToStop: [id] });
    expect((await worker.done(id, { output: "late" })).status).toBe(404);
    expect((await status(id)).status).toBe(404);
  });

  it("any --TTL--> deleted: a finished job too, even within its result retention", async () => {
    const id = await run({ input: {}, policy: { ttl: 10_000 } });
    await take();
    await worker.done(id, { output: 1 });
    await clock.advance(9_999);
    expect((await status(id)).body).toMatchObject({ status: "COMPLETED" });
    await clock.advance(1);
    expect((await status(id)).status).toBe(404);
  });

  it("(none) --/runsync--> COMPLETED when the job finishes within the wait: the reply carries the result", async () => {
    const pending = h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { q: 1 } } });
    const job = await eventually(async () => {
      const reply = await worker.take();
      return reply.status === 200 ? (reply.body as { id: string }) : undefined;
    });
    expect(job.id).toMatch(/^sync-[0-9a-f-]{36}-u1$/);
    await clock.advance(250);
    await worker.done(job.id, { output: { answer: 42 } });
    const reply = await pending;
    expect(reply.body).toEqual({
      id: job.id,
      status: "COMPLETED",
      output: { answer: 42 },
      delayTime: 0,
      executionTime: 250,
      workerId: worker.id,
    });
  });

  it("/runsync not done within the wait answers {id, status}; the job goes on", async () => {
    const pending = h.call("POST", `/v2/${ep.id}/runsync?wait=1000`, { body: { input: {} } });
    await eventually(() => (h.plane.book.watchers.waiting > 0 ? true : undefined));
    await clock.advance(1_000);
    const reply = await pending;
    expect(reply.body).toEqual({ id: expect.stringMatching(/^sync-/), status: "IN_QUEUE" });
    const id = (reply.body as { id: string }).id;
    await take();
    await worker.done(id, { output: "later" });
    expect((await status(id)).body).toMatchObject({ status: "COMPLETED", output: "later" });
  });

  it("IN_QUEUE -> IN_PROGRESS only when a worker takes it; delayTime and executionTime are milliseconds", async () => {
    const id = await run();
    await clock.advance(3_000);
    // In every state, as the real /status shape has them: queued so far 3 s, run 0 ms.
    expect((await status(id)).body).toEqual({ id, status: "IN_QUEUE", delayTime: 3_000, executionTime: 0 });
    await take();
    await clock.advance(1_000);
    expect((await status(id)).body).toEqual({
      id,
      status: "IN_PROGRESS",
      delayTime: 3_000,
      executionTime: 1_000,
      workerId: worker.id,
    });
    await clock.advance(500);
    await worker.done(id, { output: [1, 2] });
    expect((await status(id)).body).toEqual({
      id,
      status: "COMPLETED",
      delayTime: 3_000,
      executionTime: 1_500,
      output: [1, 2],
      workerId: worker.id,
    });
  });

  it("no other transition: the table is exactly the spec's rows plus the worker-driven ones", () => {
    expect(TRANSITIONS).toEqual({
      IN_QUEUE: ["IN_PROGRESS", "CANCELLED"],
      IN_PROGRESS: ["COMPLETED", "FAILED", "TIMED_OUT", "CANCELLED", "IN_QUEUE"],
      COMPLETED: [],
      FAILED: ["IN_QUEUE"],
      TIMED_OUT: ["IN_QUEUE"],
      CANCELLED: [],
    });
  });

  it("cancelling a finished job leaves it as it is", async () => {
    const id = await run();
    await take();
    await worker.done(id, { output: "done" });
    expect((await h.call("POST", `/v2/${ep.id}/cancel/${id}`)).body).toEqual({ id, status: "COMPLETED" });
    expect((await status(id)).body).toMatchObject({ status: "COMPLETED", output: "done" });
  });
});
