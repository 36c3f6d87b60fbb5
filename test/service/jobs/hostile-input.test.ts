import { afterEach, beforeEach, describe, expect, it } from "vitest";

const JSON_LIMITS = { depth: 64 };

import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { type Harness, KEY, startHarness } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

/** `{"a":{"a":...1...}}` nested `levels` deep, as text (JSON.stringify of such a value may overflow). */
const nestedObject = (levels: number, leaf = "1") => `${'{"a":'.repeat(levels)}${leaf}${"}".repeat(levels)}`;
const nestedArray = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;

/** Issue 10, findings 1 and 2: JSON values nested without bound, and a store write that cannot be made. */
describe("hostile JSON at the edge", () => {
  let h: Harness;
  let ep: EndpointRecord;

  beforeEach(async () => {
    h = await startHarness();
    ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
  });
  afterEach(async () => h.close());

  const alive = async () => {
    const health = await h.call("GET", `/v2/${ep.id}/health`);
    expect(health.status).toBe(200);
  };

  it("/run and /runsync with input nested 4,400 levels: 400 naming the limit, not 500", async () => {
    for (const path of ["run", "runsync"]) {
      const reply = await h.call("POST", `/v2/${ep.id}/${path}`, {
        raw: `{"input":${nestedObject(4_400)}}`,
      });
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({
        code: "VALIDATION",
        field: "input",
        error: `input nested deeper than ${JSON_LIMITS.depth} levels`,
      });
    }
    await alive();
  });

  it("a value just inside the depth bound is accepted", async () => {
    // Levels count from the member: `input` may itself hold JSON_LIMITS.depth levels.
    const fits = await h.call("POST", `/v2/${ep.id}/run`, {
      raw: `{"input":${nestedObject(JSON_LIMITS.depth)}}`,
    });
    expect(fits.status).toBe(200);
    const over = await h.call("POST", `/v2/${ep.id}/run`, {
      raw: `{"input":${nestedObject(JSON_LIMITS.depth + 1)}}`,
    });
    expect(over.status).toBe(400);
  });

  it("job-done with output nested 100,000 levels: 4xx, the job fails naming the refusal, the service keeps answering", async () => {
    const run = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { n: 1 } } });
    const id = (run.body as { id: string }).id;
    const worker = new ProtocolWorker(h, ep.id, "w-hostile");
    expect((await worker.take()).status).toBe(200);
    const done = await worker.done(id, `{"output":${nestedArray(100_000)}}`);
    expect(done.status).toBe(400);
    expect(done.body).toMatchObject({ code: "VALIDATION", field: "output" });
    expect((done.body as { error: string }).error).toBe(
      `output nested deeper than ${JSON_LIMITS.depth} levels`,
    );
    // Several flush turns later the service still answers. The worker library does not send a
    // refused result again: the job failed at once, saying why, and a later result changes nothing.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    await alive();
    const failed = {
      status: "FAILED",
      error: `the job's result was refused: output nested deeper than ${JSON_LIMITS.depth} levels (job-done answered 400)`,
    };
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject(failed);
    expect((await worker.done(id, { output: { ok: true } })).status).toBe(200);
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject(failed);
  });

  it("a worker's error of 3 MB is kept cut to its first 1 MiB, saying so; one of 1 MiB whole", async () => {
    const worker = new ProtocolWorker(h, ep.id, "w-long-error");
    const fail = async (error: string) => {
      const id = ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } })).body as { id: string })
        .id;
      await worker.take();
      expect((await worker.done(id, { error })).status).toBe(200);
      return (await h.call("GET", `/v2/${ep.id}/status/${id}`)).body as { status: string; error: string };
    };
    const max = 1024 * 1024;
    const long = await fail("e".repeat(3 * max));
    expect(long.status).toBe("FAILED");
    expect(long.error).toBe(
      `${"e".repeat(max)}… (cut: the error was ${3 * max} characters; the service keeps the first ${max})`,
    );
    expect((await fail("f".repeat(max))).error).toBe("f".repeat(max));
    // The Python library's error (the JSON text of an object, which the console and clients parse)
    // keeps its shape: each long string member is cut to its share, saying so.
    const payload = {
      error_type: "<class 'ValueError'>",
      error_message: "m".repeat(2 * max),
      worker_id: "w",
    };
    const shaped = await fail(JSON.stringify(payload));
    expect(shaped.error.length).toBeLessThanOrEqual(max + 1_000);
    const kept = JSON.parse(shaped.error) as typeof payload;
    expect(kept).toMatchObject({ error_type: payload.error_type, worker_id: "w" });
    expect(kept.error_message).toMatch(/^m+… \(cut: 2097152 characters; the service keeps the first \d+\)$/);
    await alive();
  });

  it("stream chunks, NaN bodies and progress updates are bounded the same way", async () => {
    const run = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } });
    const id = (run.body as { id: string }).id;
    const worker = new ProtocolWorker(h, ep.id, "w-hostile-2");
    await worker.take();
    const chunk = await worker.streamChunk(id, "x");
    expect(chunk.status).toBe(200);
    const deepChunk = await worker.done(id, `{"status":"IN_PROGRESS","output":${nestedArray(5_000)}}`);
    expect(deepChunk.status).toBe(400);
    // A refused progress update ends nothing (the library goes on with the job), its status key
    // first or last; a refused result (below) ends the job.
    const lastStatus = await worker.done(id, `{"output":${nestedArray(5_000)}, "status": 'IN_PROGRESS'}`);
    expect(lastStatus.status).toBe(400);
    const notJsonProgress = await worker.done(id, `{"status":"IN_PROGRESS","output":{`);
    expect(notJsonProgress.status).toBe(400);
    const badShapeProgress = await worker.done(id, { status: "IN_PROGRESS", stopPod: "yes" });
    expect(badShapeProgress.status).toBe(400);
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({ status: "IN_PROGRESS" });
    // The JSON5 path (NaN from Python) is bounded before it parses, not by a stack overflow.
    const deepNaN = await worker.done(id, `{"output":${"[".repeat(20_000)}NaN${"]".repeat(20_000)}}`);
    expect(deepNaN.status).toBe(400);
    expect((deepNaN.body as { error: string }).error).toContain(`nested deeper than ${JSON_LIMITS.depth}`);
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({ status: "FAILED" });
    await alive();
  });

  it("REST and GraphQL bodies and variables are bounded too", async () => {
    const deep = nestedObject(1_000);
    const rest = await h.call("POST", "/v1/templates", {
      raw: `{"name":"t","imageName":"i","env":${deep}}`,
      key: `Bearer ${KEY}`,
    });
    expect(rest.status).toBe(400);
    expect(rest.body).toMatchObject({ code: "VALIDATION", field: "env" });
    const gql = await h.call("POST", "/graphql", {
      raw: JSON.stringify({ query: "query { myself { id } }" }).replace(/}$/, `,"variables":{"v":${deep}}}`),
      key: `Bearer ${KEY}`,
    });
    expect(gql.status).toBe(400);
    expect(gql.body).toMatchObject({ errors: [{ extensions: { code: "VALIDATION", field: "variables" } }] });
    await alive();
  });
});

describe("the job store's background flush", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness();
  });
  afterEach(async () => h.close());

  it("a flush that throws is logged and the bad write dropped; the process lives and later writes land", async () => {
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const run = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } });
    const id = (run.body as { id: string }).id;
    expect((await new ProtocolWorker(h, ep.id, "w-flush").take()).status).toBe(200);
    const job = h.plane.book.find(id);
    if (!job) throw new Error("job not found");
    // A value no store can write (a cycle), past the edge's checks: the flush will throw on it.
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    h.plane.book.progress(job, cyclic);
    const unhandled: unknown[] = [];
    const onError = (error: unknown) => unhandled.push(error);
    process.on("uncaughtException", onError);
    process.on("unhandledRejection", onError);
    try {
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      h.plane.book.sweep(); // flushes synchronously, as the sweep timer does
    } finally {
      process.off("uncaughtException", onError);
      process.off("unhandledRejection", onError);
    }
    expect(unhandled).toEqual([]);
    expect(h.logs.some((line) => line.includes("job store") && line.includes(id))).toBe(true);
    const second = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { after: true } } });
    expect(second.status).toBe(200);
    const secondId = (second.body as { id: string }).id;
    expect(h.plane.store.isPending(secondId)).toBe(false);
    expect((await h.call("GET", `/v2/${ep.id}/health`)).status).toBe(200);
  });
});
