import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import type { ManualClock } from "../../../service/clock";
import { DEFAULT_RATE_LIMIT_OPTIONS } from "../../../service/jobs/client/rate-limit";
import { OPENAI_WAIT_MS } from "../../../service/jobs/http/openai-route";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { eventually, type Harness, KEY, startHarness } from "./harness";

/**
 * /v2/{id}/openai/*: an OpenAI-style request made a job ({openai_route, openai_input}, as
 * worker-vllm reads it), answered when the job ends, through plain fetch and the official `openai`
 * client, with real handler modules on real workers.
 */
const PLAIN = resolve("test/service/jobs/fixtures/openai/plain-handler.ts");
const VLLM_LIKE = resolve("test/service/jobs/fixtures/openai/vllm-like-handler.ts");

let h: Harness;
let plain: EndpointRecord;
let vllm: EndpointRecord;
let dir: string;
beforeAll(async () => {
  h = await startHarness({
    config: { handlers: { "acme/openai-plain": PLAIN, "acme/openai-vllm": VLLM_LIKE } },
  });
  plain = h.endpoint("acme/openai-plain");
  vllm = h.endpoint("acme/openai-vllm");
  dir = mkdtempSync(join(tmpdir(), "openai-route-"));
});
afterAll(async () => {
  await h?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const base = (endpointId: string) => `${h.url}/v2/${endpointId}/openai/v1`;
const client = (endpointId: string) => new OpenAI({ apiKey: KEY, baseURL: base(endpointId) });
const post = (endpointId: string, path: string, body: unknown) =>
  fetch(`${base(endpointId)}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

/** The `data:` payloads of an SSE text, in order. */
const dataOf = (text: string): string[] =>
  text
    .split("\n\n")
    .filter((event) => event.startsWith("data: "))
    .map((event) => event.slice("data: ".length));

const CHAT = { model: "local-model", messages: [{ role: "user" as const, content: "hello local world" }] };

/**
 * The words the openai client reads from a streamed chat completion of `endpointId` (`body` on top of
 * CHAT), and what it raised while iterating (null when the stream ended well).
 */
async function streamedWords(
  endpointId: string,
  body: Record<string, unknown>,
): Promise<{ parts: string[]; failure: unknown }> {
  const stream = await client(endpointId).chat.completions.create({
    ...CHAT,
    ...body,
    stream: true,
  } as typeof CHAT & { stream: true });
  const parts: string[] = [];
  try {
    for await (const chunk of stream) parts.push(chunk.choices[0]?.delta.content ?? "");
    return { parts, failure: null };
  } catch (caught) {
    return { parts, failure: caught };
  }
}

describe("a plain handler's OpenAI reply", () => {
  it("fetch, not streamed: 200 with the handler's object as the body", async () => {
    const reply = await post(plain.id, "/chat/completions", CHAT);
    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await reply.json()) as { object: string; choices: { message: { content: string } }[] };
    expect(body.object).toBe("chat.completion");
    // The handler read openai_route (/v1/chat/completions) and openai_input (the messages).
    expect(body.choices[0]?.message.content).toBe("HELLO LOCAL WORLD");
  });

  it("the openai client: chat completion, the model list (GET), and stream: true", async () => {
    const openai = client(plain.id);
    const completion = await openai.chat.completions.create(CHAT);
    expect(completion.choices[0]?.message.content).toBe("HELLO LOCAL WORLD");
    const models = await openai.models.list();
    expect(models.data.map((model) => model.id)).toEqual(["local-model"]);
    // A plain handler streams nothing: its returned object is the one event.
    expect(await streamedWords(plain.id, {})).toEqual({ parts: ["HELLO LOCAL WORLD"], failure: null });
  });

  it("fetch, stream: true: text/event-stream, the object as one event, then [DONE]", async () => {
    const reply = await post(plain.id, "/chat/completions", { ...CHAT, stream: true });
    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const data = dataOf(await reply.text());
    expect(data).toHaveLength(2);
    expect(JSON.parse(data[0] ?? "")).toMatchObject({ object: "chat.completion.chunk" });
    expect(data[1]).toBe("[DONE]");
  });
});

describe("a generator handler shaped as worker-vllm", () => {
  it("not streamed: its single yield is the body (the aggregate output's one item)", async () => {
    const completion = await client(vllm.id).chat.completions.create(CHAT);
    expect(completion.object).toBe("chat.completion");
    expect(completion.choices[0]?.message.content).toBe("hello local world");
  });

  it("the openai client streams both raw SSE text yields and JSON chunk yields", async () => {
    for (const model of ["raw", "json"]) {
      expect(await streamedWords(vllm.id, { model }), model).toEqual({
        parts: ["hello", " local", " world"],
        failure: null,
      });
    }
  });

  it("fetch reads the SSE chunk by chunk, each as the handler yields it; [DONE] once", async () => {
    for (const model of ["raw", "json"]) {
      const gate = join(dir, `gate-${model}`);
      const reply = await post(vllm.id, "/chat/completions", { ...CHAT, model, stream: true, gate });
      expect(reply.status).toBe(200);
      const reader = (reply.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let text = "";
      // The handler holds its second word until the gate opens: the first event arrives alone.
      while (!text.includes("\n\n")) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      const first = dataOf(text);
      expect(first).toHaveLength(1);
      expect(JSON.parse(first[0] ?? "")).toMatchObject({ choices: [{ delta: { content: "hello" } }] });
      writeFileSync(gate, "");
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      const data = dataOf(text);
      expect(data.slice(0, 3).map((item) => JSON.parse(item).choices[0].delta.content)).toEqual([
        "hello",
        " local",
        " world",
      ]);
      expect(data.slice(3), model).toEqual(["[DONE]"]);
    }
  });
});

describe("a streamed chunk over /stream's 1 MB chunk bound", () => {
  // The service splits such a chunk into pieces of its JSON text for /stream; this route writes it
  // whole: one `data: <json>` event. 5.2 MB spans two of /stream's 4 MB hand-outs.
  it("is one well-formed event (a bare object, and a list of one), fetch and the openai client", async () => {
    for (const [big, bigIn] of [
      [800_000, undefined],
      [2_600_000, "list"],
    ] as const) {
      const request = { ...CHAT, model: "json", stream: true, big, bigIn };
      const reply = await post(vllm.id, "/chat/completions", request);
      expect(reply.status).toBe(200);
      const text = await reply.text();
      const data = dataOf(text);
      expect(text.split("\n\n").filter(Boolean), `${big}`).toHaveLength(2);
      expect(data[1]).toBe("[DONE]");
      const chunk = JSON.parse(data[0] ?? "") as {
        object: string;
        choices: { delta: { content: string } }[];
      };
      expect(chunk.object).toBe("chat.completion.chunk");
      expect(chunk.choices[0]?.delta.content).toBe("é".repeat(big));
      const stream = await client(vllm.id).chat.completions.create(request as typeof CHAT & { stream: true });
      const parts: string[] = [];
      for await (const part of stream) parts.push(part.choices[0]?.delta.content ?? "");
      expect(parts.map((part) => part.length)).toEqual([big]);
    }
  });
});

describe("OpenAI-shaped errors, never 5xx", () => {
  it("a failing handler: 422 with {error: {message, type, code}}, not retried by the client", async () => {
    const reply = await post(plain.id, "/chat/completions", { ...CHAT, fail: true });
    expect(reply.status).toBe(422);
    expect(reply.headers.get("x-should-retry")).toBe("false");
    const body = (await reply.json()) as { error: { message: string; type: string; code: string } };
    expect(body.error).toMatchObject({ type: "handler_error", code: "job_failed" });
    expect(body.error.message).toContain("the model is out of tokens");

    const ep = h.endpoint("acme/openai-plain");
    const failure = await client(ep.id)
      .chat.completions.create({ ...CHAT, fail: true } as typeof CHAT)
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).status).toBe(422);
    expect((failure as InstanceType<typeof OpenAI.APIError>).message).toContain("out of tokens");
    // One job: the client did not retry it.
    const health = await h.call("GET", `/v2/${ep.id}/health`);
    expect((health.body as { jobs: { failed: number } }).jobs.failed).toBe(1);
  });

  it("a failing handler with stream: true: the error status, not an empty stream", async () => {
    const reply = await post(plain.id, "/chat/completions", { ...CHAT, fail: true, stream: true });
    expect(reply.status).toBe(422);
    expect(((await reply.json()) as { error: { code: string } }).error.code).toBe("job_failed");
  });

  it("a handler failing once its stream has begun: the error is the stream's last event", async () => {
    const reply = await post(vllm.id, "/chat/completions", {
      ...CHAT,
      model: "raw",
      stream: true,
      fail: true,
    });
    expect(reply.status).toBe(200);
    const data = dataOf(await reply.text());
    expect(data).toHaveLength(2);
    expect(JSON.parse(data[0] ?? "")).toMatchObject({ choices: [{ delta: { content: "hello" } }] });
    const { error } = JSON.parse(data[1] ?? "") as { error: { code: string; message: string } };
    expect(error.code).toBe("job_failed");
    expect(error.message).toContain("the stream broke after 1 word");
    // The openai client raises it while iterating.
    const { parts, failure } = await streamedWords(vllm.id, { model: "raw", fail: true });
    expect(parts).toEqual(["hello"]);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect(String((failure as Error).message)).toContain("the stream broke");
  });

  it("vLLM's error object from the handler (an unknown route) is answered with its 4xx status", async () => {
    const reply = await post(plain.id, "/moderations", { input: "x" });
    expect(reply.status).toBe(400);
    expect(await reply.json()).toEqual({
      error: { message: "Invalid route /v1/moderations", type: "BadRequestError", code: "400", param: null },
    });
  });

  it("an unknown endpoint: 404 with /run's message and code, OpenAI-shaped (not /run's body)", async () => {
    const run = await h.call("POST", "/v2/nosuchendpoint/run", { body: { input: {} } });
    const openai = await h.call("POST", "/v2/nosuchendpoint/openai/v1/chat/completions", { body: CHAT });
    expect(run.status).toBe(404);
    expect(openai.status).toBe(404);
    // Deliberately not /run's `{error: "<message>", code, field}`: an OpenAI client reads `error.message`.
    const { error: message, code, field } = run.body as { error: string; code: string; field?: string };
    const openAiError = { message, type: "invalid_request_error", code, param: field ?? null };
    expect(openai.body).toEqual({ error: openAiError });
    // The model list (GET) too, and the client sees a NotFoundError.
    const models = await h.call("GET", "/v2/nosuchendpoint/openai/v1/models");
    expect(models.status).toBe(404);
    expect(models.body).toEqual({ error: openAiError });
    await expect(client("nosuchendpoint").models.list()).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it("hostile input: an oversized body, deep JSON, `..` and encoded bytes in the path, a non-object body", async () => {
    const oversized = await h.call("POST", `/v2/${plain.id}/openai/v1/chat/completions`, {
      raw: JSON.stringify({ ...CHAT, pad: "x".repeat(10 * 1024 * 1024) }),
    });
    expect(oversized.status).toBe(413);
    const deep = await h.call("POST", `/v2/${plain.id}/openai/v1/chat/completions`, {
      raw: `{"messages":${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}}`,
    });
    expect(deep.status).toBe(400);
    const notObject = await h.call("POST", `/v2/${plain.id}/openai/v1/chat/completions`, { raw: "[1,2]" });
    expect(notObject.status).toBe(400);
    for (const path of [
      "v1/../../../etc/passwd",
      "v1/./models",
      "v1/%2e%2e/x",
      "v1/chat%2Fcompletions",
      "v1/%00",
      "v1//models",
    ]) {
      const status = await rawStatus(`/v2/${plain.id}/openai/${path}`);
      expect(status, path).toBe(400);
    }
    // None of them became a job.
    const health = await h.call("GET", `/v2/${plain.id}/health`);
    const { jobs } = health.body as { jobs: { inQueue: number; inProgress: number } };
    expect(jobs.inQueue + jobs.inProgress).toBe(0);
  });
  it("a body deeper than /run's input bound once in the job input: 400 naming the body, no job", async () => {
    // runpodkit/echo returns its input: a result as deep as the job input must reach job-done.
    const echo = h.endpoint("runpodkit/echo");
    const deep = (levels: number) => `${"[".repeat(levels)}1${"]".repeat(levels)}`;
    const path = `/v2/${echo.id}/openai/v1/chat/completions`;
    // The body (1) and its member (62): the job input is 64 levels, as /run's input may be.
    const fits = await h.call("POST", path, { raw: `{"messages":${deep(62)}}` });
    expect(fits.status).toBe(200);
    expect(fits.text).toContain(deep(62));
    // One more level (the server's parser takes members up to 64): refused before it is a job.
    const before = h.plane.book.recent(echo.id, 100).length;
    const tooDeep = await h.call("POST", path, { raw: `{"messages":${deep(63)}}` });
    expect(tooDeep.status).toBe(400);
    expect(tooDeep.body).toMatchObject({
      error: {
        code: "VALIDATION",
        param: "body",
        message: expect.stringContaining("body nested deeper than 63 levels"),
      },
    });
    expect(h.plane.book.recent(echo.id, 100)).toHaveLength(before);
  });
});

/** A POST on a path sent as it is (fetch and undici normalise `..` and `.` segments away). */
function rawStatus(path: string): Promise<number> {
  const url = new URL(h.url);
  return new Promise((done, fail) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: "POST",
        path,
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      },
      (res) => {
        res.resume();
        res.once("end", () => done(res.statusCode ?? 0));
      },
    );
    req.once("error", fail);
    req.end(JSON.stringify(CHAT));
  });
}

describe("the wait is bounded, and only the wait is the client's", () => {
  let q: Harness;
  let queued: EndpointRecord;
  beforeAll(async () => {
    q = await startHarness();
    // No workers: its jobs stay in the queue.
    queued = q.endpoint("runpodkit/echo", { workersMax: 0 });
  });
  afterAll(async () => q?.close());

  const send = (body: unknown) =>
    fetch(`${q.url}/v2/${queued.id}/openai/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const jobIds = () => q.plane.book.recent(queued.id, 100).map((job) => job.id);
  /** The id of the request's new job (the `before`+1th) once its reply holds for it. */
  const holding = (before: number) =>
    eventually(() =>
      jobIds().length === before + 1 && q.plane.book.watchers.waiting === 1 ? jobIds()[0] : undefined,
    );

  it("a job still queued when the wait ends: 408 naming it, and the job goes on", async () => {
    for (const stream of [false, true]) {
      const reply = send({ ...CHAT, stream });
      const id = await holding(jobIds().length);
      await (q.clock as ManualClock).advance(OPENAI_WAIT_MS);
      const answered = await reply;
      expect(answered.status, `stream ${stream}`).toBe(408);
      expect(answered.headers.get("x-should-retry")).toBe("false");
      const { error } = (await answered.json()) as { error: { code: string; message: string } };
      expect(error.code).toBe("wait_timeout");
      expect(error.message).toContain(id);
      const status = await q.call("GET", `/v2/${queued.id}/status/${id}`);
      expect(status.body).toMatchObject({ id, status: "IN_QUEUE" });
      // The job's input, as worker-vllm reads it.
      expect(q.plane.book.find(id)?.input).toEqual({
        openai_route: "/v1/chat/completions",
        openai_input: { ...CHAT, stream },
      });
    }
  });

  it("a client gone during the wait ends the wait, not its job", async () => {
    for (const stream of [false, true]) {
      // A connection of its own (no pool): fetch's pool may open a spare one that a close waits on.
      const req = httpRequest(`${q.url}/v2/${queued.id}/openai/v1/chat/completions`, {
        method: "POST",
        agent: false,
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      });
      const closed = new Promise<void>((done) => req.once("close", done));
      req.once("error", () => {});
      req.end(JSON.stringify({ ...CHAT, stream }));
      const id = await holding(jobIds().length);
      req.destroy();
      await closed;
      // The hold ended (the service saw the client go), the job did not.
      await eventually(() => (q.plane.book.watchers.waiting === 0 ? true : undefined));
      const status = await q.call("GET", `/v2/${queued.id}/status/${id}`);
      expect(status.body, `stream ${stream}`).toMatchObject({ id, status: "IN_QUEUE" });
    }
  });
});

describe("a service stopping during the wait", () => {
  it("answers 408 service_stopping naming the job, not a run-out wait (streamed or not)", async () => {
    const s = await startHarness();
    let closed = false;
    try {
      const ep = s.endpoint("runpodkit/echo", { workersMax: 0 });
      // Connections of their own (no pool): a spare pooled one would hold the close.
      const send = (stream: boolean) =>
        new Promise<{ status: number; body: string }>((done, fail) => {
          const req = httpRequest(`${s.url}/v2/${ep.id}/openai/v1/chat/completions`, {
            method: "POST",
            agent: false,
            headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
          });
          req.once("response", (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (text: string) => {
              body += text;
            });
            res.once("end", () => done({ status: res.statusCode ?? 0, body }));
          });
          req.once("error", fail);
          req.end(JSON.stringify({ ...CHAT, stream }));
        });
      const replies = [send(false), send(true)];
      await eventually(() => (s.plane.book.watchers.waiting === 2 ? true : undefined));
      const ids = s.plane.book.recent(ep.id, 10).map((job) => job.id);
      await s.close();
      closed = true;
      for (const [i, reply] of (await Promise.all(replies)).entries()) {
        expect(reply.status, `stream ${i === 1}`).toBe(408);
        const { error } = JSON.parse(reply.body) as { error: { code: string; message: string } };
        expect(error.code).toBe("service_stopping");
        expect(error.message).toMatch(/^job \S+ is still IN_QUEUE: the service is stopping/);
        expect(ids).toContain(error.message.split(" ")[1]);
        expect(error.message).not.toContain("90 s");
      }
    } finally {
      if (!closed) await s.close();
    }
  });
});

describe("admitted as /run: its rate-limit row and the queue's cap", () => {
  let a: Harness;
  beforeAll(async () => {
    a = await startHarness({
      config: {
        maxQueuedPerEndpoint: 1,
        rateLimits: {
          ...DEFAULT_RATE_LIMIT_OPTIONS,
          limits: { openai: { requests: 100, windowMs: 10_000, concurrent: 1 } },
        },
      },
    });
  });
  afterAll(async () => a?.close());

  it("a held request counts against the `openai` row's concurrency; a full queue refuses before the body", async () => {
    const ep = a.endpoint("runpodkit/echo", { workersMax: 0 });
    const path = `/v2/${ep.id}/openai/v1/chat/completions`;
    const held = a.call("POST", path, { body: CHAT });
    await eventually(() => (a.plane.book.watchers.waiting === 1 ? true : undefined));
    const second = await a.call("POST", path, { body: CHAT });
    expect(second.status).toBe(429);
    expect(second.body).toMatchObject({
      error: { code: "RATE_LIMITED", message: expect.stringContaining("openai") },
    });
    // /runsync has its own row; the queue (cap 1) is what refuses it.
    const full = await a.call("POST", `/v2/${ep.id}/runsync`, { body: { input: {} } });
    expect(full.status).toBe(429);
    expect(full.body).toMatchObject({ error: expect.stringContaining("maxQueuedPerEndpoint") });
    await (a.clock as ManualClock).advance(OPENAI_WAIT_MS);
    expect((await held).status).toBe(408);
    // The row's slot is free again; the queue still holds the first job (it goes on): refused by the cap.
    const capped = await a.call("POST", path, { body: CHAT });
    expect(capped.status).toBe(429);
    expect(capped.body).toMatchObject({
      error: { code: "RATE_LIMITED", message: expect.stringContaining("maxQueuedPerEndpoint") },
    });
  });
});

describe("the route's own refusals are OpenAI errors, as the openai client reads them", () => {
  let r: Harness;
  beforeAll(async () => {
    r = await startHarness({
      config: {
        // A body past 4000 bytes does not fit: 503 before it is read.
        memoryBudgetBytes: 4_000,
        rateLimits: {
          ...DEFAULT_RATE_LIMIT_OPTIONS,
          // Two requests per (stopped) window, workers up adding none: the next is refused however
          // often it is retried.
          requestsPerWorker: 0,
          limits: { openai: { requests: 2, windowMs: 10_000, concurrent: 10 } },
        },
      },
    });
  });
  afterAll(async () => r?.close());

  type Seen = { status: number; retryAfter: string | null; shouldRetry: string | null };
  /**
   * The official client on `endpointId`, with `maxRetries`, recording each response it got. It would
   * wait Retry-After's seconds before a retry: the header is recorded, then read as 0 (no sleep in a test).
   */
  const recording = (endpointId: string, maxRetries: number, apiKey = KEY) => {
    const seen: Seen[] = [];
    const openai = new OpenAI({
      apiKey,
      baseURL: `${r.url}/v2/${endpointId}/openai/v1`,
      maxRetries,
      fetch: async (url, init) => {
        const res = await fetch(url, init);
        const [retryAfter, shouldRetry] = [res.headers.get("retry-after"), res.headers.get("x-should-retry")];
        seen.push({ status: res.status, retryAfter, shouldRetry });
        const headers = new Headers(res.headers);
        if (retryAfter !== null) headers.set("retry-after", "0");
        return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
      },
    });
    return { openai, seen };
  };
  const failure = (call: Promise<unknown>) =>
    call.then(
      () => null,
      (error: unknown) => error as InstanceType<typeof OpenAI.APIError>,
    );

  it("400 VALIDATION: BadRequestError, the message unquoted, code and param the service's; not retried", async () => {
    const ep = r.endpoint("runpodkit/echo");
    const { openai, seen } = recording(ep.id, 2);
    const deep = JSON.parse(`${"[".repeat(63)}1${"]".repeat(63)}`) as never;
    const error = await failure(openai.chat.completions.create({ ...CHAT, messages: deep }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error?.status).toBe(400);
    expect(error?.message).toMatch(/^400 body nested deeper than 63 levels/);
    expect(error?.code).toBe("VALIDATION");
    expect(error?.param).toBe("body");
    expect(error?.type).toBe("invalid_request_error");
    expect(seen).toEqual([{ status: 400, retryAfter: null, shouldRetry: "false" }]);
  });

  it("401 without a valid key: AuthenticationError, code UNAUTHORIZED, the key not shown; not retried", async () => {
    const ep = r.endpoint("runpodkit/echo");
    const { openai, seen } = recording(ep.id, 2, "not-the-key");
    const error = await failure(openai.models.list());
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(error?.status).toBe(401);
    expect(error?.type).toBe("authentication_error");
    expect(error?.code).toBe("UNAUTHORIZED");
    expect(error?.param).toBeNull();
    expect(error?.message).toMatch(/^401 [^"]/);
    expect(error?.message).not.toContain("not-the-key");
    expect(seen).toEqual([{ status: 401, retryAfter: null, shouldRetry: "false" }]);
  });

  it("404 of an unknown endpoint: NotFoundError naming it, param endpointId; not retried", async () => {
    const { openai, seen } = recording("nosuchendpoint", 2);
    const error = await failure(openai.chat.completions.create(CHAT));
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error?.message).toMatch(/^404 [^"].*nosuchendpoint/);
    expect(error?.code).toBe("NOT_FOUND");
    expect(error?.param).toBe("endpointId");
    expect(error?.type).toBe("invalid_request_error");
    expect(seen).toEqual([{ status: 404, retryAfter: null, shouldRetry: "false" }]);
  });

  it("413 and 415 (the body's size and charset) are OpenAI-shaped too, naming the body", async () => {
    const path = `/v2/${r.endpoint("runpodkit/echo").id}/openai/v1/chat/completions`;
    const oversized = await r.call("POST", path, {
      raw: JSON.stringify({ pad: "x".repeat(10 * 1024 * 1024) }),
    });
    expect(oversized.status).toBe(413);
    expect(oversized.headers["x-should-retry"]).toBe("false");
    expect(oversized.body).toEqual({
      error: {
        message: expect.stringContaining("larger than the 10 MB"),
        type: "invalid_request_error",
        code: "PAYLOAD_TOO_LARGE",
        param: "body",
      },
    });
    const other = `/v2/${r.endpoint("runpodkit/echo").id}/openai/v1/chat/completions`;
    const utf16 = await fetch(`${r.url}${other}`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json; charset=utf-16" },
      body: JSON.stringify(CHAT),
    });
    expect(utf16.status).toBe(415);
    expect(utf16.headers.get("x-should-retry")).toBe("false");
    expect(await utf16.json()).toEqual({
      error: {
        message: expect.stringContaining("utf-16"),
        type: "invalid_request_error",
        code: "VALIDATION",
        param: "body",
      },
    });
  });

  it("429 rate limit: RateLimitError, Retry-After and x-should-retry: true; retried maxRetries times", async () => {
    const ep = r.endpoint("runpodkit/echo");
    const { openai, seen } = recording(ep.id, 2);
    // The window's two requests are answered (the echo handler returns its input).
    await openai.chat.completions.create(CHAT);
    await openai.chat.completions.create(CHAT);
    const error = await failure(openai.chat.completions.create(CHAT));
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error?.status).toBe(429);
    expect(error?.type).toBe("rate_limit_error");
    expect(error?.code).toBe("RATE_LIMITED");
    expect(error?.message).toMatch(/^429 [^"].*openai/);
    const refused = { status: 429, retryAfter: expect.stringMatching(/^[1-9][0-9]*$/), shouldRetry: "true" };
    expect(seen.slice(2)).toEqual([refused, refused, refused]);
    expect(seen.slice(0, 2).map(({ status }) => status)).toEqual([200, 200]);
  });

  it("503 memory budget: Retry-After and x-should-retry: true; retried maxRetries times, no job made", async () => {
    const ep = r.endpoint("runpodkit/echo");
    const { openai, seen } = recording(ep.id, 1);
    const before = r.plane.book.recent(ep.id, 100).length;
    const pad = "x".repeat(5_000);
    const error = await failure(openai.chat.completions.create({ ...CHAT, pad } as typeof CHAT));
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error?.status).toBe(503);
    expect(error?.type).toBe("service_unavailable");
    expect(error?.code).toBe("UNAVAILABLE");
    expect(error?.message).toMatch(/^503 [^"].*memory budget for jobs \(4000 bytes\)/);
    const refused = { status: 503, retryAfter: "1", shouldRetry: "true" };
    expect(seen).toEqual([refused, refused]);
    expect(r.plane.book.recent(ep.id, 100)).toHaveLength(before);
  });
});

describe("a streamed output rejoined from pieces holds its bytes against the memory budget", () => {
  let m: Harness;
  beforeAll(async () => {
    m = await startHarness({
      // Room for the worker's 8 MB job-stream body (held while read), not for another 5.5 MB beside it.
      config: { memoryBudgetBytes: 9_000_000, handlers: { "acme/openai-vllm": VLLM_LIKE } },
    });
  });
  afterAll(async () => m?.close());

  it("while a slow reader has not taken it, as its chunks did; freed once it is read", async () => {
    const ep = m.endpoint("acme/openai-vllm");
    const idle = m.endpoint("runpodkit/echo", { workersMax: 0 });
    // 4 M characters (8 MB of UTF-8): more than the connection's kernel buffers take, so the rest of
    // the one event waits in the service for a reader that does not read.
    const big = 4_000_000;
    const req = httpRequest(`${m.url}/v2/${ep.id}/openai/v1/chat/completions`, {
      method: "POST",
      agent: false,
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    });
    req.once("error", () => {});
    const response = new Promise<import("node:http").IncomingMessage>((done) => req.once("response", done));
    // The job goes on (no job-done) until the gate opens: only the stream holds memory meanwhile.
    const gate = join(dir, "gate-budget");
    req.end(JSON.stringify({ ...CHAT, model: "json", stream: true, big, gate }));
    onTestFinished(() => {
      req.destroy();
    });
    const res = await response;
    res.pause();
    expect(res.statusCode).toBe(200);
    // Every piece was handed out of the job's buffer: the event is written, not yet read.
    await eventually(() => (m.plane.book.recent(ep.id, 1)[0]?.stream === null ? true : undefined));
    expect(m.plane.book.recent(ep.id, 1)[0]?.status).toBe("IN_PROGRESS");
    expect(m.plane.memory.used).toBeGreaterThanOrEqual(big);
    // A /run that would take the service past its budget is refused, naming it.
    const pad = "x".repeat(5_500_000);
    const refused = await m.call("POST", `/v2/${idle.id}/run`, { body: { input: { pad } } });
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({
      error: expect.stringContaining("memory budget for jobs (9000000 bytes)"),
    });
    // The reader reads the one event, whole: the budget is free again (but for the job's input).
    res.setEncoding("utf8");
    let text = "";
    res.on("data", (part: string) => {
      text += part;
    });
    const ended = new Promise((done) => res.once("end", done));
    res.resume();
    await eventually(() => (text.endsWith("\n\n") ? true : undefined));
    await eventually(() => (m.plane.memory.used < 10_000 ? true : undefined));
    writeFileSync(gate, "");
    await ended;
    const data = dataOf(text);
    expect(data).toHaveLength(2);
    expect(JSON.parse(data[0] ?? "").choices[0].delta.content).toBe("é".repeat(big));
    expect(data[1]).toBe("[DONE]");
    await eventually(() => (m.plane.memory.used === 0 ? true : undefined));
    const accepted = await m.call("POST", `/v2/${idle.id}/run`, { body: { input: { pad } } });
    expect(accepted.status).toBe(200);
  });
  it("a reader gone before it took the event frees what the route held of it", async () => {
    const ep = m.endpoint("acme/openai-vllm");
    const big = 4_000_000;
    const gate = join(dir, "gate-budget-gone");
    const req = httpRequest(`${m.url}/v2/${ep.id}/openai/v1/chat/completions`, {
      method: "POST",
      agent: false,
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    });
    req.once("error", () => {});
    const closed = new Promise<void>((done) => req.once("close", done));
    const response = new Promise<import("node:http").IncomingMessage>((done) => req.once("response", done));
    req.end(JSON.stringify({ ...CHAT, model: "json", stream: true, big, gate }));
    (await response).pause();
    await eventually(() => (m.plane.book.recent(ep.id, 1)[0]?.stream === null ? true : undefined));
    expect(m.plane.memory.used).toBeGreaterThanOrEqual(big);
    req.destroy();
    await closed;
    // Only the running job's input is held; its end (the 8 MB aggregate output) then fits.
    await eventually(() =>
      m.plane.memory.used < 10_000 && m.plane.book.watchers.waiting === 0 ? true : undefined,
    );
    writeFileSync(gate, "");
    await eventually(() => (m.plane.book.recent(ep.id, 1)[0]?.status === "COMPLETED" ? true : undefined));
    await eventually(() => (m.plane.memory.used === 0 ? true : undefined));
  });
});

describe("what a request leaves held: answered, or its client gone mid-request", () => {
  let g: Harness;
  beforeAll(async () => {
    g = await startHarness({
      config: {
        handlers: { "acme/openai-vllm": VLLM_LIKE },
        // One request in flight at a time: a slot the route kept after its client left refuses the next.
        rateLimits: {
          ...DEFAULT_RATE_LIMIT_OPTIONS,
          limits: { openai: { requests: 100, windowMs: 10_000, concurrent: 1 } },
        },
      },
    });
  });
  afterAll(async () => g?.close());

  /** A request on a connection of its own; `gone()` destroys it and resolves once it closed. */
  const open = (endpointId: string, body: unknown) => {
    const req = httpRequest(`${g.url}/v2/${endpointId}/openai/v1/chat/completions`, {
      method: "POST",
      agent: false,
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    });
    req.once("error", () => {});
    const closed = new Promise<void>((done) => req.once("close", done));
    const response = new Promise<import("node:http").IncomingMessage>((done) => req.once("response", done));
    req.end(JSON.stringify(body));
    return {
      response,
      gone: async () => {
        req.destroy();
        await closed;
      },
    };
  };
  /** Nothing the route held is still held, and the service answers the next request. */
  const settled = async (endpointId: string) => {
    await eventually(() =>
      g.plane.book.watchers.waiting === 0 && g.plane.memory.used === 0 ? true : undefined,
    );
    // The `openai` row's one slot is free again.
    const next = await g.call("POST", `/v2/${endpointId}/openai/v1/chat/completions`, {
      body: { ...CHAT, model: "json" },
    });
    expect(next.status).toBe(200);
  };
  /** The job's chunks no reply took, read (and so drained) through /stream. */
  const contents = async (endpointId: string, id: string) => {
    const stream = await g.call("GET", `/v2/${endpointId}/stream/${id}`);
    expect(stream.status).toBe(200);
    type Yield = { choices: { delta?: { content: string }; message?: { content: string } }[] };
    // A streamed word is a list of one chunk object (as worker-vllm yields), a completion the object.
    return (stream.body as { stream: { output: Yield | Yield[] }[] }).stream.map(({ output }) => {
      const choice = (Array.isArray(output) ? output[0] : output)?.choices[0];
      return choice?.delta?.content ?? choice?.message?.content;
    });
  };

  it("answered, not streamed: a generator's yields (the output again) are not kept", async () => {
    const ep = g.endpoint("acme/openai-vllm");
    const reply = await g.call("POST", `/v2/${ep.id}/openai/v1/chat/completions`, { body: CHAT });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ choices: [{ message: { content: "hello local world" } }] });
    expect(g.plane.book.recent(ep.id, 1)[0]?.stream).toBeNull();
    expect(g.plane.memory.used).toBe(0);
  });

  it("not streamed, while its job runs: the job runs on to its end; nothing is held", async () => {
    const ep = g.endpoint("acme/openai-vllm");
    const gate = join(dir, "gate-gone-plain");
    const request = open(ep.id, { ...CHAT, model: "json", gate });
    const job = await eventually(() => {
      const found = g.plane.book.recent(ep.id, 1)[0];
      return found?.status === "IN_PROGRESS" && g.plane.book.watchers.waiting === 1 ? found : undefined;
    });
    await request.gone();
    await eventually(() => (g.plane.book.watchers.waiting === 0 ? true : undefined));
    writeFileSync(gate, "");
    await eventually(() => (job.status === "COMPLETED" ? true : undefined));
    // Its one yield is kept for /stream, as any job's chunks no reader took.
    expect(await contents(ep.id, job.id)).toEqual(["hello local world"]);
    await settled(ep.id);
  });

  it("streamed, after its first event: the job runs on; its later chunks wait for /stream", async () => {
    const ep = g.endpoint("acme/openai-vllm");
    const gate = join(dir, "gate-gone-stream");
    const request = open(ep.id, { ...CHAT, model: "json", stream: true, gate });
    const res = await request.response;
    expect(res.statusCode).toBe(200);
    res.setEncoding("utf8");
    let text = "";
    res.on("data", (part: string) => {
      text += part;
    });
    await eventually(() => (text.includes("\n\n") ? true : undefined));
    const job = g.plane.book.recent(ep.id, 1)[0];
    if (!job) throw new Error("no job");
    await request.gone();
    await eventually(() => (g.plane.book.watchers.waiting === 0 ? true : undefined));
    writeFileSync(gate, "");
    await eventually(() => (job.status === "COMPLETED" ? true : undefined));
    expect(await contents(ep.id, job.id)).toEqual([" local", " world"]);
    await settled(ep.id);
  });
});

describe("the openai client's less common paths, on a real worker", () => {
  it("legacy completions.create, streamed or not", async () => {
    const openai = client(plain.id);
    const completion = await openai.completions.create({ model: "local-model", prompt: "say hi" });
    expect(completion.object).toBe("text_completion");
    expect(completion.choices[0]?.text).toBe("SAY HI");
    const stream = await openai.completions.create({ model: "local-model", prompt: "say hi", stream: true });
    const texts: string[] = [];
    for await (const part of stream) texts.push(part.choices[0]?.text ?? "");
    expect(texts).toEqual(["SAY HI"]);
  });

  it("embeddings.create: the client's default (base64, decoded) and floats asked for", async () => {
    const openai = client(plain.id);
    const decoded = await openai.embeddings.create({ model: "local-model", input: "abc" });
    expect(Array.from(decoded.data[0]?.embedding ?? [])).toEqual([3, 97]);
    const floats = await openai.embeddings.create({
      model: "local-model",
      input: "abc",
      encoding_format: "float",
    });
    expect(floats.data[0]?.embedding).toEqual([3, 97]);
  });

  it("a 4xx the handler answers (an unknown model) is raised once, not retried", async () => {
    const ep = h.endpoint("acme/openai-plain");
    const failure = await client(ep.id)
      .chat.completions.create({ ...CHAT, model: "missing" })
      .catch((caught: unknown) => caught);
    expect(failure).toBeInstanceOf(OpenAI.NotFoundError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).message).toContain("`missing` does not exist");
    expect(h.plane.book.recent(ep.id, 10)).toHaveLength(1);
  });

  it("stream: true with JSON chunk yields failing after the first: the first word, then the error", async () => {
    const { parts, failure } = await streamedWords(vllm.id, { model: "json", fail: true });
    expect(parts).toEqual(["hello"]);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).code).toBe("job_failed");
    expect(String((failure as Error).message)).toContain("the stream broke after 1 word");
  });

  it("the wait running out (408, x-should-retry: false): raised once, streamed or not; one job each", async () => {
    const t = await startHarness();
    try {
      const ep = t.endpoint("runpodkit/echo", { workersMax: 0 });
      const openai = new OpenAI({ apiKey: KEY, baseURL: `${t.url}/v2/${ep.id}/openai/v1` });
      for (const stream of [false, true]) {
        const before = t.plane.book.recent(ep.id, 100).length;
        const failure = openai.chat.completions
          .create({ ...CHAT, stream } as typeof CHAT)
          .catch((caught: unknown) => caught);
        await eventually(() => (t.plane.book.watchers.waiting === 1 ? true : undefined));
        await (t.clock as ManualClock).advance(OPENAI_WAIT_MS);
        // A retry would hold for another 90 s of this clock, which no longer moves: it never ends.
        const error = await failure;
        expect(error, `stream ${stream}`).toBeInstanceOf(OpenAI.APIError);
        expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(408);
        expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe("wait_timeout");
        expect(t.plane.book.recent(ep.id, 100)).toHaveLength(before + 1);
      }
      // The client's own timeout (shorter than the route's wait) is retried by the client: each try
      // is a new job, and the ones it left run on (the docs say to keep it above 90 s).
      const before = t.plane.book.recent(ep.id, 100).length;
      const impatient = new OpenAI({
        apiKey: KEY,
        baseURL: `${t.url}/v2/${ep.id}/openai/v1`,
        timeout: 100,
        maxRetries: 1,
      });
      const timedOut = await impatient.chat.completions.create(CHAT).catch((caught: unknown) => caught);
      expect(timedOut).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
      expect(t.plane.book.recent(ep.id, 100)).toHaveLength(before + 2);
      await eventually(() => (t.plane.book.watchers.waiting === 0 ? true : undefined));
    } finally {
      await t.close();
    }
  });
});
