import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AbortedError, type RunpodkitError, TimeoutError, ValidationError } from "../../sdk/errors";
import { JobClient } from "../../sdk/jobs";
import { eventually, type Harness, KEY, startHarness } from "../service/jobs/harness";
import { ProtocolWorker } from "../service/jobs/protocol-worker";
import { drain, failure } from "./support";

/**
 * Calls the service holds open (runSync, statusSync, waitFor's holds) against the started service,
 * its clock manual, so a held call ends only when its job does: they share half the client's pool,
 * and a plain call made meanwhile still finds a socket.
 */

let h: Harness;
const clients: JobClient[] = [];
/** /status requests the service received, by job id. */
const polled = new Map<string, number>();
/** /stream polls the service holds now, and the most it held at once, by endpoint id. */
const streaming = new Map<string, { now: number; most: number }>();

beforeAll(async () => {
  h = await startHarness();
  h.app.server.on("request", (req: { url?: string }) => {
    const id = /^\/v2\/[^/]+\/status\/([^/?]+)/.exec(req.url ?? "")?.[1];
    if (id) polled.set(id, (polled.get(id) ?? 0) + 1);
  });
  h.app.server.on("request", (req: { url?: string }, res: { once(event: "close", f: () => void): void }) => {
    const endpoint = /^\/v2\/([^/]+)\/stream\//.exec(req.url ?? "")?.[1];
    if (!endpoint) return;
    const seen = streaming.get(endpoint) ?? { now: 0, most: 0 };
    streaming.set(endpoint, seen);
    seen.most = Math.max(seen.most, ++seen.now);
    res.once("close", () => seen.now--);
  });
});
afterAll(async () => {
  for (const client of clients) await client.close({ force: true });
  await h?.close();
});

/** Calls the service holds now. */
const held = () => h.plane.book.watchers.waiting;

/** A client of a new endpoint with no workers of its own (the test's worker takes the jobs). */
function setUp(connections: number) {
  const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
  // The budget is what a call queued behind held ones gets before it fails unsent.
  const jobs = new JobClient({
    apiKey: KEY,
    endpointId: endpoint.id,
    baseUrl: `${h.url}/v2`,
    retries: 0,
    connections,
    timeoutMs: 5_000,
  });
  clients.push(jobs);
  return { jobs, worker: new ProtocolWorker(h, endpoint.id, `w-${endpoint.id}`) };
}

/** Takes the next job as the worker and completes it with its own input as output. */
async function completeNext(worker: ProtocolWorker): Promise<string> {
  const taken = (await worker.take()).body as { id: string; input: unknown };
  await worker.done(taken.id, { output: taken.input });
  return taken.id;
}

describe("runSync and statusSync on one client", () => {
  it("hold at most half its pool, so run(), status() and cancel() meanwhile are sent", async () => {
    // A pool of 4 sockets stands for the default 64.
    const { jobs, worker } = setUp(4);
    const before = held();
    const watched = await jobs.run({ input: { n: 0 } });
    const syncs = [1, 2, 3].map(() => jobs.statusSync(watched.id, { wait: 300_000 }));
    const runs = [1, 2, 3].map((n) => jobs.runSync({ input: { n } }, { wait: 300_000 }));
    await eventually(() => (held() - before >= 2 ? true : undefined));
    // Before, the six calls held all 4 sockets and these timed out, never sent.
    const another = await jobs.run({ input: { n: 4 } });
    expect(another.status).toBe("IN_QUEUE");
    expect(await jobs.status(watched.id)).toMatchObject({ id: watched.id, status: "IN_QUEUE" });
    expect(await jobs.cancel(another.id)).toMatchObject({ id: another.id, status: "CANCELLED" });
    expect(held() - before).toBe(2);
    // The calls waiting for a slot are sent as the held ones end, in the order they were made.
    expect(await completeNext(worker)).toBe(watched.id);
    for (const sync of syncs) expect(await sync).toMatchObject({ id: watched.id, status: "COMPLETED" });
    for (let i = 0; i < 3; i++) await completeNext(worker);
    expect((await Promise.all(runs)).map((r) => [r.status, r.output])).toEqual([
      ["COMPLETED", { n: 1 }],
      ["COMPLETED", { n: 2 }],
      ["COMPLETED", { n: 3 }],
    ]);
    expect(held() - before).toBe(0);
  });

  it("share their half with waitFor: waits past it poll /status while runSync calls hold", async () => {
    const { jobs, worker } = setUp(4);
    const before = held();
    const runs = [1, 2].map((n) => jobs.runSync({ input: { n } }, { wait: 300_000 }));
    await eventually(() => (held() - before === 2 ? true : undefined));
    const queued = await jobs.run({ input: { n: 3 } });
    const waiting = jobs.waitFor(queued.id, { pollIntervalMs: 20 });
    // The wait polls (before, it held a third socket beside the two runSync calls).
    await eventually(() => ((polled.get(queued.id) ?? 0) >= 2 ? true : undefined));
    expect(held() - before).toBe(2);
    const third = await completeNext(worker);
    const fourth = await completeNext(worker);
    const last = await completeNext(worker);
    expect(new Set([third, fourth, last]).has(queued.id)).toBe(true);
    expect(await waiting).toMatchObject({ id: queued.id, status: "COMPLETED", output: { n: 3 } });
    expect((await Promise.all(runs)).map((r) => r.status)).toEqual(["COMPLETED", "COMPLETED"]);
  });
});

describe("a client of one connection", () => {
  it("polls /status in waitFor (its only socket stays free) and still sends runSync calls, one at a time", async () => {
    const { jobs, worker } = setUp(1);
    const before = held();
    const { id } = await jobs.run({ input: { n: 1 } });
    const waiting = jobs.waitFor(id, { pollIntervalMs: 20 });
    // A wait holding the only socket would leave this unsent until its budget ran out.
    expect((await jobs.run({ input: { n: 2 } })).status).toBe("IN_QUEUE");
    expect(held() - before).toBe(0);
    expect(await completeNext(worker)).toBe(id);
    expect(await waiting).toMatchObject({ id, status: "COMPLETED", output: { n: 1 } });
    await completeNext(worker);
    // The first runSync holds the socket; the second is sent once it ends.
    const runs = [3, 4].map((n) => jobs.runSync({ input: { n } }, { wait: 300_000 }));
    await eventually(() => (held() - before === 1 ? true : undefined));
    await completeNext(worker);
    await completeNext(worker);
    expect((await Promise.all(runs)).map((r) => r.output)).toEqual([{ n: 3 }, { n: 4 }]);
    expect(held() - before).toBe(0);
  });
});

describe("a call waiting for a slot", () => {
  /** A client with one slot, taken by a statusSync the service holds until the job ends. */
  async function oneSlotTaken() {
    const { jobs, worker } = setUp(2);
    const before = held();
    const { id } = await jobs.run({ input: { n: 1 } });
    const holding = jobs.statusSync(id, { wait: 300_000 });
    await eventually(() => (held() - before === 1 ? true : undefined));
    return { jobs, worker, id, holding };
  }

  it("keeps its budget (wait + timeoutMs) and fails unsent, naming the operation and job", async () => {
    const { jobs, worker, id, holding } = await oneSlotTaken();
    const error = await failure(jobs.statusSync(id, { wait: 1_000, timeoutMs: 1 }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.toJSON()).toMatchObject({ operation: "jobs.statusSync", jobId: id, retryable: true });
    expect(error.message).toContain("no reply within 1001 ms");
    const submit = await failure(jobs.runSync({ input: {} }, { wait: 1_000, timeoutMs: 1 }));
    // Never sent: safe to send again, though a runSync cut after sending is not.
    expect(submit.toJSON()).toMatchObject({ operation: "jobs.runSync", code: "TIMEOUT", retryable: true });
    await completeNext(worker);
    expect(await holding).toMatchObject({ id, status: "COMPLETED" });
  });

  it("ends with the caller's signal, and the slot goes to the next call", async () => {
    const { jobs, worker, id, holding } = await oneSlotTaken();
    const controller = new AbortController();
    const aborted = failure(jobs.statusSync(id, { signal: controller.signal }));
    const next = jobs.statusSync(id, { wait: 300_000 });
    controller.abort();
    const error = await aborted;
    expect(error).toBeInstanceOf(AbortedError);
    expect(error.toJSON()).toMatchObject({ operation: "jobs.statusSync", jobId: id, code: "ABORTED" });
    await completeNext(worker);
    expect(await holding).toMatchObject({ id, status: "COMPLETED" });
    expect(await next).toMatchObject({ id, status: "COMPLETED" });
  });

  it("is still sent when close() begins, and close() waits for it", async () => {
    const { jobs, worker, id, holding } = await oneSlotTaken();
    const queued = jobs.runSync({ input: { n: 2 } }, { wait: 300_000 });
    let closed = false;
    const closing = jobs.close().then(() => {
      closed = true;
    });
    // Made after close(): refused at once. Before, it joined the queue and was sent (and held) too.
    const late = await failure(jobs.runSync({ input: { n: 3 } }, { wait: 1_000, timeoutMs: 1 }));
    expect(late.toJSON()).toMatchObject({ operation: "jobs.runSync", code: "VALIDATION" });
    expect(late.message).toContain("the client was closed (close())");
    await completeNext(worker);
    expect(await holding).toMatchObject({ id, status: "COMPLETED" });
    expect(closed).toBe(false);
    // The queued runSync now holds the slot: its job reaches the service, and close() waits for it.
    expect(await completeNext(worker)).not.toBe(id);
    expect(await queued).toMatchObject({ status: "COMPLETED", output: { n: 2 } });
    await closing;
    expect(closed).toBe(true);
    expect((await failure(jobs.status(id))).toJSON()).toMatchObject({ code: "VALIDATION" });
  });

  it("ends with close({ force: true }) as an AbortedError naming it", async () => {
    const { jobs, id, holding } = await oneSlotTaken();
    const held = failure(holding);
    // Every queued call ends, not only the first (one listener of the client's ends them all).
    const queued = Array.from({ length: 12 }, () => failure(jobs.runSync({ input: {} }, { wait: 300_000 })));
    await jobs.close({ force: true });
    const errors = await Promise.all(queued);
    const error = errors[11] as AbortedError;
    expect(errors.every((e) => e instanceof AbortedError)).toBe(true);
    expect(error.toJSON()).toMatchObject({ operation: "jobs.runSync", code: "ABORTED" });
    expect(error.message).toContain("close({ force: true })");
    expect((await held).toJSON()).toMatchObject({ operation: "jobs.statusSync", jobId: id, code: "ABORTED" });
  });
});

/** The /stream polls of this client's endpoint the service holds now. */
const streamsHeld = (jobs: JobClient) => streaming.get(jobs.endpointId)?.now ?? 0;

describe("stream polls on one client", () => {
  it("share the held half of the pool: four streams on 4 sockets hold 2, and run(), status() and cancel() are sent", async () => {
    const { jobs, worker } = setUp(4);
    const ids: string[] = [];
    for (const n of [0, 1, 2, 3]) ids.push((await jobs.run({ input: { n } })).id);
    // No chunk yet: the service holds each poll (its clock is manual) until the job moves.
    const streams = ids.map((id) => drain(jobs.stream(id, { pollIntervalMs: 20 })));
    await eventually(() => (streamsHeld(jobs) >= 2 ? true : undefined));
    // Before, the four polls held every socket and these waited unsent until their budget ran out.
    const another = await jobs.run({ input: { n: 4 } }, { timeoutMs: 2_000 });
    expect(another.status).toBe("IN_QUEUE");
    expect(await jobs.status(ids[0] as string, { timeoutMs: 2_000 })).toMatchObject({ status: "IN_QUEUE" });
    expect(await jobs.cancel(another.id, { timeoutMs: 2_000 })).toMatchObject({ status: "CANCELLED" });
    expect(streamsHeld(jobs)).toBe(2);
    // Each job streams a chunk and completes: the polls waiting for a slot are sent in turn.
    for (const n of [0, 1, 2, 3]) {
      const taken = (await worker.take()).body as { id: string };
      expect(taken.id).toBe(ids[n]);
      await worker.streamChunk(taken.id, { chunk: n });
      await worker.done(taken.id, { output: { n } });
    }
    expect(await Promise.all(streams)).toEqual(
      [0, 1, 2, 3].map((n) => ({ outputs: [{ chunk: n }], ended: "COMPLETED" })),
    );
    expect(streaming.get(jobs.endpointId)?.most).toBe(2);
  });

  it("share it with runSync: a stream waits for the slot a runSync holds, and run() is sent meanwhile", async () => {
    const { jobs, worker } = setUp(2);
    const before = held();
    const syncing = jobs.runSync({ input: { n: 1 } }, { wait: 300_000 });
    await eventually(() => (held() - before === 1 ? true : undefined));
    const { id } = await jobs.run({ input: { n: 2 } });
    const streamed = drain(jobs.stream(id, { pollIntervalMs: 20 }));
    // Before, the stream's poll held the second socket, and this timed out unsent.
    expect((await jobs.run({ input: { n: 3 } }, { timeoutMs: 2_000 })).status).toBe("IN_QUEUE");
    expect(streamsHeld(jobs)).toBe(0);
    await completeNext(worker);
    expect(await syncing).toMatchObject({ status: "COMPLETED", output: { n: 1 } });
    const taken = (await worker.take()).body as { id: string };
    expect(taken.id).toBe(id);
    await worker.streamChunk(id, { text: "a" });
    await worker.streamChunk(id, { text: "b" });
    await worker.done(id, { output: {} });
    expect(await streamed).toEqual({ outputs: [{ text: "a" }, { text: "b" }], ended: "COMPLETED" });
    expect(streaming.get(jobs.endpointId)?.most).toBe(1);
  });

  it("go on with connections: 1 (the one socket in turn), and two streams both end", async () => {
    const { jobs, worker } = setUp(1);
    const first = (await jobs.run({ input: { n: 1 } })).id;
    const second = (await jobs.run({ input: { n: 2 } })).id;
    const streams = [first, second].map((id) => drain(jobs.stream(id, { pollIntervalMs: 20 })));
    await eventually(() => (streamsHeld(jobs) === 1 ? true : undefined));
    for (const id of [first, second]) {
      expect(((await worker.take()).body as { id: string }).id).toBe(id);
      await worker.streamChunk(id, { id });
      await worker.done(id, { output: {} });
    }
    expect(await Promise.all(streams)).toEqual([
      { outputs: [{ id: first }], ended: "COMPLETED" },
      { outputs: [{ id: second }], ended: "COMPLETED" },
    ]);
    expect(streaming.get(jobs.endpointId)?.most).toBe(1);
  });

  it("end at close(): the polls queued before it are sent, later ones refused, so close() resolves", async () => {
    // One slot for three streams: a stream's next poll used to rejoin the queue behind the others,
    // which never emptied while the jobs streamed, and close() (waiting for it to empty) never resolved.
    const { jobs } = setUp(2);
    const ids: string[] = [];
    for (const n of [0, 1, 2]) ids.push((await jobs.run({ input: { n } })).id);
    // A worker each: a worker that takes again without job_in_progress is handed its job back.
    const workers = [0, 1, 2].map((n) => new ProtocolWorker(h, jobs.endpointId, `w-${jobs.endpointId}-${n}`));
    for (const [n, id] of ids.entries()) {
      expect(((await (workers[n] as ProtocolWorker).take()).body as { id: string }).id).toBe(id);
    }
    const streams = ids.map((id) => drain(jobs.stream(id, { pollIntervalMs: 20 })));
    await eventually(() => (streamsHeld(jobs) === 1 ? true : undefined));
    let closed = false;
    const closing = jobs.close().then(() => {
      closed = true;
    });
    // Each job streams a chunk: the held poll and then each queued one answer it.
    for (const [n, id] of ids.entries()) await (workers[n] as ProtocolWorker).streamChunk(id, { n });
    await eventually(() => (closed ? true : undefined));
    await closing;
    const ends = await Promise.all(streams);
    for (const [n, { outputs, ended }] of ends.entries()) {
      expect(outputs).toEqual([{ n }]);
      expect(ended).toBeInstanceOf(ValidationError);
      expect((ended as RunpodkitError).toJSON()).toMatchObject({ operation: "jobs.stream", jobId: ids[n] });
      expect((ended as RunpodkitError).message).toContain("the client was closed (close())");
    }
    // A held call made after close() is refused at once, as any other call is.
    const late = await failure(jobs.runSync({ input: {} }));
    expect(late.toJSON()).toMatchObject({ operation: "jobs.runSync", code: "VALIDATION" });
  });

  it("a poll waiting for a slot ends with the caller's signal or close({ force: true }), naming the job", async () => {
    const { jobs } = setUp(2);
    const { id } = await jobs.run({ input: {} });
    const holding = drain(jobs.stream(id, { pollIntervalMs: 20 }));
    await eventually(() => (streamsHeld(jobs) === 1 ? true : undefined));
    const controller = new AbortController();
    const aborted = drain(jobs.stream(id, { signal: controller.signal }));
    const forced = drain(jobs.stream(id));
    controller.abort();
    const abortedEnd = (await aborted).ended as RunpodkitError;
    expect(abortedEnd).toBeInstanceOf(AbortedError);
    expect(abortedEnd.toJSON()).toMatchObject({ operation: "jobs.stream", jobId: id, code: "ABORTED" });
    await jobs.close({ force: true });
    for (const ended of [(await forced).ended, (await holding).ended] as RunpodkitError[]) {
      expect(ended).toBeInstanceOf(AbortedError);
      expect(ended.toJSON()).toMatchObject({ operation: "jobs.stream", jobId: id, code: "ABORTED" });
      expect(ended.message).toContain("close({ force: true })");
    }
  });
});

describe("a status call's ttl", () => {
  it("is refused before sending unless it is an integer of 10 s to 7 days; statusSync does not wait for a slot first", async () => {
    const { jobs, worker } = setUp(2);
    const before = held();
    const { id } = await jobs.run({ input: {} });
    const holding = jobs.statusSync(id, { wait: 300_000 });
    await eventually(() => (held() - before === 1 ? true : undefined));
    const polls = polled.get(id) ?? 0;
    for (const ttl of [5, 9_999, 7 * 24 * 3_600_000 + 1, 1.5, Number.NaN, -1, Number.POSITIVE_INFINITY]) {
      const plain = await failure(jobs.status(id, { ttl }));
      // Before, it went to the service (status 400 back), `?ttl=NaN` included.
      expect(plain).toBeInstanceOf(ValidationError);
      expect(plain.toJSON()).toMatchObject({ operation: "jobs.status", field: "ttl", status: undefined });
      expect(plain.message).toContain(`got ${String(ttl)}`);
      // The one slot is held: before, this waited for it (a TimeoutError at the end of its budget).
      const sync = await failure(jobs.statusSync(id, { ttl, wait: 1_000, timeoutMs: 1 }));
      expect(sync).toBeInstanceOf(ValidationError);
      expect(sync.toJSON()).toMatchObject({ operation: "jobs.statusSync", field: "ttl", status: undefined });
    }
    expect(polled.get(id) ?? 0).toBe(polls);
    // The bounds themselves are sent, and the service takes them.
    expect(await jobs.status(id, { ttl: 10_000 })).toMatchObject({ id, status: "IN_QUEUE" });
    expect(await jobs.status(id, { ttl: 7 * 24 * 3_600_000 })).toMatchObject({ id, status: "IN_QUEUE" });
    expect(polled.get(id)).toBe(polls + 2);
    await completeNext(worker);
    expect(await holding).toMatchObject({ id, status: "COMPLETED" });
  });
});
