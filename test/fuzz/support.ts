import fc from "fast-check";
import { request } from "undici";
import { expect } from "vitest";
import { ManualClock } from "../../service/clock";
import type { JobPlaneConfig } from "../../service/jobs/config";
import type { EndpointRecord } from "../../service/management/model/endpoint";
import { type Harness, KEY, OTHER_KEY, startHarness } from "../service/jobs/harness";

/*
 * The fuzz suite's service, requests and hostile values. One service per file (in-process, on a
 * ManualClock pumped while a request is held, so long-polls end at once); every request goes over
 * HTTP. The seed comes from FUZZ_SEED, or is drawn and printed, so a failure replays:
 *   FUZZ_SEED=<seed> npx vitest run test/fuzz
 */

const DAY = 24 * 3_600_000;

/** The seed of this run: FUZZ_SEED, or a fresh one (printed either way). */
export function fuzzSeed(suite: string): number {
  const given = process.env.FUZZ_SEED;
  const seed = given !== undefined && given !== "" ? Number(given) : Math.floor(Math.random() * 2 ** 31);
  if (!Number.isSafeInteger(seed)) throw new Error(`FUZZ_SEED: not an integer: ${given}`);
  process.stdout.write(`fuzz ${suite}: seed ${seed} (replay with FUZZ_SEED=${seed})\n`);
  return seed;
}

/**
 * fc.assert's parameters: the seed, the runs (FUZZ_RUNS_SCALE scales them), and a failure report that
 * names the seed and path to replay with, the request that failed, and no megabytes of counterexample.
 */
export function fuzzParameters(seed: number, numRuns: number): fc.Parameters<unknown> {
  const scale = Number(process.env.FUZZ_RUNS_SCALE ?? 1);
  return {
    seed,
    numRuns: Math.max(1, Math.round(numRuns * scale)),
    endOnFailure: true,
    reporter: (details) => {
      if (!details.failed) return;
      const cause =
        details.errorInstance instanceof Error
          ? details.errorInstance.message
          : String(details.errorInstance);
      throw new Error(
        `fuzz failed after ${details.numRuns} runs; replay with FUZZ_SEED=${details.seed} (path ${details.counterexamplePath}):\n${cause.slice(0, 3_000)}`,
      );
    },
  };
}

export interface FuzzService {
  h: Harness;
  clock: ManualClock;
  /** A queue endpoint of each account (no workers ever start: cold starts last 30 days). */
  endpoint: EndpointRecord;
  otherEndpoint: EndpointRecord;
  /** Job ids seen (replies of /run), for paths. */
  jobIds: string[];
}

/** The service under fuzz: two accounts, an endpoint each, no worker process ever started. */
export async function startFuzzService(config: Partial<JobPlaneConfig> = {}): Promise<FuzzService> {
  const clock = new ManualClock();
  const h = await startHarness({
    clock,
    config: {
      coldStartMs: 30 * DAY,
      flashBootColdStartMs: 30 * DAY,
      externalWorkerTimeoutMs: 30 * DAY,
      scalerIntervalMs: DAY,
      ...config,
    },
  });
  const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
  const otherEndpoint = h.endpoint("runpodkit/echo", { workersMax: 0 }, OTHER_KEY);
  return { h, clock, endpoint, otherEndpoint, jobIds: [] };
}

export interface FuzzRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface FuzzReply {
  status: number;
  text: string;
}

/**
 * Sends one request; while it is held (a long-poll on the ManualClock), the clock moves a minute at a
 * time until it is answered.
 */
export async function send(service: FuzzService, req: FuzzRequest): Promise<FuzzReply> {
  let answered = false;
  const reply = request(`${service.h.url}${req.path}`, {
    method: req.method as "GET",
    headers: req.headers ?? {},
    body: req.body,
  }).then(async (r) => ({ status: r.statusCode, text: await r.body.text() }));
  const settled = reply.finally(() => {
    answered = true;
  });
  while (!answered) {
    await Promise.race([settled.catch(() => {}), new Promise((resolve) => setTimeout(resolve, 5))]);
    if (!answered) await service.clock.advance(60_000);
  }
  return reply;
}

/** No 5xx (but the 501s a route documents), and the service still answers its health check. */
export async function expectServed(
  service: FuzzService,
  req: FuzzRequest,
  reply: FuzzReply,
  allowed501 = false,
): Promise<void> {
  const ok = reply.status < 500 || (reply.status === 501 && allowed501);
  if (!ok) {
    throw new Error(
      `${req.method} ${req.path.slice(0, 200)} answered ${reply.status}: ${reply.text.slice(0, 500)}\nbody: ${(req.body ?? "").slice(0, 300)}`,
    );
  }
  // The process serves (a route nothing can delete), and the job plane answers (its endpoint may
  // have been deleted by the fuzz itself: 404 is an answer).
  const docs = await send(service, { method: "GET", path: "/v1/openapi.json" });
  expect(docs.status).toBe(200);
  const health = await send(service, {
    method: "GET",
    path: `/v2/${service.endpoint.id}/health`,
    headers: { authorization: KEY },
  });
  expect([200, 404]).toContain(health.status);
}

/** Authorization values: the account's, the other account's, wrong, malformed, none. */
export const credential = fc.oneof(
  { weight: 12, arbitrary: fc.constant(KEY) },
  { weight: 1, arbitrary: fc.constant(OTHER_KEY) },
  { weight: 1, arbitrary: fc.constant(`Bearer ${KEY}`) },
  { weight: 1, arbitrary: fc.constantFrom("", "Bearer", "Bearer ", "rpk_wrong_key", "Basic Zm9vOmJhcg==") },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }).filter((s) => /^[\x20-\x7e]*$/.test(s)) },
  { weight: 1, arbitrary: fc.constant(null) },
);

const PROTO_KEYS = ["__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf"];

/** Strings meant to break things: unicode, control characters, lone surrogates, paths, huge. */
export const hostileString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 30 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      ...PROTO_KEYS,
      "",
      " ",
      "\u0000",
      "\ud800",
      "\u202e",
      "../../etc/passwd",
      "%2e%2e%2f",
      "' OR 1=1 --",
      `$${"{"}jndi:ldap://x}`,
      "NaN",
      "-1",
      "1e309",
      "null",
      "true",
      "💥".repeat(50),
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 300_000 }).map((n) => "x".repeat(n)) },
);

/** Any JSON-ish value, with prototype-pollution keys among the object keys. */
export const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double(),
    fc.constantFrom(-1, 0, 2 ** 31, 2 ** 53, Number.MAX_VALUE, -0),
    hostileString,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.constantFrom(...PROTO_KEYS), fc.string({ maxLength: 10 })), tie("value"), {
      maxKeys: 4,
    }),
  ),
})).value;

/** Text bodies beyond what JSON.stringify makes: deep nesting, broken JSON, NaN, raw proto keys. */
export const hostileText = fc.oneof(
  fc.integer({ min: 60, max: 120_000 }).map((n) => `{"input":{"a":${"[".repeat(n)}${"]".repeat(n)}}}`),
  fc.integer({ min: 60, max: 120_000 }).map((n) => `{"output":${'{"a":'.repeat(n)}1${"}".repeat(n)}}`),
  fc.integer({ min: 60, max: 120_000 }).map((n) => `{"input":${"[".repeat(n)}${"]".repeat(n)}}`),
  fc.integer({ min: 60, max: 50_000 }).map((n) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`),
  fc.integer({ min: 60, max: 5_000 }).map((n) => `{"output":${"[".repeat(n)}NaN${"]".repeat(n)}}`),
  fc.constantFrom(
    "",
    "{",
    "}",
    "[",
    "null",
    "0",
    '"text"',
    "[]",
    "{}",
    '{"input":{}}',
    '{"input":null}',
    '{"input":[]}',
    '{"input":"x"}',
    '{"__proto__":{"polluted":true},"input":{}}',
    '{"constructor":{"prototype":{"polluted":true}},"input":{}}',
    '{"input":{"__proto__":{"polluted":true}}}',
    '{"output":NaN,"error":Infinity}',
    '{"input":{}} trailing',
    "\u0000",
    "\ufeff{}",
  ),
  hostileString,
);

/** A body: mostly JSON of a value (of `shape` when given), sometimes hostile text. */
export function bodyOf(shape?: fc.Arbitrary<unknown>): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 4, arbitrary: (shape ?? hostileValue).map((value) => JSON.stringify(value) ?? "null") },
    { weight: 1, arbitrary: hostileValue.map((value) => JSON.stringify(value) ?? "null") },
    { weight: 3, arbitrary: hostileText },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

export const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant("application/json") },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      "text/plain",
      "application/x-www-form-urlencoded",
      "application/json; charset=utf-16",
      "multipart/form-data; boundary=x",
      "",
    ),
  },
);

/** A path segment: a real id, another account's, or something hostile (encoded to stay one segment). */
export function segment(real: () => string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.nat().map((i) => pick(real(), i)) },
    { weight: 2, arbitrary: hostileString.map((s) => encode(s.slice(0, 2_000)) || "x") },
    { weight: 1, arbitrary: fc.constantFrom("..", ".", "%00", "%2F", "a&b=c", "x%3Fy") },
  );
}

/** Percent-encoding of any string (lone surrogates become U+FFFD first). */
const encode = (text: string): string => encodeURIComponent(text.replace(/[\ud800-\udfff]/gu, "\ufffd"));

function pick(values: string[], index: number): string {
  return values[index % Math.max(1, values.length)] ?? "none";
}

/** A query string: known parameters with hostile values, and junk. */
export function queryOf(names: string[]): fc.Arbitrary<string> {
  const value = fc.oneof(
    fc.constantFrom("0", "1", "-1", "1000", "300000", "999999999999", "NaN", "true", "", "1e3", "0x10"),
    hostileString.map((s) => s.slice(0, 200)),
  );
  const pair = fc.tuple(fc.oneof(fc.constantFrom(...names, "api_key"), fc.string({ maxLength: 8 })), value);
  return fc
    .array(pair, { maxLength: 4 })
    .map((pairs) =>
      pairs.length === 0 ? "" : `?${pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join("&")}`,
    );
}
