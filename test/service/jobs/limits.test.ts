import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ManualClock } from "../../../service/clock";
import { JOB_POLICY } from "../../../service/jobs/policy";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { ACCOUNT, eventually, type Harness, startHarness } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** The spec's Limits table, each row on the ManualClock. */
describe("job limits", () => {
  let h: Harness;
  let clock: ManualClock;
  let ep: EndpointRecord;
  let worker: ProtocolWorker;

  beforeEach(async () => {
    // A cold start of an hour: workers the scaler asks for stay "initializing", no process runs.
    // The protocol worker does not ping: it must not be taken for gone during days of clock time.
    h = await startHarness({
      config: {
        coldStartMs: 60 * MINUTE,
        scalerIntervalMs: 60 * MINUTE,
        sweepIntervalMs: 60 * MINUTE,
        externalWorkerTimeoutMs: 30 * DAY,
      },
    });
    clock = h.clock as ManualClock;
    ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    worker = new ProtocolWorker(h, ep.id, "w-limits");
  });
  afterEach(async () => h.close());

  const submit = async (body: object, path = "run") => {
    const reply = await h.call("POST", `/v2/${ep.id}/${path}`, { body });
    expect(reply.status).toBe(200);
    return (reply.body as { id: string }).id;
  };
  const status = (id: string) => h.call("GET", `/v2/${ep.id}/status/${id}`);
  const waiting = () => eventually(() => (h.plane.book.watchers.waiting > 0 ? true : undefined));

  it("/run payload: 10 MB accepted, above it 413 with a JSON message", async () => {
    const filler = (bytes: number) => "x".repeat(bytes - JSON.stringify({ input: { f: "" } }).length);
    const fits = await h.call("POST", `/v2/${ep.id}/run`, {
      body: { input: { f: filler(JOB_POLICY.runBodyBytes) } },
    });
    expect(fits.status).toBe(200);
    const over = await h.call("POST", `/v2/${ep.id}/run`, {
      body: { input: { f: filler(JOB_POLICY.runBodyBytes + 1) } },
    });
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      field: "body",
      error:
        "body: the request body is larger than the 10 MB this request may carry; pass larger inputs by URL, for the handler to fetch",
    });
  });

  it("/runsync payload: 20 MB accepted, above it 413 with a JSON message", async () => {
    const filler = (bytes: number) => "x".repeat(bytes - JSON.stringify({ input: { f: "" } }).length);
    const fits = h.call("POST", `/v2/${ep.id}/runsync?wait=1000`, {
      body: { input: { f: filler(JOB_POLICY.runsyncBodyBytes) } },
    });
    await waiting();
    await clock.advance(1_000);
    expect((await fits).status).toBe(200);
    const over = await h.call("POST", `/v2/${ep.id}/runsync`, {
      body: { input: { f: filler(JOB_POLICY.runsyncBodyBytes + 1) } },
    });
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      error: expect.stringMatching(
        /^body: the request body is larger than the 20 MB this request may carry;/,
      ),
    });
  });

  it("an empty /stream poll is answered within 9 s, under the official Python client's 10 s read timeout", async () => {
    const id = await submit({ input: {} });
    await worker.take();
    let answered = false;
    const poll = h.call("GET", `/v2/${ep.id}/stream/${id}`).then((reply) => {
      answered = true;
      return reply;
    });
    // The poll is held (its wait registered) before the clock moves.
    await eventually(() => (h.plane.book.watchers.waiting > 0 ? true : undefined));
    await clock.advance(8_999);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(answered).toBe(false);
    await clock.advance(1);
    expect((await poll).body).toEqual({ status: "IN_PROGRESS", stream: [] });
  });

  it("streamed chunk: at most 1 MB, a larger output is split into several chunks", async () => {
    const id = await submit({ input: {} });
    await worker.take();
    const big = "é".repeat(1_300_000); // 2.6 MB of UTF-8
    await worker.streamChunk(id, big);
    await worker.streamChunk(id, { small: true });
    // A chunk's metrics (spec: "may have metrics") are kept; not an object, they are dropped.
    await worker.streamBody(id, { output: "m", metrics: { stream_index: 2, scenario: "x" } });
    await worker.streamBody(id, { output: "n", metrics: 7 });
    const reply = await h.call("GET", `/v2/${ep.id}/stream/${id}`);
    const { stream } = reply.body as { stream: { output: unknown }[] };
    expect(stream.slice(4)).toEqual([
      { output: "m", metrics: { stream_index: 2, scenario: "x" } },
      { output: "n" },
    ]);
    stream.splice(4);
    expect(stream.length).toBe(4);
    for (const chunk of stream)
      expect(Buffer.byteLength(JSON.stringify(chunk.output))).toBeLessThanOrEqual(
        JOB_POLICY.streamChunkBytes,
      );
    expect(
      stream
        .slice(0, 3)
        .map((c) => c.output)
        .join(""),
    ).toBe(big);
    expect(stream[3]).toEqual({ output: { small: true } });
  });

  it("streamed chunk: an array whose one item is over 1 MB is split too, as pieces of its JSON text", async () => {
    const id = await submit({ input: {} });
    await worker.take();
    // A list of one base64-like image of 1.5 MB: a sub-array of that item alone was one 1.5 MB chunk.
    const image = "x".repeat(1_500_000);
    await worker.streamChunk(id, [image]);
    await worker.streamChunk(id, [1, 2, 3]);
    const reply = await h.call("GET", `/v2/${ep.id}/stream/${id}`);
    const { stream } = reply.body as { stream: { output: unknown }[] };
    expect(stream.length).toBe(3);
    for (const chunk of stream)
      expect(Buffer.byteLength(JSON.stringify(chunk.output))).toBeLessThanOrEqual(
        JOB_POLICY.streamChunkBytes,
      );
    const pieces = stream.slice(0, 2).map((chunk) => chunk.output);
    expect(pieces.every((piece) => typeof piece === "string")).toBe(true);
    expect(JSON.parse(pieces.join(""))).toEqual([image]);
    // An array whose items fit is still cut into sub-arrays (here it needs no cut at all).
    expect(stream[2]).toEqual({ output: [1, 2, 3] });
  });

  it("streamed chunk: its metrics count in the 1 MB and in the memory budget; metrics over 64 KiB are dropped", async () => {
    const id = await submit({ input: {} });
    await worker.take();
    const base = h.plane.memory.used;
    // A worker's own metrics of 3 MB: one /stream chunk of 3 MB before, held outside the budget.
    expect(
      (await worker.streamBody(id, { output: "tok", metrics: { pad: "m".repeat(3_000_000) } })).status,
    ).toBe(200);
    expect(h.plane.memory.used - base).toBe(5);
    // Metrics that fit are kept, with the output cut so that the chunk, metrics included, is 1 MB at most.
    const metrics = { scenario: "s".repeat(10_000), stream_index: 1 };
    const text = "t".repeat(JOB_POLICY.streamChunkBytes);
    await worker.streamBody(id, { output: text, metrics });
    const metricsBytes = JSON.stringify(metrics).length;
    // Two pieces of the text (each quoted) and the metrics.
    expect(h.plane.memory.used - base).toBe(5 + text.length + 4 + metricsBytes);
    const reply = await h.call("GET", `/v2/${ep.id}/stream/${id}`);
    const { stream } = reply.body as { stream: { output: unknown; metrics?: unknown }[] };
    expect(stream[0]).toEqual({ output: "tok" });
    expect(stream.length).toBe(3);
    for (const chunk of stream) {
      const bytes =
        Buffer.byteLength(JSON.stringify(chunk.output)) +
        Buffer.byteLength(JSON.stringify(chunk.metrics ?? {}));
      expect(bytes).toBeLessThanOrEqual(JOB_POLICY.streamChunkBytes);
    }
    expect(
      stream
        .slice(1)
        .map((chunk) => chunk.output)
        .join(""),
    ).toBe(text);
    expect(stream.map((chunk) => chunk.metrics)).toEqual([undefined, undefined, metrics]);
  });

  it("wait: default 90000 ms", async () => {
    const pending = h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: {} } });
    await waiting();
    await clock.advance(89_999);
    let settled = false;
    void pending.then(() => {
      settled = true;
    });
    await clock.advance(0);
    expect(settled).toBe(false);
    await clock.advance(1);
    expect((await pending).body).toMatchObject({ status: "IN_QUEUE" });
  });

  it("wait: up to 300000 ms", async () => {
    const pending = h.call("POST", `/v2/${ep.id}/runsync?wait=300000`, { body: { input: {} } });
    await waiting();
    await clock.advance(299_000);
    const id = (h.plane.book.liveJobs(ep.id)[0] as { id: string }).id;
    await worker.take();
    await worker.done(id, { output: "in time" });
    expect((await pending).body).toMatchObject({ status: "COMPLETED", output: "in time" });
  });

  it("result retention, async: 30 minutes after completion (not after submission)", async () => {
    const id = await submit({ input: {} });
    await clock.advance(10 * MINUTE);
    await worker.take();
    await worker.done(id, { output: 1 });
    await clock.advance(30 * MINUTE - 1);
    expect((await status(id)).status).toBe(200);
    await clock.advance(1);
    expect((await status(id)).status).toBe(404);
  });

  it("result retention, sync: 1 minute after completion", async () => {
    const pending = h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: {} } });
    await waiting();
    const id = (h.plane.book.liveJobs(ep.id)[0] as { id: string }).id;
    await worker.take();
    await worker.done(id, { output: 1 });
    expect((await pending).body).toMatchObject({ status: "COMPLETED" });
    await clock.advance(MINUTE - 1);
    expect((await status(id)).status).toBe(200);
    await clock.advance(1);
    expect((await status(id)).status).toBe(404);
    expect((await h.call("POST", `/v2/${ep.id}/retry/${id}`)).status).toBe(404);
  });

  it("executionTimeout: default 600000 ms (10 minutes)", async () => {
    const id = await submit({ input: {} });
    await worker.take();
    await clock.advance(600_000 - 1);
    expect((await status(id)).body).toMatchObject({ status: "IN_PROGRESS" });
    await clock.advance(1);
    expect((await status(id)).body).toMatchObject({ status: "TIMED_OUT" });
  });

  it("executionTimeout: the endpoint's default applies when the policy sets none", async () => {
    const short = h.endpoint("runpodkit/echo", { workersMax: 0, executionTimeoutMs: 30_000 });
    const w = new ProtocolWorker(h, short.id, "w-short");
    const id = ((await h.call("POST", `/v2/${short.id}/run`, { body: { input: {} } })).body as { id: string })
      .id;
    await w.take();
    await clock.advance(30_000);
    expect((await h.call("GET", `/v2/${short.id}/status/${id}`)).body).toMatchObject({ status: "TIMED_OUT" });
  });

  it("executionTimeout: min 5 s and max 7 days are accepted", async () => {
    expect(
      (await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {}, policy: { executionTimeout: 5_000 } } }))
        .status,
    ).toBe(200);
    expect(
      (
        await h.call("POST", `/v2/${ep.id}/run`, {
          body: { input: {}, policy: { executionTimeout: 7 * DAY } },
        })
      ).status,
    ).toBe(200);
  });

  it("ttl: default 24 hours", async () => {
    const id = await submit({ input: {} });
    await clock.advance(DAY - 1);
    expect((await status(id)).status).toBe(200);
    await clock.advance(1);
    expect((await status(id)).status).toBe(404);
  });

  it("ttl covers queue and execution: 7 days, 2 queued, leaves 5 to run", async () => {
    const id = await submit({ input: {}, policy: { ttl: 7 * DAY, executionTimeout: 7 * DAY } });
    await clock.advance(2 * DAY);
    await worker.take();
    await clock.advance(5 * DAY - 1);
    expect((await status(id)).body).toMatchObject({ status: "IN_PROGRESS" });
    await clock.advance(1);
    expect((await status(id)).status).toBe(404);
  });

  it("ttl on /status resets the job's lifetime from submission", async () => {
    const id = await submit({ input: {} });
    await clock.advance(5 * MINUTE);
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}?ttl=600000`)).status).toBe(200);
    await clock.advance(5 * MINUTE - 1);
    expect((await status(id)).status).toBe(200);
    await clock.advance(1);
    expect((await status(id)).status).toBe(404);
  });

  it("lowPriority: default false (a job starts a worker); a lowPriority job never does", async () => {
    const scaled = h.endpoint("runpodkit/echo", { workersMax: 2 });
    const pods = () => h.plane.workers.list(ACCOUNT, scaled.id).filter((p) => p.desiredStatus === "RUNNING");
    await h.call("POST", `/v2/${scaled.id}/run`, { body: { input: {}, policy: { lowPriority: true } } });
    await clock.advance(10 * MINUTE);
    expect(pods()).toEqual([]);
    await h.call("POST", `/v2/${scaled.id}/run`, { body: { input: {} } });
    await clock.advance(0);
    expect(pods().map((p) => p.state)).toEqual(["initializing"]);
  });
});
