import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ManualClock } from "../../../service/clock";
import type { WorkerSession } from "../../../service/jobs/dispatch/dispatcher";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { ACCOUNT, eventually, type Harness, type Reply, startHarness } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

/**
 * Cancel never costs a worker (docs/worker-protocol.md, job-stop). The worker here is one the service
 * started (its process is an inert `sleep`, so that the pool can kill and replace it), and the test
 * speaks its protocol with the worker's own key, step by step, as the official Python library does:
 * a job it has taken but not started yet sits in its local queue, and a stop for it is ignored.
 */
describe("cancel of a running job: the stop is repeated, the worker kept", () => {
  let h: Harness;
  let clock: ManualClock;
  let ep: EndpointRecord;
  let session: WorkerSession;
  let worker: ProtocolWorker;

  beforeEach(async () => {
    h = await startHarness({ config: { handlers: { "acme/pylike": "cmd:sleep 600" } } });
    clock = h.clock as ManualClock;
    ep = h.endpoint("acme/pylike:1", { workersMin: 1, workersMax: 1 });
    session = await eventually(() => h.plane.dispatcher.sessions(ep.id)[0]);
    if (session.key === null) throw new Error("a managed worker has its own key");
    worker = new ProtocolWorker(h, ep.id, session.id, session.key);
  });
  afterEach(async () => h.close());

  const run = async () =>
    ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } })).body as { id: string }).id;
  const status = async (id: string) =>
    (await h.call("GET", `/v2/${ep.id}/status/${id}`)).body as { status: string; workerId?: string };
  const take = async (holding: boolean) => {
    const reply = await worker.take(holding);
    expect(reply.status).toBe(200);
    return (reply.body as { id: string }).id;
  };
  /** A job-stop poll, with whether it has been answered yet (a held poll must not block the test). */
  const stopPoll = async () => {
    const poll = { settled: false, reply: undefined as Reply | undefined };
    const pending = worker.stopSignals().then((reply) => {
      poll.settled = true;
      poll.reply = reply;
      return reply;
    });
    await eventually(() => (poll.settled || session.stopPoll ? true : undefined));
    return { poll, pending };
  };
  const answered = async (poll: { settled: boolean; reply: Reply | undefined }) => {
    await eventually(() => (poll.settled ? true : undefined), 2_000);
    return poll.reply?.body;
  };
  /** Past the stop grace, the heartbeat grace and a whole job-stop hold. */
  const pastEveryGrace = () =>
    Math.max(h.plane.config.stopGraceMs + 3 * h.plane.config.pingIntervalMs, h.plane.config.pollHoldMs);
  const pod = (id: string) => h.plane.workers.list(ACCOUNT, ep.id).find((p) => p.id === id);

  it("the cancel race: a stop ignored while the job is queued locally is resent, and the same worker takes the next job within 2 s", async () => {
    const first = stopPoll();
    const cancelled = await run();
    expect(await take(false)).toBe(cancelled);
    await worker.ping([cancelled]);
    expect(await status(cancelled)).toMatchObject({ status: "IN_PROGRESS", workerId: session.id });
    const cancelledAt = clock.now();
    expect((await h.call("POST", `/v2/${ep.id}/cancel/${cancelled}`)).body).toEqual({
      id: cancelled,
      status: "CANCELLED",
    });
    const next = await run();
    // The first stop arrives while the job still waits in the worker's local queue: ignored.
    expect(await answered((await first).poll)).toEqual({ jobsToStop: [cancelled] });
    // The worker polls again at once; the stop is not repeated before stopResendMs ...
    const second = await stopPoll();
    await clock.advance(h.plane.config.stopResendMs - 1);
    expect(second.poll.settled).toBe(false);
    // ... the job has started in the worker meanwhile, and the resent stop stops it.
    await clock.advance(1);
    expect(await answered(second.poll)).toEqual({ jobsToStop: [cancelled] });
    // The job left the worker's list: its ping no longer lists it, and it asks for work holding nothing.
    await worker.ping([]);
    expect(session.held.has(cancelled)).toBe(false);
    expect(await take(false)).toBe(next);
    expect(await status(next)).toMatchObject({ status: "IN_PROGRESS", workerId: session.id });
    expect(clock.now() - cancelledAt).toBeLessThanOrEqual(2_000);
    await worker.done(next, { output: "next" });
    expect(await status(next)).toMatchObject({ status: "COMPLETED", workerId: session.id });

    // Nothing more is sent for the stopped job, and long past every grace the worker is still there.
    const idle = await stopPoll();
    await clock.advance(pastEveryGrace());
    expect(await answered(idle.poll)).toBeUndefined();
    expect(idle.poll.reply?.status).toBe(204);
    expect(pod(session.id)?.desiredStatus).toBe("RUNNING");
    expect(h.plane.dispatcher.sessions(ep.id).map((s) => s.id)).toEqual([session.id]);
    expect(h.logs.some((line) => line.includes("did not stop its job in time"))).toBe(false);
    expect(await status(cancelled)).toMatchObject({ status: "CANCELLED" });
  });

  it("a worker that keeps running the cancelled job past the grace is killed and replaced", async () => {
    const id = await run();
    expect(await take(false)).toBe(id);
    await h.call("POST", `/v2/${ep.id}/cancel/${id}`);
    const cancelledAt = clock.now();
    // Every second the stop comes again; the worker ignores it and keeps listing the job.
    for (let second = 0; second < 10; second++) {
      const { poll } = await stopPoll();
      if (second > 0) await clock.advance(h.plane.config.stopResendMs);
      expect(await answered(poll)).toEqual({ jobsToStop: [id] });
      await worker.ping([id]);
    }
    expect(pod(session.id)?.desiredStatus).toBe("RUNNING");
    await clock.advance(cancelledAt + h.plane.config.stopGraceMs - clock.now());
    // Past the grace, the worker is killed when a ping still lists the job.
    expect(pod(session.id)?.desiredStatus).toBe("RUNNING");
    await worker.ping([id]);
    await eventually(() => (pod(session.id)?.desiredStatus === "TERMINATED" ? true : undefined));
    expect(h.logs.some((line) => line.includes(`worker ${session.id} did not stop its job in time`))).toBe(
      true,
    );
    const replacement = await eventually(() =>
      h.plane.dispatcher.sessions(ep.id).find((s) => s.id !== session.id),
    );
    expect(replacement.managed).toBe(true);
    expect(await status(id)).toMatchObject({ status: "CANCELLED" });
  });

  it("a worker that goes silent (no ping for the heartbeat grace) with the cancelled job is killed at the grace", async () => {
    const id = await run();
    expect(await take(false)).toBe(id);
    await worker.ping([id]);
    await h.call("POST", `/v2/${ep.id}/cancel/${id}`);
    const { poll } = await stopPoll();
    expect(await answered(poll)).toEqual({ jobsToStop: [id] });
    await clock.advance(h.plane.config.stopGraceMs - 1);
    expect(pod(session.id)?.desiredStatus).toBe("RUNNING");
    await clock.advance(1);
    await eventually(() => (pod(session.id)?.desiredStatus === "TERMINATED" ? true : undefined));
    await eventually(() => h.plane.dispatcher.sessions(ep.id).find((s) => s.id !== session.id));
  });

  it("a worker that pinged within the grace but stays silent after it is killed once the heartbeat grace passes", async () => {
    const id = await run();
    expect(await take(false)).toBe(id);
    await h.call("POST", `/v2/${ep.id}/cancel/${id}`);
    const { poll } = await stopPoll();
    expect(await answered(poll)).toEqual({ jobsToStop: [id] });
    await clock.advance(h.plane.config.stopGraceMs - 1_000);
    await worker.ping([id]);
    await clock.advance(1_000);
    // Still listed 1 s ago, not silent yet: the heartbeat grace (3 ping intervals) counts from that ping.
    expect(pod(session.id)?.desiredStatus).toBe("RUNNING");
    await clock.advance(3 * h.plane.config.pingIntervalMs - 1_000 - 1);
    expect(pod(session.id)?.desiredStatus).toBe("RUNNING");
    await clock.advance(1);
    await eventually(() => (pod(session.id)?.desiredStatus === "TERMINATED" ? true : undefined));
  });

  it("a ping that comes within stopResendMs of the handover may predate the job: two such pings are needed", async () => {
    const id = await run();
    expect(await take(false)).toBe(id);
    await h.call("POST", `/v2/${ep.id}/cancel/${id}`);
    const { poll } = await stopPoll();
    expect(await answered(poll)).toEqual({ jobsToStop: [id] });
    await worker.ping([]);
    expect(session.held.has(id)).toBe(true);
    await worker.ping([]);
    expect(session.held.has(id)).toBe(false);
    // Released: it is not stopped again, and nothing kills the worker later.
    const next = await stopPoll();
    await clock.advance(pastEveryGrace());
    expect((await answered(next.poll)) ?? null).toBeNull();
    expect(pod(session.id)?.desiredStatus).toBe("RUNNING");
  });
});
