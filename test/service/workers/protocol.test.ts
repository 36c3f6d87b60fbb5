import { request } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ManualClock } from "../../../service/clock";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { eventually, type Harness, KEY, OTHER_KEY, startHarness } from "../jobs/harness";
import { ProtocolWorker } from "../jobs/protocol-worker";

/**
 * The worker side, spoken byte for byte as the real Python worker library does (docs/worker-protocol.md),
 * so a worker written for the real service works against this one.
 */
describe("worker protocol compatibility", () => {
  let h: Harness;
  let clock: ManualClock;
  let ep: EndpointRecord;
  let worker: ProtocolWorker;

  beforeEach(async () => {
    h = await startHarness();
    clock = h.clock as ManualClock;
    ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    worker = new ProtocolWorker(h, ep.id, "wpython1");
  });
  afterEach(async () => h.close());

  const run = async (body: object = { input: { q: 1 } }) =>
    ((await h.call("POST", `/v2/${ep.id}/run`, { body })).body as { id: string }).id;
  const status = async (id: string) =>
    (await h.call("GET", `/v2/${ep.id}/status/${id}`)).body as Record<string, unknown>;

  it("job-take hands over {id, input} plus webhook, s3Config and policy as the client sent them", async () => {
    const s3Config = { accessId: "a", accessSecret: "s", bucketName: "b", endpointUrl: "https://s3.example" };
    const id = await run({
      input: { prompt: "hi" },
      webhook: "http://127.0.0.1:9/hook",
      s3Config,
      policy: { executionTimeout: 60_000 },
    });
    const reply = await worker.take();
    expect(reply.status).toBe(200);
    expect(reply.headers["content-type"]).toMatch(/^application\/json/);
    expect(reply.body).toEqual({
      id,
      input: { prompt: "hi" },
      webhook: "http://127.0.0.1:9/hook",
      s3Config,
      policy: { executionTimeout: 60_000 },
    });
  });

  it("job-done bodies are read raw as JSON whatever the content-type, with unescaped UTF-8", async () => {
    const id = await run();
    await worker.take();
    expect((await worker.done(id, '{"output": {"answer": 42, "unicode": "héllo"}}')).status).toBe(200);
    expect(await status(id)).toMatchObject({ status: "COMPLETED", output: { answer: 42, unicode: "héllo" } });
  });

  it("tolerates Python's NaN and Infinity tokens", async () => {
    const id = await run();
    await worker.take();
    expect(
      (await worker.done(id, '{"output": {"v": NaN, "big": Infinity, "small": -Infinity}}')).status,
    ).toBe(200);
    expect(await status(id)).toMatchObject({
      status: "COMPLETED",
      output: { v: null, big: null, small: null },
    });
  });

  it("templates without `?`: parameters the library appends with `&` end up in the path and still work", async () => {
    const id = await run();
    const take = await request(`${h.url}/v2/${ep.id}/job-take/wnoquery&job_in_progress=0`, {
      headers: { authorization: KEY },
    });
    expect(JSON.parse(await take.body.text())).toMatchObject({ id });
    const done = await request(`${h.url}/v2/${ep.id}/job-done/wnoquery/${id}&isStream=false`, {
      method: "POST",
      headers: { authorization: KEY, "content-type": "application/x-www-form-urlencoded" },
      body: '{"output": "ok"}',
    });
    expect(done.statusCode).toBe(200);
    await done.body.dump();
    expect(await status(id)).toMatchObject({ status: "COMPLETED", output: "ok", workerId: "wnoquery" });
  });

  it("progress updates (job-done with status IN_PROGRESS) show as output while running, never after", async () => {
    const id = await run();
    await worker.take();
    await worker.progress(id, { step: 1, of: 3 });
    expect(await status(id)).toMatchObject({ status: "IN_PROGRESS", output: { step: 1, of: 3 } });
    await worker.done(id, { output: "final" });
    // A progress POST that arrives after the final result (ordering is not guaranteed) is dropped.
    await worker.progress(id, { step: 2, of: 3 });
    expect(await status(id)).toMatchObject({ status: "COMPLETED", output: "final" });
  });

  it("result shapes: {} completes with no output; an error string is kept verbatim; a dict error too", async () => {
    const empty = await run();
    const thrown = await run();
    const dictError = await run();
    await worker.takeBatch(3);
    await worker.done(empty, "{}");
    const pythonError = JSON.stringify({
      error_type: "<class 'ValueError'>",
      error_message: "bad",
      error_traceback: "Traceback...",
      hostname: "h",
      worker_id: "wpython1",
      runpod_version: "1.12.0",
    });
    await worker.done(thrown, { error: pythonError });
    await worker.done(dictError, { error: { reason: "quota" }, output: { partial: 1 } });
    expect(await status(empty)).toEqual(expect.objectContaining({ status: "COMPLETED" }));
    expect((await status(empty)).output).toBeUndefined();
    expect(await status(thrown)).toMatchObject({ status: "FAILED", error: pythonError });
    expect(await status(dictError)).toMatchObject({ status: "FAILED", error: '{"reason":"quota"}' });
  });

  it("job-take-batch returns an array of at most batch_size jobs; job-take returns one object", async () => {
    const ids = [await run(), await run(), await run()];
    const batch = await worker.takeBatch(2);
    expect((batch.body as { id: string }[]).map((j) => j.id)).toEqual(ids.slice(0, 2));
    const rest = await worker.takeBatch(5, true);
    expect((rest.body as { id: string }[]).map((j) => j.id)).toEqual(ids.slice(2));
  });

  it("job-take long-polls: held while there is nothing, answered at once when a job arrives, 204 after the hold", async () => {
    const pending = worker.take();
    await eventually(() =>
      h.plane.dispatcher.session(worker.endpointId, worker.id)?.take ? true : undefined,
    );
    const id = await run();
    expect((await pending).body).toMatchObject({ id });
    const empty = worker.take(true);
    await eventually(() =>
      h.plane.dispatcher.session(worker.endpointId, worker.id)?.take ? true : undefined,
    );
    await clock.advance(h.plane.config.pollHoldMs);
    expect((await empty).status).toBe(204);
  });

  it("a poll abandoned by its worker is dropped: the next job goes to a poll that is listening", async () => {
    const abort = new AbortController();
    const gone = request(`${h.url}/v2/${ep.id}/job-take/wgone?gpu=x&job_in_progress=0`, {
      headers: { authorization: KEY },
      signal: abort.signal,
    }).catch(() => "aborted");
    await eventually(() => (h.plane.dispatcher.session(ep.id, "wgone")?.take ? true : undefined));
    abort.abort();
    expect(await gone).toBe("aborted");
    await eventually(() => (h.plane.dispatcher.session(ep.id, "wgone")?.take ? undefined : true));
    const id = await run();
    expect((await worker.take()).body).toMatchObject({ id });
  });

  it("job-stop: 204 after the hold when nothing is to stop; {jobsToStop} for a cancelled job", async () => {
    const idle = worker.stopSignals();
    await eventually(() =>
      h.plane.dispatcher.session(worker.endpointId, worker.id)?.stopPoll ? true : undefined,
    );
    await clock.advance(h.plane.config.pollHoldMs);
    expect((await idle).status).toBe(204);
    const id = await run();
    await worker.take();
    const waiting = worker.stopSignals();
    await eventually(() =>
      h.plane.dispatcher.session(worker.endpointId, worker.id)?.stopPoll ? true : undefined,
    );
    await h.call("POST", `/v2/${ep.id}/cancel/${id}`);
    expect((await waiting).body).toEqual({ jobsToStop: [id] });
  });

  it("streaming: chunks on job-stream, then the final job-done with isStream=true; /stream drains them", async () => {
    const id = await run();
    await worker.take();
    await worker.streamChunk(id, { text: "a" });
    await worker.streamChunk(id, { text: "b" });
    expect((await h.call("GET", `/v2/${ep.id}/stream/${id}`)).body).toEqual({
      status: "IN_PROGRESS",
      stream: [{ output: { text: "a" } }, { output: { text: "b" } }],
    });
    await worker.streamChunk(id, { text: "c" });
    await worker.done(id, { output: [] }, true);
    expect((await h.call("GET", `/v2/${ep.id}/stream/${id}`)).body).toEqual({
      status: "COMPLETED",
      stream: [{ output: { text: "c" } }],
    });
    expect(await status(id)).toMatchObject({ status: "COMPLETED", output: [] });
  });

  it("a failing generator: chunks sent stay readable, /stream shows FAILED with the error", async () => {
    const id = await run();
    await worker.take();
    await worker.streamChunk(id, "first");
    await worker.done(id, { error: "handler: boom \ntraceback: ..." }, true);
    expect((await h.call("GET", `/v2/${ep.id}/stream/${id}`)).body).toEqual({
      status: "FAILED",
      stream: [{ output: "first" }],
      error: "handler: boom \ntraceback: ...",
    });
  });

  it("the job is named by the URL path, not by a stale X-Request-ID", async () => {
    const a = await run();
    const b = await run();
    await worker.takeBatch(2);
    const reply = await request(`${h.url}/v2/${ep.id}/job-done/${worker.id}/${b}?gpu=LOCAL&isStream=false`, {
      method: "POST",
      headers: { authorization: KEY, "content-type": "application/x-www-form-urlencoded", "x-request-id": a },
      body: '{"output": "for b"}',
    });
    await reply.body.dump();
    expect(await status(b)).toMatchObject({ status: "COMPLETED", output: "for b" });
    expect(await status(a)).toMatchObject({ status: "IN_PROGRESS" });
  });

  it("a job-take with job_in_progress=0 proves earlier jobs were lost: they are requeued, counted as retried", async () => {
    const id = await run();
    await worker.take();
    const again = await worker.take(false);
    expect(again.body).toMatchObject({ id });
    expect((await h.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({
      jobs: { retried: 1, inProgress: 1 },
    });
  });

  it("ping: 200 {} with job ids and version; an unhealthy report marks the worker", async () => {
    const ping = await worker.ping(["j1", "j2"]);
    expect(ping.status).toBe(200);
    expect(ping.body).toEqual({});
    expect(h.plane.dispatcher.session(worker.endpointId, worker.id)?.sdkVersion).toBe("1.12.0");
    await worker.ping([], "&status=unhealthy&check=memory&reason=low");
    expect((await h.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({ workers: { unhealthy: 1 } });
  });

  it("job-done for an unknown job is 404; a wrong key is 401; another account's key cannot act for this endpoint", async () => {
    expect((await worker.done("00000000-0000-0000-0000-000000000000-u1", { output: 1 })).status).toBe(404);
    expect((await new ProtocolWorker(h, ep.id, "wbad", "not-a-key").ping()).status).toBe(401);
    expect((await new ProtocolWorker(h, ep.id, "wother", OTHER_KEY).ping()).status).toBe(404);
    // A known worker's id with someone else's key: the same 404 as an id that exists nowhere (issue 10
    // finding 8; security/worker-ids.test.ts covers every route).
    await worker.ping();
    expect((await new ProtocolWorker(h, ep.id, worker.id, OTHER_KEY).ping()).status).toBe(404);
  });
});
