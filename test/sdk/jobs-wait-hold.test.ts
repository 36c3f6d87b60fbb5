import { createServer, request as httpRequest, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AbortedError, NotFoundError } from "../../sdk/errors";
import { JobClient } from "../../sdk/jobs";
import { eventually, type Harness, KEY, startHarness } from "../service/jobs/harness";
import { ProtocolWorker } from "../service/jobs/protocol-worker";
import { failure } from "./support";

/**
 * waitFor against the started service (its clock manual: a hold ends only when the job does, or at
 * shutdown): one call the service holds per wait instead of a /status poll a second, the result as
 * soon as the job ends, and /status polls where a service has no /status-sync.
 */

let h: Harness;
/** Requests the service received, by route ("status", "status-sync", ...). */
const seen = new Map<string, number>();
const clients: JobClient[] = [];

beforeAll(async () => {
  h = await startHarness();
  h.app.server.on("request", (req: { url?: string }) => {
    const route = /^\/v2\/[^/]+\/([^/?]+)/.exec(req.url ?? "")?.[1];
    if (route) seen.set(route, (seen.get(route) ?? 0) + 1);
  });
});
afterAll(async () => {
  for (const client of clients) await client.close({ force: true });
  await h?.close();
});

function setUp(baseUrl = `${h.url}/v2`) {
  const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
  const jobs = new JobClient({ apiKey: KEY, endpointId: endpoint.id, baseUrl, retries: 0 });
  clients.push(jobs);
  return { jobs, worker: new ProtocolWorker(h, endpoint.id, `w-${endpoint.id}`) };
}

const count = (route: string) => seen.get(route) ?? 0;
const held = () => h.plane.book.watchers.waiting;

describe("waitFor long-polls /status-sync", () => {
  it("sends one held call for the whole wait and resolves as soon as the job ends, with no poll pause", async () => {
    const { jobs, worker } = setUp();
    const { id } = await jobs.run({ input: { n: 1 } });
    const before = { status: count("status"), sync: count("status-sync") };
    // A poll pause longer than the test may take: the result can only come from the held call.
    const done = jobs.waitFor(id, { pollIntervalMs: 300_000 });
    await eventually(() => (held() === 1 ? true : undefined));
    await worker.take();
    await worker.done(id, { output: { n: 1 } });
    expect(await done).toMatchObject({ id, status: "COMPLETED", output: { n: 1 } });
    expect(count("status-sync") - before.sync).toBe(1);
    expect(count("status") - before.status).toBe(0);
  });

  it("close() ends a held wait at once; the wait fails as a closed client's call", async () => {
    const { jobs } = setUp();
    const { id } = await jobs.run({ input: {} });
    const waiting = failure(jobs.waitFor(id));
    await eventually(() => (held() === 1 ? true : undefined));
    await jobs.close();
    expect((await waiting).toJSON()).toMatchObject({ code: "VALIDATION", operation: "jobs.waitFor" });
    expect(held()).toBe(0);
  });

  it("the caller's signal ends a held wait with an AbortedError naming the job", async () => {
    const { jobs } = setUp();
    const { id } = await jobs.run({ input: {} });
    const controller = new AbortController();
    const waiting = failure(jobs.waitFor(id, { signal: controller.signal }));
    await eventually(() => (held() === 1 ? true : undefined));
    controller.abort();
    const error = await waiting;
    expect(error).toBeInstanceOf(AbortedError);
    expect(error.toJSON()).toMatchObject({ operation: "jobs.waitFor", jobId: id, code: "ABORTED" });
  });
});

/** The service seen through a proxy that answers 404 for /status-sync, as a service without it. */
async function withoutStatusSync(target: string): Promise<{ url: string; server: Server }> {
  const { port } = new URL(target);
  const server = createServer((req, res) => {
    if (/\/status-sync\//.test(req.url ?? "")) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
      return;
    }
    const upstream = httpRequest(
      { host: "127.0.0.1", port, method: req.method, path: req.url, headers: req.headers },
      (reply) => {
        res.writeHead(reply.statusCode ?? 502, reply.headers);
        reply.pipe(res);
      },
    );
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`, server };
}

describe("waitFor on a service without /status-sync", () => {
  it("polls /status after the first 404, and an unknown job is still a NotFoundError of jobs.waitFor", async () => {
    const proxy = await withoutStatusSync(h.url);
    try {
      const { jobs, worker } = setUp(`${proxy.url}/v2`);
      const unknown = await failure(jobs.waitFor("no-such-job", { pollIntervalMs: 10 }));
      expect(unknown).toBeInstanceOf(NotFoundError);
      expect(unknown.toJSON()).toMatchObject({ operation: "jobs.waitFor", jobId: "no-such-job" });
      const { id } = await jobs.run({ input: { n: 2 } });
      const before = count("status");
      const done = jobs.waitFor(id, { pollIntervalMs: 10 });
      // Polled: /status requests reach the service while the job is queued.
      await eventually(() => (count("status") >= before + 3 ? true : undefined));
      await worker.take();
      await worker.done(id, { output: { n: 2 } });
      expect(await done).toMatchObject({ id, status: "COMPLETED", output: { n: 2 } });
    } finally {
      proxy.server.closeAllConnections();
      proxy.server.close();
    }
  });
});

describe("held waits under the service's limits", () => {
  /** A service allowing one /status-sync and one /status call in flight per endpoint. */
  const limited = () =>
    startHarness({
      config: {
        rateLimits: {
          enabled: true,
          requestsPerWorker: 1,
          limits: {
            status: { requests: 1_000, windowMs: 10_000, concurrent: 1 },
            "status-sync": { requests: 1_000, windowMs: 10_000, concurrent: 1 },
          },
        },
      },
    });

  it("held /status-sync calls do not take /status's slots; one past the bound is a 429, not a 5xx", async () => {
    const s = await limited();
    try {
      const endpoint = s.endpoint("runpodkit/echo", { workersMax: 0 });
      const { body } = await s.call("POST", `/v2/${endpoint.id}/run`, { body: { input: {} } });
      const id = (body as { id: string }).id;
      const holding = s.call("GET", `/v2/${endpoint.id}/status-sync/${id}?wait=300000`);
      await eventually(() => (s.plane.book.watchers.waiting === 1 ? true : undefined));
      expect((await s.call("GET", `/v2/${endpoint.id}/status/${id}`)).status).toBe(200);
      expect((await s.call("GET", `/v2/${endpoint.id}/status-sync/${id}?wait=1000`)).status).toBe(429);
      // Shutdown releases the held call with the job's status.
      const closing = s.close();
      expect(await holding).toMatchObject({ status: 200, body: { id, status: "IN_QUEUE" } });
      await closing;
    } catch (error) {
      await s.close().catch(() => undefined);
      throw error;
    }
  });

  it("a wait the service has no room to hold polls /status instead, and still gets the result", async () => {
    const s = await limited();
    const endpoint = s.endpoint("runpodkit/echo", { workersMax: 0 });
    const jobs = new JobClient({ apiKey: KEY, endpointId: endpoint.id, baseUrl: `${s.url}/v2`, retries: 0 });
    try {
      const worker = new ProtocolWorker(s, endpoint.id, "w-limited");
      const first = await jobs.run({ input: { n: 1 } });
      const second = await jobs.run({ input: { n: 2 } });
      const firstDone = jobs.waitFor(first.id, { pollIntervalMs: 300_000 });
      await eventually(() => (s.plane.book.watchers.waiting === 1 ? true : undefined));
      // maxOutageMs 0: a 429 counted as an outage would end this wait at once.
      const secondDone = jobs.waitFor(second.id, { pollIntervalMs: 10, maxOutageMs: 0 });
      for (const { id } of [first, second]) {
        await worker.take();
        await worker.done(id, { output: { id } });
      }
      expect(await firstDone).toMatchObject({ id: first.id, status: "COMPLETED" });
      expect(await secondDone).toMatchObject({ id: second.id, status: "COMPLETED" });
    } finally {
      await jobs.close({ force: true });
      await s.close();
    }
  });
});

describe("held calls at shutdown", () => {
  it("a /runsync and a /status-sync held at shutdown are answered and do not keep close() waiting", async () => {
    for (const fastPath of [true, false]) {
      const s = await startHarness({ config: { fastPath } });
      const endpoint = s.endpoint("runpodkit/echo", { workersMax: 0 });
      // Keep-alive clients that are not closed: the service must not wait for them to hang up.
      const jobs = new JobClient({ apiKey: KEY, endpointId: endpoint.id, baseUrl: `${s.url}/v2` });
      clients.push(jobs);
      const { id } = await jobs.run({ input: {} });
      const runSync = jobs.runSync({ input: {} }, { wait: 300_000 });
      const statusSync = jobs.statusSync(id, { wait: 300_000 });
      await eventually(() => (s.plane.book.watchers.waiting === 2 ? true : undefined));
      const closed = s.close().then(() => "closed");
      expect(await runSync).toMatchObject({ status: "IN_QUEUE" });
      expect(await statusSync).toMatchObject({ id, status: "IN_QUEUE" });
      // The service's close ends before a keep-alive connection's timeout would (the test's budget).
      expect(await closed).toBe("closed");
    }
  });
});

describe("many waits on one client", () => {
  it("hold at most half its pool, so a run() and a status() meanwhile still get a socket", async () => {
    const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
    // A pool of 4 sockets stands for the default 64; the budget is what a call queued behind held ones gets.
    const jobs = new JobClient({
      apiKey: KEY,
      endpointId: endpoint.id,
      baseUrl: `${h.url}/v2`,
      retries: 0,
      connections: 4,
      timeoutMs: 5_000,
    });
    clients.push(jobs);
    const worker = new ProtocolWorker(h, endpoint.id, `w-many-${endpoint.id}`);
    const before = held();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await jobs.run({ input: { i } })).id);
    const waits = ids.map((id) => jobs.waitFor(id, { pollIntervalMs: 20 }));
    await eventually(() => (held() - before >= 2 ? true : undefined));
    // Before, all 4 waits held a socket each and these timed out, never sent.
    const another = await jobs.run({ input: { i: 4 } });
    expect(another.status).toBe("IN_QUEUE");
    expect(await jobs.status(ids[0] ?? "")).toMatchObject({ id: ids[0], status: "IN_QUEUE" });
    expect(held() - before).toBe(2);
    for (const id of [...ids, another.id]) {
      await worker.take();
      await worker.done(id, { output: { id } });
    }
    expect((await Promise.all(waits)).map((result) => result.status)).toEqual([
      "COMPLETED",
      "COMPLETED",
      "COMPLETED",
      "COMPLETED",
    ]);
  });
});
