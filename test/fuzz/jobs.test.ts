import fc from "fast-check";
import { afterAll, beforeAll, describe, it } from "vitest";
import { KEY } from "../service/jobs/harness";
import {
  bodyOf,
  contentType,
  credential,
  expectServed,
  type FuzzRequest,
  type FuzzService,
  fuzzParameters,
  fuzzSeed,
  hostileString,
  hostileValue,
  queryOf,
  segment,
  send,
  startFuzzService,
} from "./support";

/**
 * The /v2 job API and the worker protocol under random and hostile requests: every route, real and
 * foreign and made-up ids, bodies of the right shape and of every wrong one, any key. Zero 5xx (but
 * the documented 501s), and the service answers its health check after every request.
 */
let service: FuzzService;
const seed = fuzzSeed("jobs");

beforeAll(async () => {
  service = await startFuzzService();
});
afterAll(async () => service.h.close());

const endpoints = () => [service.endpoint.id, service.otherEndpoint.id];
const jobs = () => (service.jobIds.length > 0 ? service.jobIds : ["job-none"]);
const workers = () => ["w-fuzz-1", "w-fuzz-2"];

/** A body of the shape /run takes, with hostile values inside. */
const submission = fc.record(
  {
    input: hostileValue,
    webhook: fc.oneof(fc.constant("http://127.0.0.1:9/hook"), hostileString),
    policy: fc.record(
      { executionTimeout: hostileValue, ttl: hostileValue, lowPriority: hostileValue },
      { requiredKeys: [] },
    ),
    s3Config: hostileValue,
  },
  { requiredKeys: ["input"] },
);

const result = fc.record(
  {
    output: hostileValue,
    error: hostileValue,
    status: fc.constantFrom("IN_PROGRESS", "COMPLETED", "x"),
    stopPod: hostileValue,
  },
  { requiredKeys: [] },
);

interface Route {
  method: string;
  path: (ep: string, id: string, worker: string) => string;
  query: string[];
  body?: fc.Arbitrary<unknown>;
  allowed501?: boolean;
}

const CLIENT: Route[] = [
  { method: "POST", path: (ep) => `/v2/${ep}/run`, query: [], body: submission },
  { method: "POST", path: (ep) => `/v2/${ep}/runsync`, query: ["wait"], body: submission },
  { method: "GET", path: (ep, id) => `/v2/${ep}/status/${id}`, query: ["ttl"] },
  { method: "POST", path: (ep, id) => `/v2/${ep}/status/${id}`, query: ["ttl"] },
  { method: "GET", path: (ep, id) => `/v2/${ep}/status-sync/${id}`, query: ["wait", "ttl"] },
  { method: "GET", path: (ep, id) => `/v2/${ep}/stream/${id}`, query: [] },
  { method: "POST", path: (ep, id) => `/v2/${ep}/cancel/${id}`, query: [] },
  { method: "POST", path: (ep, id) => `/v2/${ep}/retry/${id}`, query: [] },
  { method: "POST", path: (ep) => `/v2/${ep}/purge-queue`, query: [] },
  { method: "GET", path: (ep) => `/v2/${ep}/health`, query: [] },
  { method: "GET", path: (ep) => `/v2/${ep}/requests`, query: [], allowed501: true },
  // Observation routes (`follow` is left out: it keeps the reply open by design).
  { method: "GET", path: (ep) => `/v2/${ep}/logs`, query: ["worker", "job", "since", "after", "limit"] },
  { method: "GET", path: (ep) => `/v2/${ep}/jobs`, query: ["limit"] },
  { method: "GET", path: (ep) => `/v2/${ep}/metrics`, query: [] },
  { method: "GET", path: (ep) => `/v2/${ep}/workers`, query: [] },
  { method: "POST", path: (ep) => `/v2/${ep}/openai/v1/chat/completions`, query: [] },
  { method: "GET", path: (ep) => `/v2/${ep}/openai/v1/models`, query: [] },
];

const WORKER: Route[] = [
  { method: "GET", path: (ep, _id, w) => `/v2/${ep}/job-take/${w}`, query: ["gpu", "job_in_progress"] },
  {
    method: "GET",
    path: (ep, _id, w) => `/v2/${ep}/job-take-batch/${w}`,
    query: ["batch_size", "job_in_progress"],
  },
  { method: "GET", path: (ep, _id, w) => `/v2/${ep}/job-stop/${w}`, query: ["gpu"] },
  {
    method: "POST",
    path: (ep, id, w) => `/v2/${ep}/job-done/${w}/${id}`,
    query: ["isStream", "gpu"],
    body: result,
  },
  {
    method: "POST",
    path: (ep, id, w) => `/v2/${ep}/job-stream/${w}/${id}`,
    query: ["isStream"],
    body: result,
  },
  {
    method: "GET",
    path: (ep, _id, w) => `/v2/${ep}/ping/${w}`,
    query: ["job_id", "runpod_version", "status"],
  },
];

function requestsOf(routes: Route[]): fc.Arbitrary<{ req: FuzzRequest; route: Route }> {
  return fc.constantFrom(...routes).chain((route) =>
    fc
      .record({
        ep: segment(endpoints),
        id: segment(jobs),
        worker: segment(workers),
        query: queryOf(route.query).map((q) => q.replace(/(^|[?&])follow=[^&]*/gi, "$1")),
        key: credential,
        type: contentType,
        body: route.body || route.method === "POST" ? bodyOf(route.body) : fc.constant(undefined),
      })
      .map(({ ep, id, worker, query, key, type, body }) => {
        const headers: Record<string, string> = {};
        if (key !== null) headers.authorization = key;
        if (body !== undefined) headers["content-type"] = type;
        const req: FuzzRequest = {
          method: route.method,
          path: `${route.path(ep, id, worker)}${query}`,
          headers,
        };
        if (body !== undefined) req.body = body;
        return { req, route };
      }),
  );
}

/** Sends it, keeps the ids /run hands out, checks the service stands. */
async function exercise({ req, route }: { req: FuzzRequest; route: Route }): Promise<void> {
  const reply = await send(service, req);
  if (reply.status === 200 && /\/run(sync)?(\?|$)/.test(req.path)) {
    const id = (JSON.parse(reply.text) as { id?: unknown }).id;
    if (typeof id === "string" && service.jobIds.length < 200) service.jobIds.push(id);
  }
  await expectServed(service, req, reply, route.allowed501);
}

/** A job through its whole life with hostile results: run, take, stream, progress, done, then reads. */
const lifecycle = fc.record({
  submission: bodyOf(submission),
  chunk: bodyOf(result),
  progress: bodyOf(result.map((r) => ({ ...(r as object), status: "IN_PROGRESS" }))),
  done: bodyOf(result),
  type: contentType,
});

describe("fuzz: /v2 job API and worker protocol", () => {
  it("a job's life with hostile results: zero 5xx, always answering", { timeout: 120_000 }, async () => {
    const ep = service.endpoint.id;
    const worker = "w-fuzz-life";
    const call = async (method: string, path: string, body?: string, type = "application/json") => {
      const req: FuzzRequest = { method, path, headers: { authorization: KEY } };
      if (body !== undefined) {
        req.body = body;
        (req.headers as Record<string, string>)["content-type"] = type;
      }
      const reply = await send(service, req);
      await expectServed(service, req, reply);
      return reply;
    };
    await fc.assert(
      fc.asyncProperty(lifecycle, async ({ submission: body, chunk, progress, done, type }) => {
        const run = await call("POST", `/v2/${ep}/run`, body);
        const valid = await call("POST", `/v2/${ep}/run`, JSON.stringify({ input: { n: 1 } }));
        const ids = [run, valid]
          .filter((r) => r.status === 200)
          .map((r) => (JSON.parse(r.text) as { id: string }).id);
        const taken = await call("GET", `/v2/${ep}/job-take-batch/${worker}?batch_size=2&job_in_progress=0`);
        const jobIds =
          taken.status === 200 ? (JSON.parse(taken.text) as { id: string }[]).map((j) => j.id) : [];
        for (const id of jobIds) {
          await call("POST", `/v2/${ep}/job-stream/${worker}/${id}?isStream=true`, chunk, type);
          await call("POST", `/v2/${ep}/job-done/${worker}/${id}?isStream=false`, progress, type);
          await call("GET", `/v2/${ep}/stream/${id}`);
          await call("POST", `/v2/${ep}/job-done/${worker}/${id}?isStream=false`, done, type);
        }
        for (const id of ids) await call("GET", `/v2/${ep}/status/${id}`);
        // The store's flush runs between event-loop turns: let it, then the service must still answer.
        await new Promise((resolve) => setImmediate(resolve));
        await call("POST", `/v2/${ep}/purge-queue`);
      }),
      fuzzParameters(seed, 150),
    );
  });

  it("client routes: zero 5xx, always answering", { timeout: 120_000 }, async () => {
    await fc.assert(fc.asyncProperty(requestsOf(CLIENT), exercise), fuzzParameters(seed, 400));
  });

  it("worker routes: zero 5xx, always answering", { timeout: 120_000 }, async () => {
    // Some jobs to take and to finish.
    for (let i = 0; i < 5; i++) {
      await exercise({
        req: {
          method: "POST",
          path: `/v2/${service.endpoint.id}/run`,
          headers: {
            authorization: KEY,
            "content-type": "application/json",
          },
          body: JSON.stringify({ input: { i } }),
        },
        route: CLIENT[0] as Route,
      });
    }
    await fc.assert(
      fc.asyncProperty(requestsOf([...WORKER, ...CLIENT.slice(0, 1)]), exercise),
      fuzzParameters(seed, 400),
    );
  });
});
