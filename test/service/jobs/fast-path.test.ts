import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ManualClock } from "../../../service/clock";
import type { JobPlaneConfig } from "../../../service/jobs/config";
import { eventually, type Harness, KEY, startHarness } from "./harness";
import { stallBody } from "./stalled-body";

/**
 * The fast path (service/edge/fast-path.ts, service/jobs/http/fast-routes.ts) answers /run, /runsync,
 * job-take, job-take-batch and job-done exactly as their Fastify routes do: the same requests, sent over HTTP to
 * a service with the fast path and to one without it (config.fastPath false: every request through
 * Fastify), get the same statuses, headers and bodies (ids aside).
 */

const CONFIG: Partial<JobPlaneConfig> = {
  workerBodyLimit: 2_000,
  rateLimits: {
    enabled: true,
    requestsPerWorker: 0,
    limits: { run: { requests: 12, windowMs: 10_000, concurrent: null } },
  },
};

interface Sent {
  method: "GET" | "POST";
  /** Under /v2/{endpoint}/. */
  path: string;
  key?: string | null;
  body?: string;
  headers?: Record<string, string>;
  /** A long-poll: the clock moves on until it is answered (an empty take ends in 204). */
  holds?: true;
}

/** What must be the same: status, the headers a route sets, the body with this service's ids replaced. */
interface Seen {
  status: number;
  headers: Record<string, string | undefined>;
  body: string;
}

const DEEP = `{"input": ${"[".repeat(70)}${"]".repeat(70)}}`;
const WORKER = "w-fast";

/** The requests, in order; `{job}` in a path is the first job /run queued. */
const SCRIPT: Sent[] = [
  { method: "POST", path: "run", key: "rpk_not_a_key", body: '{"input": {}}' },
  { method: "POST", path: "run", key: null, body: '{"input": {}}' },
  { method: "POST", path: "run", body: "{" },
  { method: "POST", path: "run", body: DEEP },
  { method: "POST", path: "run", body: '{"__proto__": {"x": 1}, "input": {}}' },
  { method: "POST", path: "run", body: "" },
  { method: "POST", path: "run", body: "{}" },
  { method: "POST", path: "run", body: '{"input": {"n": 1}}' },
  { method: "POST", path: "run", body: '{"input": {"n": 2}}', headers: { "content-type": "text/plain" } },
  {
    method: "POST",
    path: "run",
    body: '{"input": {"n": 3}}',
    headers: { "content-type": "application/json; charset=utf-8" },
  },
  { method: "GET", path: `job-take/${WORKER}?gpu=LOCAL&job_in_progress=0`, key: "rpk_not_a_key" },
  { method: "GET", path: `job-take/${WORKER}?gpu=LOCAL&job_in_progress=0&batch_size=x` },
  { method: "GET", path: `job-take/${WORKER}?gpu=LOCAL&job_in_progress=0` },
  { method: "GET", path: `job-take-batch/${WORKER}?gpu=LOCAL&batch_size=5&job_in_progress=1` },
  { method: "GET", path: `job-take-batch/${WORKER}?gpu=LOCAL&batch_size=0&job_in_progress=1` },
  { method: "GET", path: `job-take/${WORKER}?gpu=LOCAL&job_in_progress=0` },
  { method: "GET", path: "job-take/w-idle?gpu=LOCAL&job_in_progress=0", holds: true },
  { method: "POST", path: "run", body: '{"input": {"n": 4}}' },
  { method: "GET", path: `job-take/${WORKER}&gpu=LOCAL&job_in_progress=1` },
  { method: "POST", path: `job-done/${WORKER}/{job}?gpu=LOCAL`, key: "rpk_not_a_key", body: "{}" },
  { method: "POST", path: `job-done/${WORKER}/{job}?gpu=LOCAL`, body: "{not json" },
  { method: "POST", path: `job-done/${WORKER}/{job}?gpu=LOCAL`, body: DEEP.replace("input", "output") },
  { method: "POST", path: `job-done/${WORKER}/{job}?gpu=LOCAL`, body: `{"output": "${"x".repeat(2_100)}"}` },
  { method: "POST", path: `job-done/${WORKER}/{job}?gpu=LOCAL`, body: '{"output": 1, "status": "BOGUS"}' },
  { method: "POST", path: `job-done/${WORKER}/no-such-job?gpu=LOCAL`, body: '{"output": 1}' },
  {
    method: "POST",
    path: `job-done/${WORKER}/{job}?gpu=LOCAL&isStream=false`,
    body: '{"output": {"v": NaN}}',
    headers: { "content-type": "application/x-www-form-urlencoded" },
  },
  { method: "POST", path: `job-done/${WORKER}/{job}?gpu=LOCAL`, body: '{"output": 2}', headers: {} },
  ...Array.from({ length: 6 }, (): Sent => ({ method: "POST", path: "run", body: '{"input": {}}' })),
  { method: "POST", path: "runsync", key: "rpk_not_a_key", body: '{"input": {}}' },
  { method: "POST", path: "runsync", body: "{" },
  { method: "POST", path: "runsync", body: "{}" },
  { method: "POST", path: "runsync?wait=abc", body: '{"input": {"n": 5}}' },
  { method: "POST", path: "runsync", body: '{"input": {"n": 6}}', headers: { "content-type": "text/plain" } },
  // No worker takes it: answered when `wait` is up, with the job still queued.
  { method: "POST", path: "runsync?wait=2000", body: '{"input": {"n": 7}}', holds: true },
];

async function play(h: Harness, endpointId: string): Promise<Seen[]> {
  const seen: Seen[] = [];
  const ids: string[] = [];
  for (const sent of SCRIPT) {
    const headers: Record<string, string> = { "content-type": "application/json", ...sent.headers };
    const key = sent.key === undefined ? KEY : sent.key;
    if (key !== null) headers.authorization = key;
    const path = sent.path.replace("{job}", ids[0] ?? "none");
    const answered = request(`${h.url}/v2/${endpointId}/${path}`, {
      method: sent.method,
      headersTimeout: 3000,
      headers,
      ...(sent.body !== undefined && { body: sent.body }),
    });
    if (sent.holds) {
      let done = false;
      void answered.then(() => {
        done = true;
      });
      const clock = h.clock as ManualClock;
      await eventually(async () => {
        await clock.advance(1_000);
        return done ? true : undefined;
      });
    }
    const reply = await answered;
    const raw = await reply.body.text();
    let text = raw;
    if (/^run(sync)?\b/.test(path) && reply.statusCode === 200)
      ids.push((JSON.parse(raw) as { id: string }).id);
    for (const [i, id] of ids.entries()) text = text.replaceAll(id, `<job ${i}>`);
    const header = (name: string) => {
      const value = reply.headers[name];
      return Array.isArray(value) ? value.join(",") : value;
    };
    seen.push({
      status: reply.statusCode,
      headers: {
        "content-type": header("content-type"),
        connection: header("connection"),
        "keep-alive": header("keep-alive"),
        "retry-after": header("retry-after"),
        // The body's own length (ids differ in length between the two services), or none.
        "content-length":
          header("content-length") === undefined
            ? undefined
            : String(Number(header("content-length")) === Buffer.byteLength(raw)),
      },
      body: text.replaceAll(endpointId, "<endpoint>"),
    });
  }
  return seen;
}

describe("the fast path answers as Fastify does", () => {
  let fast: Harness;
  let plain: Harness;
  beforeAll(async () => {
    fast = await startHarness({ config: CONFIG });
    plain = await startHarness({ config: { ...CONFIG, fastPath: false } });
  });
  afterAll(async () => {
    await fast.close();
    await plain.close();
  });

  it("the same statuses, headers and bodies for /run, /runsync, job-take, job-take-batch and job-done, refusals included", async () => {
    expect(fast.plane.fast).not.toBeNull();
    expect(plain.plane.fast).toBeNull();
    const viaFast = await play(fast, fast.endpoint("runpodkit/echo", { workersMax: 0 }).id);
    const viaFastify = await play(plain, plain.endpoint("runpodkit/echo", { workersMax: 0 }).id);
    expect(viaFast).toEqual(viaFastify);
    // All but the text/plain /run and /runsync and the job-done past the body limit (left to Fastify)
    // went the fast way.
    expect(fast.plane.fast?.served).toBe(SCRIPT.length - 3);
    // The script meets every answer it is meant to: not a run of identical 404s.
    const statuses = viaFast.map((s) => s.status);
    expect(statuses).toEqual(expect.arrayContaining([200, 400, 401, 404, 413, 429]));
  });

  it("an aborted job-done body releases its memory reservation", async () => {
    const ep = fast.endpoint("runpodkit/echo", { workersMax: 0 });
    const before = fast.plane.memory.used;
    const stalled = stallBody(fast, ep.id, `job-done/w-abort/job-1?gpu=LOCAL`, 1_500);
    await eventually(() => (fast.plane.memory.used === before + 1_500 ? true : undefined), 5_000);
    stalled.destroy();
    await eventually(() => (fast.plane.memory.used === before ? true : undefined), 5_000);
  });
});
