import type { ServerResponse } from "node:http";
import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AbortedError, type RunpodkitError } from "../../sdk/errors";
import { JobClient, type JobClientOptions } from "../../sdk/jobs";
import { ManualClock } from "../../service/clock";
import { eventually, type Harness, KEY, startHarness } from "../service/jobs/harness";
import { ProtocolWorker } from "../service/jobs/protocol-worker";
import { json, startScriptedServer } from "./scripted-server";
import { drain, failure } from "./support";

/**
 * A stream() whose polls wait for a hold slot that runSync calls hold, against the started service
 * (its clock manual, so a held call ends only when its job does). The client's own time is a
 * ManualClock of its own (`clock`): the test moves it minutes ahead instead of waiting them out. Each
 * HTTP attempt's budget stays on a native timer, which these tests never let run out.
 */

let h: Harness;
const clients: JobClient[] = [];
/** /stream polls the service received, and those it holds now, by job id. */
const streamPolls = new Map<string, { sent: number; now: number }>();

beforeAll(async () => {
  h = await startHarness();
  h.app.server.on("request", (req: { url?: string }, res: { once(event: "close", f: () => void): void }) => {
    const id = /^\/v2\/[^/]+\/stream\/([^/?]+)/.exec(req.url ?? "")?.[1];
    if (!id) return;
    const seen = streamPolls.get(id) ?? { sent: 0, now: 0 };
    streamPolls.set(id, seen);
    seen.sent++;
    seen.now++;
    res.once("close", () => seen.now--);
  });
});
afterAll(async () => {
  for (const client of clients) await client.close({ force: true });
  await h?.close();
});

/** Calls the service holds now. */
const held = () => h.plane.book.watchers.waiting;

/** Until `check` holds: what the service or the client does over real sockets takes a few turns. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("condition not met in time");
}

/** A job client of the harness's service for `endpointId`, closed after the tests. */
function clientOf(endpointId: string, options: Partial<JobClientOptions>): JobClient {
  const jobs = new JobClient({ apiKey: KEY, endpointId, baseUrl: `${h.url}/v2`, ...options });
  clients.push(jobs);
  return jobs;
}

/**
 * A client of one hold slot (connections: 2, unless `options` size it otherwise), a runSync holding it
 * until the test completes its job (worker `syncWorker`), and another job taken by `streamWorker`, to
 * be streamed.
 */
async function slotHeldByRunSync(options: Partial<JobClientOptions> = { connections: 2 }) {
  const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
  const clock = new ManualClock();
  const jobs = clientOf(endpoint.id, { clock, retries: 0, timeoutMs: 1_000, ...options });
  const syncWorker = new ProtocolWorker(h, endpoint.id, `w-${endpoint.id}-sync`);
  const streamWorker = new ProtocolWorker(h, endpoint.id, `w-${endpoint.id}-stream`);
  const before = held();
  const syncing = jobs.runSync({ input: { n: "sync" } }, { wait: 300_000 });
  await eventually(() => (held() - before === 1 ? true : undefined));
  const syncJob = ((await syncWorker.take()).body as { id: string }).id;
  const { id } = await jobs.run({ input: { n: "streamed" } });
  expect(((await streamWorker.take()).body as { id: string }).id).toBe(id);
  return { jobs, clock, syncing, syncWorker, syncJob, streamWorker, id };
}

describe("a stream poll waiting for a hold slot", () => {
  it("waits its turn behind a long runSync, is no outage even with maxOutageMs: 0, and every chunk arrives", async () => {
    const { jobs, clock, syncing, syncWorker, syncJob, streamWorker, id } = await slotHeldByRunSync();
    for (const text of ["a", "b", "c"]) await streamWorker.streamChunk(id, { text });
    const streamed = drain(jobs.stream(id, { maxOutageMs: 0, timeoutMs: 1_000, pollIntervalMs: 20 }));
    // Ten minutes of the client's time while the runSync holds the slot. Before, the poll's slot
    // wait ran out after its budget (10 s hold + timeoutMs), counted as an outage, and the stream
    // threw a TimeoutError (after maxOutageMs: 60 s by default, about 80 s in) though the service was fine.
    await clock.advance(600_000);
    expect(streamPolls.get(id)?.sent ?? 0).toBe(0);
    await syncWorker.done(syncJob, { output: { n: "sync" } });
    expect(await syncing).toMatchObject({ id: syncJob, status: "COMPLETED" });
    await streamWorker.done(id, { output: {} });
    expect(await streamed).toEqual({
      outputs: [{ text: "a" }, { text: "b" }, { text: "c" }],
      ended: "COMPLETED",
    });
  });

  it("once admitted, gets its whole budget: the service's hold of it is not cut", async () => {
    const { jobs, clock, syncing, syncWorker, syncJob, streamWorker, id } = await slotHeldByRunSync();
    // The poll's budget: the service's 10 s hold plus timeoutMs, 30 s.
    const streamed = drain(jobs.stream(id, { maxOutageMs: 0, timeoutMs: 20_000, pollIntervalMs: 20 }));
    // All but 1 ms of that budget in the queue, on the client's clock.
    await clock.advance(29_999);
    // The slot is free: the poll is sent, and the service holds it (no chunk yet).
    await syncWorker.done(syncJob, { output: { n: "sync" } });
    expect(await syncing).toMatchObject({ id: syncJob, status: "COMPLETED" });
    await until(() => streamPolls.get(id)?.now === 1);
    // Before, the poll was sent with what its slot wait left of its budget (1 ms) and cut during
    // the hold: a TimeoutError (maxOutageMs: 0) instead of the chunk. Now its whole 30 s.
    await streamWorker.streamChunk(id, { text: "late" });
    await streamWorker.done(id, { output: {} });
    expect(await streamed).toEqual({ outputs: [{ text: "late" }], ended: "COMPLETED" });
  });

  it("ends with the caller's signal, saying every hold slot was busy and naming `connections`", async () => {
    const { jobs, syncing, syncWorker, syncJob, id } = await slotHeldByRunSync();
    const controller = new AbortController();
    const streamed = drain(jobs.stream(id, { signal: controller.signal }));
    controller.abort();
    const { outputs, ended } = await streamed;
    expect(outputs).toEqual([]);
    expect(ended).toBeInstanceOf(AbortedError);
    const error = ended as RunpodkitError;
    expect(error.toJSON()).toMatchObject({ operation: "jobs.stream", jobId: id, code: "ABORTED" });
    expect(error.message).toContain("aborted by the caller while the call waited to be sent");
    expect(error.message).toContain("1 call(s) the service holds");
    expect(error.message).toContain("raise `connections`");
    expect(streamPolls.get(id)?.sent ?? 0).toBe(0);
    await syncWorker.done(syncJob, { output: {} });
    expect(await syncing).toMatchObject({ status: "COMPLETED" });
  });
});

describe("more streams than hold slots (connections: 8, 10 streams)", () => {
  it("every stream gets its chunks, the ones past half the pool when a held poll ends, and a warning says once why", async () => {
    const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const jobs = clientOf(endpoint.id, { connections: 8 });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const workers: ProtocolWorker[] = [];
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) {
        const worker = new ProtocolWorker(h, endpoint.id, `w-${endpoint.id}-${i}`);
        const { id } = await jobs.run({ input: { i } });
        expect(((await worker.take()).body as { id: string }).id).toBe(id);
        workers.push(worker);
        ids.push(id);
      }
      const ended: unknown[] = [];
      const streams = ids.map((id, i) =>
        drain(jobs.stream(id)).then((result) => {
          ended[i] = result;
        }),
      );
      // Four polls (half of 8 sockets) are sent and held, the jobs having no chunk yet; six wait.
      await until(() => ids.filter((id) => streamPolls.get(id)?.now === 1).length === 4);
      const waiting = ids.filter((id) => streamPolls.get(id) === undefined);
      expect(waiting).toHaveLength(6);
      await until(() => warnings.some((w) => (w as { code?: string }).code === "RUNPODKIT_HOLD_SLOTS_FULL"));
      // Said once, naming the rule and the option; no error.
      const said = warnings.filter((w) => (w as { code?: string }).code === "RUNPODKIT_HOLD_SLOTS_FULL");
      expect(said).toHaveLength(1);
      expect(said[0]?.message).toContain("jobs.stream: a stream poll waits for a socket: 4 call(s)");
      expect(said[0]?.message).toContain("half its connections (8); raise `connections`");
      // The waiting streams' jobs have their chunk and end; their polls go once the held ones end.
      for (const id of waiting) {
        const i = ids.indexOf(id);
        await workers[i]?.streamChunk(id, { text: `c${i}` });
        await workers[i]?.done(id, { output: {} });
      }
      // The service's hold of the silent jobs' polls ends (its clock): their slots are given back.
      await (h.clock as ManualClock).advance(10_000);
      await until(() => waiting.every((id) => ended[ids.indexOf(id)] !== undefined));
      for (const id of waiting) {
        expect(ended[ids.indexOf(id)]).toEqual({
          outputs: [{ text: `c${ids.indexOf(id)}` }],
          ended: "COMPLETED",
        });
      }
      for (const [i, id] of ids.entries()) {
        if (!waiting.includes(id)) await workers[i]?.done(id, { output: {} });
      }
      await (h.clock as ManualClock).advance(10_000);
      await Promise.all(streams);
      expect(ended.map((result) => (result as { ended: unknown }).ended)).toEqual(
        new Array(10).fill("COMPLETED"),
      );
      expect(said).toHaveLength(1);
    } finally {
      process.off("warning", onWarning);
    }
  });
});

describe("hold slots with a dispatcher", () => {
  it("by default 32 whatever the dispatcher; the advice names maxHeldCalls, not the refused `connections`", async () => {
    // A service that holds every runsync: 32 are sent, the 33rd waits for a slot until its budget ends.
    const server = await startScriptedServer(() => undefined);
    const agent = new Agent();
    const clock = new ManualClock();
    const jobs = new JobClient({
      clock,
      apiKey: KEY,
      endpointId: "ep",
      baseUrl: `${server.url}/v2`,
      retries: 0,
      timeoutMs: 1_000,
      dispatcher: agent,
    });
    try {
      const heldCalls = Array.from({ length: 32 }, () =>
        jobs.runSync({ input: {} }, { wait: 300_000 }).catch((error: unknown) => error),
      );
      await until(() => server.hits.length === 32);
      const waiting = failure(jobs.runSync({ input: {} }, { wait: 1_000 }));
      await until(() => clock.pending === 1);
      await clock.advance(2_000);
      const error = await waiting;
      expect(error.toJSON()).toMatchObject({ code: "TIMEOUT", operation: "jobs.runSync" });
      expect(error.message).toContain("not sent (32 call(s) the service holds");
      // Before: "half its connections (64); raise `connections`", an option refused beside a dispatcher.
      expect(error.message).toContain("by default 32 with a dispatcher");
      expect(error.message).toContain("pass `maxHeldCalls`, below the dispatcher's connections per origin");
      expect(error.message).not.toContain("`connections`");
      expect(server.hits).toHaveLength(32);
      await jobs.close({ force: true });
      for (const settled of await Promise.all(heldCalls)) expect(settled).toMatchObject({ code: "ABORTED" });
    } finally {
      await jobs.close({ force: true });
      await server.close();
      await agent.close();
    }
  });

  it("maxHeldCalls sizes them under the dispatcher's sockets: a stream waits, run() is sent, the warning names it", async () => {
    // Two sockets: one for held calls, one always free for run(), status() and cancel(): the
    // dispatcher's other socket sends run() while the runSync holds the slot.
    const agent = new Agent({ connections: 2 });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const { jobs, syncing, syncWorker, syncJob, streamWorker, id } = await slotHeldByRunSync({
        dispatcher: agent,
        maxHeldCalls: 1,
      });
      await streamWorker.streamChunk(id, { text: "a" });
      const streamed = drain(jobs.stream(id, { pollIntervalMs: 20 }));
      await until(() => warnings.some((w) => (w as { code?: string }).code === "RUNPODKIT_HOLD_SLOTS_FULL"));
      // Before, maxHeldCalls was unknown and the slots were 32: the poll took the dispatcher's last socket.
      expect(streamPolls.get(id)?.sent ?? 0).toBe(0);
      const said = warnings.find((w) => (w as { code?: string }).code === "RUNPODKIT_HOLD_SLOTS_FULL");
      expect(said?.message).toContain("1 call(s) the service holds");
      expect(said?.message).toContain("(maxHeldCalls: 1); raise `maxHeldCalls`");
      expect(said?.message).not.toContain("`connections`");
      expect(await jobs.status(id)).toMatchObject({ id, status: "IN_PROGRESS" });
      await syncWorker.done(syncJob, { output: {} });
      expect(await syncing).toMatchObject({ id: syncJob, status: "COMPLETED" });
      await streamWorker.done(id, { output: {} });
      expect(await streamed).toEqual({ outputs: [{ text: "a" }], ended: "COMPLETED" });
    } finally {
      process.off("warning", onWarning);
      // The client (kept in `clients` by slotHeldByRunSync) before its dispatcher.
      await Promise.all(clients.splice(0).map((client) => client.close({ force: true })));
      await agent.close();
    }
  });

  it("refuses a maxHeldCalls it cannot use, naming it", () => {
    const base = { apiKey: KEY, endpointId: "ep", baseUrl: "http://127.0.0.1:1/v2" };
    for (const bad of [0, -1, 1.5, Number.NaN, "4", 1_025]) {
      expect(() => new JobClient({ ...base, maxHeldCalls: bad as number })).toThrow(
        expect.objectContaining({ code: "VALIDATION", field: "maxHeldCalls" }),
      );
    }
    // At or past connections, no socket would be left for run(), status() or cancel().
    expect(() => new JobClient({ ...base, connections: 4, maxHeldCalls: 4 })).toThrow(
      /maxHeldCalls \(4\) must be below connections \(4; 64 when not given\)/,
    );
    expect(() => new JobClient({ ...base, connections: 1, maxHeldCalls: 1 })).toThrow(
      expect.objectContaining({ field: "maxHeldCalls" }),
    );
    // Without connections, below the client's own pool of 64; with a dispatcher, the caller matches its size.
    expect(() => new JobClient({ ...base, maxHeldCalls: 64 })).toThrow(
      expect.objectContaining({ field: "maxHeldCalls" }),
    );
    const agent = new Agent();
    new JobClient({ ...base, maxHeldCalls: 63 }).close();
    new JobClient({ ...base, dispatcher: agent, maxHeldCalls: 100 }).close();
    void agent.close();
    new JobClient({ ...base, connections: 4, maxHeldCalls: 3 }).close();
  });
});

describe("connections: 1, the one socket held by a stream poll", () => {
  it("a plain call that times out behind it says so and names `connections`", async () => {
    const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const jobs = clientOf(endpoint.id, { connections: 1, timeoutMs: 1_000, retries: 0 });
    const worker = new ProtocolWorker(h, endpoint.id, `w-${endpoint.id}`);
    const { id } = await jobs.run({ input: {} });
    expect(((await worker.take()).body as { id: string }).id).toBe(id);
    const streamed = drain(jobs.stream(id));
    // The service holds the poll (no chunk, its clock still): the client's one socket is taken.
    await until(() => streamPolls.get(id)?.now === 1);
    // Before: "jobs.status: no reply within 1000 ms", nothing naming the socket or the option.
    const error = await failure(jobs.status(id));
    expect(error.toJSON()).toMatchObject({ code: "TIMEOUT", operation: "jobs.status", jobId: id });
    expect(error.message).toContain("jobs.status: no reply within 1000 ms");
    expect(error.message).toContain("`connections: 1`");
    expect(error.message).toContain("`connections: 2` or more");
    await worker.done(id, { output: {} });
    expect(await streamed).toEqual({ outputs: [], ended: "COMPLETED" });
    await jobs.close();
  });
});

describe("a stream poll waiting for a hold slot during an outage", () => {
  it("does not count the wait toward maxOutageMs: a failure after it goes on polling", async () => {
    // A scripted service: the stream's first poll is held and then a 503 (an outage begins), the
    // runSync queued behind it takes the slot, the second poll waits for it two minutes and is a 503
    // too, the third carries the chunk. The local service never answers 503 on purpose.
    const held: { poll?: ServerResponse; runSync?: ServerResponse } = {};
    let polls = 0;
    const server = await startScriptedServer((hit, res) => {
      if (hit.url.includes("/runsync")) {
        held.runSync = res;
        return;
      }
      polls++;
      if (polls === 1) held.poll = res;
      else if (polls === 2) json(res, 503, { error: "restarting" });
      else if (polls === 3) json(res, 200, { status: "COMPLETED", stream: [{ output: "x" }] });
      else json(res, 200, { status: "COMPLETED", stream: [] });
    });
    const clock = new ManualClock();
    const jobs = new JobClient({
      clock,
      apiKey: KEY,
      endpointId: "ep",
      baseUrl: `${server.url}/v2`,
      retries: 0,
      connections: 2,
      timeoutMs: 1_000,
    });
    try {
      const streamed = drain(jobs.stream("job-s", { maxOutageMs: 1_000, pollIntervalMs: 0 }));
      await until(() => held.poll !== undefined);
      const syncing = jobs.runSync({ input: {} }, { wait: 300_000 });
      json(held.poll as ServerResponse, 503, { error: "restarting" });
      // The runSync is sent once the failed poll gives the slot back; the stream then pauses 250 ms
      // (the clock's one timer).
      await until(() => held.runSync !== undefined && clock.pending === 1);
      await clock.advance(250);
      // The second poll waits for the slot the runSync holds: two minutes of the client's time.
      await clock.advance(120_000);
      expect(polls).toBe(1);
      json(held.runSync as ServerResponse, 200, { id: "job-r", status: "COMPLETED", output: {} });
      expect(await syncing).toMatchObject({ id: "job-r", status: "COMPLETED" });
      // Before, the outage counted the two minutes in the queue, and this 503 ended the stream; now
      // the stream pauses after it and polls on.
      let ended = false;
      void streamed.then(() => {
        ended = true;
      });
      await until(() => polls === 2 && (clock.pending === 1 || ended));
      await clock.advance(250);
      expect(await streamed).toEqual({ outputs: ["x"], ended: "COMPLETED" });
      expect(polls).toBe(4);
    } finally {
      await jobs.close({ force: true });
      await server.close();
    }
  });
});
