import Fastify from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { openDatabase } from "../../../service/db";
import { Accounts } from "../../../service/edge/auth";
import { installErrorHandling } from "../../../service/edge/errors";
import { EventBus } from "../../../service/event-bus";
import { createSequentialIds } from "../../../service/ids";
import { JobPlane } from "../../../service/jobs/plane";
import { jobMigrations } from "../../../service/jobs/store/job-store";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import type { ServiceEvents } from "../../../service/planes";
import { ACCOUNT, type Harness, KEY, OTHER_KEY, startHarness } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

/** Every operation of the queue API, with a placeholder job id where it takes one. */
const QUEUE_OPERATIONS = [
  ["POST", "run"],
  ["POST", "runsync"],
  ["GET", "status/x"],
  ["GET", "stream/x"],
  ["POST", "cancel/x"],
  ["POST", "retry/x"],
  ["POST", "purge-queue"],
  ["GET", "health"],
] as const;

/** The spec's Errors table and "other conditions", over HTTP. */
describe("job API errors", () => {
  let h: Harness;
  let ep: EndpointRecord;

  beforeEach(async () => {
    h = await startHarness();
    ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
  });
  afterEach(async () => h.close());

  const run = (body: unknown, key?: string | null) => h.call("POST", `/v2/${ep.id}/run`, { body, key });

  describe("400: bad request, naming the field", () => {
    it.each([
      ["input missing", {}, "input"],
      ["input not an object", { input: "text" }, "input"],
      [
        "executionTimeout below 5 s",
        { input: {}, policy: { executionTimeout: 4_999 } },
        "policy.executionTimeout",
      ],
      [
        "executionTimeout above 7 days",
        { input: {}, policy: { executionTimeout: 7 * 86_400_000 + 1 } },
        "policy.executionTimeout",
      ],
      ["ttl below 10 s", { input: {}, policy: { ttl: 9_999 } }, "policy.ttl"],
      ["ttl above 7 days", { input: {}, policy: { ttl: 7 * 86_400_000 + 1 } }, "policy.ttl"],
      ["lowPriority not boolean", { input: {}, policy: { lowPriority: "yes" } }, "policy.lowPriority"],
      ["webhook not a URL", { input: {}, webhook: "not a url" }, "webhook"],
      ["webhook without a scheme", { input: {}, webhook: "localhost:3000/webhook" }, "webhook"],
      ["webhook of another scheme", { input: {}, webhook: "ftp://example.com/hook" }, "webhook"],
      ["webhook of a file", { input: {}, webhook: "file:///etc/passwd" }, "webhook"],
      ["webhook misspelt scheme", { input: {}, webhook: "htp://example.com/hook" }, "webhook"],
      [
        "webhook host past DNS's 253 characters",
        { input: {}, webhook: `https://${"a".repeat(254)}/h` },
        "webhook",
      ],
      [
        "webhook over 2048 characters",
        { input: {}, webhook: `https://example.com/${"p".repeat(2030)}` },
        "webhook",
      ],
      ["s3Config incomplete", { input: {}, s3Config: { accessId: "a" } }, "s3Config.accessSecret"],
    ])("%s", async (_name, body, field) => {
      const reply = await run(body);
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ code: "VALIDATION", field, error: expect.stringContaining(field) });
    });

    it("a webhook of 2048 characters with a 253-character host is kept", async () => {
      const host = `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}`;
      const webhook = `https://${host}/${"p".repeat(2048 - 9 - host.length)}`;
      expect([host.length, webhook.length]).toEqual([253, 2048]);
      expect((await run({ input: {}, webhook })).status).toBe(200);
    });

    it("wait outside 1000..300000 on /runsync", async () => {
      for (const wait of [999, 300_001, "soon"]) {
        const reply = await h.call("POST", `/v2/${ep.id}/runsync?wait=${wait}`, { body: { input: {} } });
        expect(reply.status).toBe(400);
        expect(reply.body).toMatchObject({ code: "VALIDATION", field: "wait" });
      }
    });

    it("ttl outside 10 s..7 days on /status", async () => {
      const id = ((await run({ input: {} })).body as { id: string }).id;
      const reply = await h.call("GET", `/v2/${ep.id}/status/${id}?ttl=5`);
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ field: "ttl" });
    });

    it("ttl, wait, limit and batch_size only as digits: no hex, exponent, spaces, decimals or empty value", async () => {
      const id = ((await run({ input: {} })).body as { id: string }).id;
      for (const ttl of ["0x2710", "1e5", "%2010000%20", "10000.0", "0b10011100010000", ""]) {
        const reply = await h.call("GET", `/v2/${ep.id}/status/${id}?ttl=${ttl}`);
        const shown = JSON.stringify(decodeURIComponent(ttl));
        expect(reply.status).toBe(400);
        expect(reply.body).toMatchObject({
          code: "VALIDATION",
          field: "ttl",
          message: `ttl: expected a whole number written in digits (10000 to 604800000), received ${shown}`,
        });
      }
      // The job is as it was: no ttl was set by any of them.
      expect((await h.call("GET", `/v2/${ep.id}/status/${id}?ttl=600000`)).status).toBe(200);
      const wait = await h.call("POST", `/v2/${ep.id}/runsync?wait=1e4`, { body: { input: {} } });
      expect(wait.body).toMatchObject({
        field: "wait",
        message: 'wait: expected a whole number written in digits (1000 to 300000), received "1e4"',
      });
      const limit = await h.call("GET", `/v2/${ep.id}/logs?limit=0x10`);
      expect(limit.status).toBe(400);
      expect(limit.text).toContain(
        'expected a whole number written in digits (1 to 10000), received \\"0x10\\"',
      );
      const jobs = await h.call("GET", `/v2/${ep.id}/jobs?limit=5.0`);
      expect(jobs.status).toBe(400);
      expect(jobs.text).toContain('received \\"5.0\\"');
    });

    it("malformed JSON", async () => {
      const reply = await h.call("POST", `/v2/${ep.id}/run`, { raw: '{"input": ' });
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ code: "VALIDATION" });
    });

    it('a key named "__proto__" is refused as such, not as "not valid JSON" (fast path and Fastify, REST too)', async () => {
      const said = 'body: a key named "__proto__" is not accepted; rename it';
      for (const [path, raw] of [
        [`/v2/${ep.id}/run`, '{"input": {"a": {"__proto__": 1}}}'],
        [`/v2/${ep.id}/runsync?wait=1000`, '{"input": {"__proto__" : {}}}'],
        ["/v1/templates", '{"name": "p", "imageName": "i", "env": {"__proto__": "x"}}'],
      ] as const) {
        const reply = await h.call("POST", path, { raw });
        expect(reply.status, path).toBe(400);
        // The job API's error shape has `error`, REST's `message` (as the real ones).
        expect(reply.body, path).toMatchObject({ code: "VALIDATION", field: "body" });
        expect(reply.text, path).toContain(JSON.stringify(said).slice(1, -1));
      }
    });
  });

  describe("401: a missing or wrong key", () => {
    it("the key works with and without `Bearer `", async () => {
      expect((await run({ input: {} }, KEY)).status).toBe(200);
      expect((await run({ input: {} }, `Bearer ${KEY}`)).status).toBe(200);
    });

    it("a wrong or missing key is 401 on every operation, and the key is never echoed", async () => {
      const wrong = "rpk_wrong_key_abcdef";
      for (const [method, path] of QUEUE_OPERATIONS) {
        for (const key of [wrong, null]) {
          const reply = await h.call(method, `/v2/${ep.id}/${path}`, { key, body: { input: {} } });
          expect(reply.status).toBe(401);
          expect(reply.body).toMatchObject({ code: "UNAUTHORIZED" });
          expect(reply.text).not.toContain(wrong);
        }
      }
    });
  });

  describe("404: not found", () => {
    it("a wrong endpoint id", async () => {
      const reply = await h.call("POST", "/v2/nosuchendpoint1/run", { body: { input: {} } });
      expect(reply.status).toBe(404);
      expect(reply.body).toMatchObject({ code: "NOT_FOUND" });
    });

    it("another account's endpoint, and another account's job on it", async () => {
      const id = ((await run({ input: {} })).body as { id: string }).id;
      expect((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} }, key: OTHER_KEY })).status).toBe(
        404,
      );
      expect((await h.call("GET", `/v2/${ep.id}/status/${id}`, { key: OTHER_KEY })).status).toBe(404);
      const theirs = h.endpoint("runpodkit/echo", { workersMax: 0 }, OTHER_KEY);
      // Their endpoint, our job id: still not found.
      expect((await h.call("GET", `/v2/${theirs.id}/status/${id}`, { key: OTHER_KEY })).status).toBe(404);
    });

    it("an unknown job, and a job of another endpoint of the same account", async () => {
      expect(
        (await h.call("GET", `/v2/${ep.id}/status/00000000-0000-0000-0000-000000000000-u1`)).status,
      ).toBe(404);
      const other = h.endpoint("runpodkit/echo", { workersMax: 0 });
      const id = ((await run({ input: {} })).body as { id: string }).id;
      expect((await h.call("GET", `/v2/${other.id}/status/${id}`)).status).toBe(404);
    });

    it("an unknown job names the job id and the endpoint, with the field, as the job API's 400s do", async () => {
      const unknown = "00000000-0000-0000-0000-000000000000-u1";
      for (const [method, path] of [
        ["GET", `status/${unknown}`],
        ["POST", `status/${unknown}`],
        ["GET", `status-sync/${unknown}`],
        ["GET", `stream/${unknown}`],
        ["POST", `cancel/${unknown}`],
        ["POST", `retry/${unknown}`],
      ] as const) {
        const reply = await h.call(method, `/v2/${ep.id}/${path}`);
        expect(reply.status).toBe(404);
        expect(reply.body).toMatchObject({
          code: "NOT_FOUND",
          field: "jobId",
          error: expect.stringContaining(`job ${unknown} not found on endpoint ${ep.id}`),
          message: expect.stringContaining(`job ${unknown} not found on endpoint ${ep.id}`),
        });
      }
      const endpoint = await h.call("GET", `/v2/nosuchendpoint1/status/${unknown}`);
      expect(endpoint.status).toBe(404);
      expect(endpoint.body).toMatchObject({
        code: "NOT_FOUND",
        field: "endpointId",
        error: "endpoint nosuchendpoint1 not found",
      });
    });

    it("a worker's job-done and job-stream for an unknown job name the field, as the client routes' 404 does", async () => {
      const unknown = "00000000-0000-0000-0000-000000000000-u1";
      const worker = new ProtocolWorker(h, ep.id, "w-unknown-job");
      for (const reply of [
        await worker.done(unknown, { output: "late" }),
        await worker.progress(unknown, "half"),
        await worker.streamChunk(unknown, "chunk"),
      ]) {
        expect(reply.status).toBe(404);
        expect(reply.body).toMatchObject({
          code: "NOT_FOUND",
          field: "jobId",
          error: `job ${unknown} not found`,
        });
      }
    });

    it("an unknown route under /v2 answers JSON", async () => {
      const reply = await h.call("GET", `/v2/${ep.id}/nope`);
      expect(reply.status).toBe(404);
      expect(reply.body).toMatchObject({ code: "NOT_FOUND" });
    });
  });

  it("load-balancing endpoints answer every queue operation with 400 UNSUPPORTED", async () => {
    const lb = h.endpoint("runpodkit/echo", { type: "LB", workersMax: 0 });
    for (const [method, path] of QUEUE_OPERATIONS) {
      const reply = await h.call(method, `/v2/${lb.id}/${path}`, { body: { input: {} } });
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({
        code: "UNSUPPORTED",
        error: expect.stringContaining("load-balancing"),
      });
    }
  });

  // /openai/* (in the rate table too) is a real route now: openai-route.test.ts.
  it("/requests (in the rate table, shapes not shown) answers 501 by name, after its limits", async () => {
    for (let i = 0; i < 10; i++) {
      const reply = await h.call("GET", `/v2/${ep.id}/requests`);
      expect(reply.status).toBe(501);
      expect(reply.body).toMatchObject({
        code: "NOT_IMPLEMENTED",
        error: expect.stringContaining("/requests"),
      });
    }
    expect((await h.call("GET", `/v2/${ep.id}/requests`)).status).toBe(429);
  });

  it("no worker available (max workers 0): the job stays IN_QUEUE", async () => {
    const id = ((await run({ input: {} })).body as { id: string }).id;
    await (h.clock as ManualClock).advance(60 * 60_000);
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toEqual({
      id,
      status: "IN_QUEUE",
      delayTime: 60 * 60_000,
      executionTime: 0,
    });
  });

  it("worker error or invalid input: the job ends FAILED with the worker's error verbatim", async () => {
    const worker = new ProtocolWorker(h, ep.id, "w-err");
    const id = ((await run({ input: {} })).body as { id: string }).id;
    await worker.take();
    const error = JSON.stringify({ error_type: "<class 'ValueError'>", error_message: "bad input" });
    await worker.done(id, { error });
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
      status: "FAILED",
      error,
    });
  });

  it("a deleted endpoint takes its jobs with it", async () => {
    const gone = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = ((await h.call("POST", `/v2/${gone.id}/run`, { body: { input: {} } })).body as { id: string })
      .id;
    h.management.endpoints.delete(ACCOUNT, gone.id);
    expect((await h.call("GET", `/v2/${gone.id}/status/${id}`)).status).toBe(404);
    expect(h.plane.store.get(id)).toBeUndefined();
  });
});

describe("500: an unexpected failure", () => {
  it("answers a JSON body without internals", async () => {
    const db = openDatabase(":memory:", jobMigrations);
    const plane = new JobPlane({
      db,
      clock: new ManualClock(),
      ids: createSequentialIds(),
      accounts: new Accounts([KEY]),
      events: new EventBus<ServiceEvents>(),
      endpoints: {
        get: () => {
          throw new Error("disk on fire at /secret/path");
        },
        listAll: () => [],
      },
      secrets: { resolveEnv: (_, env) => ({ ok: true, env }) },
      usage: { started: () => {}, stopped: () => {}, checkpoint: () => {} },
      log: () => {},
    });
    const app = Fastify({ logger: false });
    installErrorHandling(app);
    await app.register(plane.routes, { prefix: "/v2" });
    const reply = await app.inject({ method: "GET", url: "/v2/ep/health", headers: { authorization: KEY } });
    expect(reply.statusCode).toBe(500);
    expect(reply.json()).toEqual({
      error: "Internal server error",
      message: "Internal server error",
      code: "INTERNAL",
    });
    await app.close();
    await plane.stop();
    db.close();
  });
});
