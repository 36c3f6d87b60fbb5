import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConnectionError } from "../../sdk/errors";
import { JobClient } from "../../sdk/jobs";
import { ManualClock } from "../../service/clock";
import { type Harness, KEY, startHarness } from "../service/jobs/harness";
import { ProtocolWorker } from "../service/jobs/protocol-worker";
import { failure, stepClock } from "./support";

/**
 * waitFor and stream against the whole service seen through a gate that can go down, as the
 * service does while it restarts: the job lives on in the service, so a long wait must poll
 * through the outage rather than fail at the first poll the HTTP layer's retries did not save.
 */

/** TCP forwarding to the service that, while down, drops every connection (open ones too). */
async function gateTo(target: string) {
  const { port: targetPort, hostname } = new URL(target);
  const open = new Set<Socket>();
  let down = false;
  let refused = 0;
  const server: Server = createServer((socket) => {
    if (down) {
      refused++;
      socket.destroy();
      return;
    }
    const upstream = tcpConnect(Number(targetPort), hostname);
    open.add(socket);
    socket.on("close", () => open.delete(socket));
    socket.pipe(upstream).pipe(socket);
    socket.on("error", () => upstream.destroy());
    upstream.on("error", () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`,
    get refused() {
      return refused;
    },
    down() {
      down = true;
      for (const socket of open) socket.destroy();
    },
    up() {
      down = false;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let h: Harness;
let gate: Awaited<ReturnType<typeof gateTo>>;
const clients: JobClient[] = [];

beforeAll(async () => {
  h = await startHarness();
  gate = await gateTo(h.url);
});
// A failed test leaves the gate down: the next one starts with the service in reach.
afterEach(() => gate.up());
afterAll(async () => {
  for (const client of clients) await client.close();
  await gate?.close();
  await h?.close();
});

/**
 * A client through the gate that gives up on a call at its first failure (no HTTP retries), its own
 * waits (pauses, maxOutageMs) on a ManualClock the test moves: a minute of outage takes no real minute.
 */
function setUp(image = "runpodkit/echo") {
  const endpoint = h.endpoint(image, { workersMax: 0 });
  const clock = new ManualClock();
  const jobs = new JobClient({
    clock,
    apiKey: KEY,
    endpointId: endpoint.id,
    baseUrl: `${gate.url}/v2`,
    retries: 0,
  });
  clients.push(jobs);
  return { jobs, clock, worker: new ProtocolWorker(h, endpoint.id, `w-${endpoint.id}`) };
}

/** Whether a promise has settled, read synchronously (stepClock's end). */
function watch<T>(promise: Promise<T>) {
  const state = { settled: false, promise };
  promise.then(
    () => {
      state.settled = true;
    },
    () => {
      state.settled = true;
    },
  );
  return state;
}

describe("JobClient long waits across an outage of the service", () => {
  it("waitFor polls through 55 s of outage (maxOutageMs 60 s by default) and returns the job's result once the service is back", async () => {
    const { jobs, clock, worker } = setUp();
    const { id } = await jobs.run({ input: { n: 1 } });
    gate.down();
    const before = gate.refused;
    const start = clock.now();
    const done = watch(jobs.waitFor(id, { pollIntervalMs: 5_000 }));
    // A poll every 5 s of the client's time, each a ConnectionError the HTTP layer did not retry.
    await stepClock(clock, 5_000, () => done.settled || (clock.now() - start >= 55_000 && clock.pending > 0));
    expect(done.settled).toBe(false);
    expect(gate.refused - before).toBeGreaterThanOrEqual(12);
    await worker.take();
    await worker.done(id, { output: { n: 1 } });
    gate.up();
    // The next poll, 5 s on, finds the job done.
    expect(await stepClock(clock, 5_000, () => done.settled)).toBe(5_000);
    expect(await done.promise).toMatchObject({ id, status: "COMPLETED", output: { n: 1 } });
  });

  it("stream polls through the outage: every chunk once, in order, then the end", async () => {
    const { jobs, clock, worker } = setUp("runpodkit/stream");
    const { id } = await jobs.run({ input: {} });
    gate.up();
    await worker.take();
    await worker.streamChunk(id, "a");
    const stream = jobs.stream(id, { pollIntervalMs: 10 });
    expect((await stream.next()).value).toMatchObject({ output: "a" });
    gate.down();
    const before = gate.refused;
    const next = watch(stream.next());
    // Three polls refused, 250 ms of the client's time apart (its pause in an outage).
    expect(
      await stepClock(clock, 250, () => next.settled || (gate.refused >= before + 3 && clock.pending > 0)),
    ).toBe(500);
    expect(next.settled).toBe(false);
    await worker.streamChunk(id, "b");
    await worker.streamChunk(id, "c");
    await worker.done(id, { output: [] }, true);
    gate.up();
    expect(await stepClock(clock, 250, () => next.settled)).toBe(250);
    expect((await next.promise).value).toMatchObject({ output: "b" });
    expect((await stream.next()).value).toMatchObject({ output: "c" });
    expect(await stream.next()).toEqual({ done: true, value: "COMPLETED" });
  });

  it("an outage longer than maxOutageMs ends the wait with the last failure, naming the job", async () => {
    const { jobs, clock } = setUp();
    const { id } = await jobs.run({ input: {} });
    gate.down();
    try {
      // The bound on the client's clock: the poll at 20 s throws, not one before it.
      const bounded = watch(failure(jobs.waitFor(id, { pollIntervalMs: 5_000, maxOutageMs: 20_000 })));
      expect(await stepClock(clock, 5_000, () => bounded.settled, 10)).toBe(20_000);
      const outlasted = await bounded.promise;
      expect(outlasted).toBeInstanceOf(ConnectionError);
      expect(outlasted.toJSON()).toMatchObject({ operation: "jobs.waitFor", jobId: id, code: "CONNECTION" });
      const waited = await failure(jobs.waitFor(id, { pollIntervalMs: 10, maxOutageMs: 0 }));
      expect(waited).toBeInstanceOf(ConnectionError);
      expect(waited.toJSON()).toMatchObject({ operation: "jobs.waitFor", jobId: id, code: "CONNECTION" });
      const streamed = await failure(jobs.stream(id, { maxOutageMs: 0 }).next());
      expect(streamed).toBeInstanceOf(ConnectionError);
      expect(streamed.toJSON()).toMatchObject({ operation: "jobs.stream", jobId: id, code: "CONNECTION" });
    } finally {
      gate.up();
    }
  });

  it("refuses a maxOutageMs it cannot use, naming it", async () => {
    const { jobs } = setUp();
    for (const bad of [-1, Number.NaN]) {
      const error = await failure(jobs.waitFor("j", { maxOutageMs: bad }));
      expect(error.toJSON()).toMatchObject({ code: "VALIDATION", field: "maxOutageMs" });
      const streamed = await failure(jobs.stream("j", { maxOutageMs: bad }).next());
      expect(streamed.toJSON()).toMatchObject({ code: "VALIDATION", field: "maxOutageMs" });
    }
  });
});

describe("a closed client", () => {
  it("refuses later calls at once with a ValidationError, so waitFor does not poll them as an outage", async () => {
    const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const jobs = new JobClient({ apiKey: KEY, endpointId: endpoint.id, baseUrl: `${h.url}/v2` });
    const { id } = await jobs.run({ input: {} });
    // No pause is reached (real time): the held call close() ends is followed by a refused one.
    const waiting = jobs.waitFor(id, { pollIntervalMs: 10 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await jobs.close();
    await jobs.close();
    // The wait in progress ends at its next poll, with the closed client's error.
    expect(await waiting).toMatchObject({ code: "VALIDATION", operation: "jobs.waitFor" });
    const error = await failure(jobs.health());
    expect(error.toJSON()).toMatchObject({ code: "VALIDATION", operation: "jobs.health" });
    expect(error.message).toContain("the client was closed");
  });
});
