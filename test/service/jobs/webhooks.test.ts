import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ManualClock } from "../../../service/clock";
import { DEFAULT_WEBHOOK_OPTIONS } from "../../../service/jobs/webhooks/webhooks";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { eventually, type Harness, startHarness } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

interface Received {
  method: string;
  contentType: string | undefined;
  body: Record<string, unknown>;
}

/** A webhook receiver answering each call with the next scripted status (then 200). */
async function receiver(statuses: number[]): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => {
      text += chunk;
    });
    req.on("end", () => {
      received.push({
        method: req.method ?? "",
        contentType: req.headers["content-type"],
        body: JSON.parse(text),
      });
      res.statusCode = statuses.shift() ?? 200;
      res.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, received, server };
}

describe("webhooks", () => {
  let h: Harness;
  let clock: ManualClock;
  let ep: EndpointRecord;
  let worker: ProtocolWorker;
  let server: Server | null = null;

  beforeEach(async () => {
    h = await startHarness();
    clock = h.clock as ManualClock;
    ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    worker = new ProtocolWorker(h, ep.id, "w-hook");
  });
  afterEach(async () => {
    await h.close();
    server?.close();
  });

  const runAndTake = async (webhook: string, body: object = {}) => {
    const reply = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { a: 1 }, webhook, ...body } });
    const id = (reply.body as { id: string }).id;
    await worker.take();
    return id;
  };
  const count = (list: unknown[], n: number) => eventually(() => (list.length >= n ? true : undefined));

  it("POSTs the final status envelope with input and webhook when a job completes", async () => {
    const hook = await receiver([]);
    server = hook.server;
    const id = await runAndTake(hook.url);
    await clock.advance(700);
    await worker.done(id, { output: { ok: true } });
    await count(hook.received, 1);
    expect(hook.received[0]).toEqual({
      method: "POST",
      contentType: "application/json",
      body: {
        id,
        status: "COMPLETED",
        delayTime: 0,
        executionTime: 700,
        output: { ok: true },
        workerId: worker.id,
        input: { a: 1 },
        webhook: hook.url,
      },
    });
  });

  it("is sent for failures (with the error) and timeouts, not for cancellations", async () => {
    const hook = await receiver([]);
    server = hook.server;
    const failed = await runAndTake(hook.url);
    await worker.done(failed, { error: "nope" });
    await count(hook.received, 1);
    expect(hook.received[0]?.body).toMatchObject({ id: failed, status: "FAILED", error: "nope" });

    const timedOut = await runAndTake(hook.url, { policy: { executionTimeout: 5_000 } });
    await clock.advance(5_000);
    await count(hook.received, 2);
    expect(hook.received[1]?.body).toMatchObject({ id: timedOut, status: "TIMED_OUT" });

    const cancelled = await runAndTake(hook.url);
    await h.call("POST", `/v2/${ep.id}/cancel/${cancelled}`);
    const completed = await runAndTake(hook.url);
    await worker.done(completed, { output: 1 });
    await count(hook.received, 3);
    expect(hook.received.map((r) => r.body.id)).toEqual([failed, timedOut, completed]);
  });

  it("a reply other than 200 is retried 2 more times, 10 s apart", async () => {
    const hook = await receiver([500, 201, 500, 500]);
    server = hook.server;
    const id = await runAndTake(hook.url);
    await worker.done(id, { output: 1 });
    await count(hook.received, 1);
    await clock.advance(9_999);
    expect(hook.received.length).toBe(1);
    await clock.advance(1);
    await count(hook.received, 2);
    await clock.advance(10_000);
    await count(hook.received, 3);
    await clock.advance(60_000);
    expect(hook.received.length).toBe(3);
    await h.plane.webhooks.idle();
    // Said once, in the service log, by origin only.
    const said = h.logs.filter((line) => line.includes(`webhook of job ${id}`));
    expect(said).toEqual([
      `webhook of job ${id} to ${new URL(hook.url).origin} failed after 3 attempts (last: HTTP 500)`,
    ]);
    // A webhook failure never changes the job.
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
      status: "COMPLETED",
      output: 1,
    });
  });

  it("stops retrying after a 200", async () => {
    const hook = await receiver([503]);
    server = hook.server;
    const id = await runAndTake(hook.url);
    await worker.done(id, { output: 1 });
    await count(hook.received, 1);
    await clock.advance(10_000);
    await count(hook.received, 2);
    await clock.advance(60_000);
    await h.plane.webhooks.idle();
    expect(hook.received.length).toBe(2);
    expect(h.logs.filter((line) => line.includes(`webhook of job ${id}`))).toEqual([]);
  });

  it("an unreachable receiver changes nothing", async () => {
    const hook = await receiver([]);
    hook.server.close();
    const id = await runAndTake(hook.url);
    await worker.done(id, { output: "fine" });
    await clock.advance(30_000);
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
      status: "COMPLETED",
      output: "fine",
    });
  });
});

describe("webhooks to a receiver that never answers", () => {
  let h: Harness | undefined;
  const servers: Server[] = [];
  afterEach(async () => {
    await h?.close();
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      server.close();
    }
  });

  /** A receiver reading each body whole; it answers 200, or never (`answers: false`). */
  async function hook(answers: boolean) {
    const bodies: { id: string; bytes: number }[] = [];
    const server = createServer((req, res) => {
      let text = "";
      req.on("data", (chunk) => {
        text += chunk;
      });
      req.on("end", () => {
        bodies.push({ id: (JSON.parse(text) as { id: string }).id, bytes: text.length });
        if (answers) res.end("ok");
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, bodies };
  }

  /** A harness whose webhooks send at most `maxInFlightBytes` at once, and a job finisher. */
  async function start(maxInFlightBytes: number) {
    h = await startHarness({ config: { webhooks: { ...DEFAULT_WEBHOOK_OPTIONS, maxInFlightBytes } } });
    const harness = h;
    const ep = harness.endpoint("runpodkit/echo", { workersMax: 0 });
    const worker = new ProtocolWorker(harness, ep.id, "w-hook-bound");
    const finish = async (webhook: string, blob: number, i: number) => {
      const reply = await harness.call("POST", `/v2/${ep.id}/run`, {
        body: { input: { blob: "y".repeat(blob), i }, webhook },
      });
      const id = (reply.body as { id: string }).id;
      await worker.take();
      await worker.done(id, { output: i });
      return id;
    };
    return { harness, clock: harness.clock as ManualClock, ep, finish };
  }

  it("send at most maxInFlightBytes of payloads at once; the rest wait their turn, and each is sent", async () => {
    const { harness, clock, ep, finish } = await start(500_000);
    const silent = await hook(false);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await finish(silent.url, 200_000, i));
    // 200 KB payloads: the first three go (the third while 400 KB were in flight), the rest wait.
    await eventually(() => (silent.bodies.length >= 3 ? true : undefined));
    expect((await harness.call("GET", `/v2/${ep.id}/health`)).status).toBe(200);
    expect(silent.bodies.map((b) => b.id)).toEqual(ids.slice(0, 3));
    const size = silent.bodies[0]?.bytes ?? 0;
    expect(size).toBeGreaterThan(200_000);
    expect(harness.plane.webhooks.sendingBytes).toBe(3 * size);
    // Their attempts time out: the next three go.
    await clock.advance(DEFAULT_WEBHOOK_OPTIONS.timeoutMs);
    await eventually(() => (silent.bodies.length >= 6 ? true : undefined));
    expect(silent.bodies.map((b) => b.id)).toEqual(ids);
    expect(harness.plane.webhooks.sendingBytes).toBe(3 * size);
  });

  it("jobs ending in one turn (timed out together) send at most maxInFlightBytes of payloads at once too", async () => {
    const { harness, clock, ep } = await start(500_000);
    const silent = await hook(false);
    const worker = new ProtocolWorker(harness, ep.id, "w-hook-batch");
    for (let i = 0; i < 6; i++) {
      const reply = await harness.call("POST", `/v2/${ep.id}/run`, {
        body: {
          input: { blob: "y".repeat(200_000), i },
          webhook: silent.url,
          policy: { executionTimeout: 5_000 },
        },
      });
      expect(reply.status).toBe(200);
    }
    expect((await worker.takeBatch(6)).body).toHaveLength(6);
    // The six time out in one turn: each payload was made before any was counted, so all six went.
    await clock.advance(5_000);
    await eventually(() => (silent.bodies.length >= 3 ? true : undefined));
    const size = silent.bodies[0]?.bytes ?? 0;
    expect(size).toBeGreaterThan(200_000);
    expect(harness.plane.webhooks.sendingBytes).toBe(3 * size);
    await clock.advance(DEFAULT_WEBHOOK_OPTIONS.timeoutMs);
    await eventually(() => (silent.bodies.length >= 6 ? true : undefined));
    expect(new Set(silent.bodies.map((b) => b.id)).size).toBe(6);
  });

  it("takes waiting attempts in turn by receiver: another receiver's delivery goes at the next turn, not after all of the silent one's", async () => {
    const { clock, finish } = await start(100_000);
    const silent = await hook(false);
    const healthy = await hook(true);
    for (let i = 0; i < 4; i++) await finish(silent.url, 200_000, i);
    await eventually(() => (silent.bodies.length >= 1 ? true : undefined));
    const other = await finish(healthy.url, 10, 99);
    // One payload at a time: the silent receiver's first holds the room, its second goes next.
    await clock.advance(DEFAULT_WEBHOOK_OPTIONS.timeoutMs);
    await eventually(() => (silent.bodies.length >= 2 ? true : undefined));
    expect(healthy.bodies).toEqual([]);
    // Then the other receiver's turn, before the silent one's third and fourth.
    await clock.advance(DEFAULT_WEBHOOK_OPTIONS.timeoutMs);
    await eventually(() => (healthy.bodies.length >= 1 ? true : undefined));
    expect(healthy.bodies.map((b) => b.id)).toEqual([other]);
    await eventually(() => (silent.bodies.length >= 3 ? true : undefined));
    expect(silent.bodies).toHaveLength(3);
  });
});

describe("webhooks under a burst to one receiver", () => {
  let h: Harness | undefined;
  let server: Server | undefined;
  afterEach(async () => {
    await h?.close();
    server?.closeAllConnections();
    server?.close();
  });

  it("attempts past the receiver's connections wait their turn: each is sent once, its timeout running from when it is sent", async () => {
    // Two deliveries more than the connections to one receiver, at once; the receiver answers each
    // 200 in 6 s (within the 10 s timeout). The two used to wait in the connection pool's queue while
    // their timeout ran, and were cut off 4 s after reaching the receiver, then sent again.
    const { connectionsPerOrigin } = DEFAULT_WEBHOOK_OPTIONS;
    const jobs = connectionsPerOrigin + 2;
    h = await startHarness();
    const harness = h;
    const clock = harness.clock as ManualClock;
    const arrivals: string[] = [];
    const held: (() => void)[] = [];
    server = createServer((req, res) => {
      let text = "";
      req.on("data", (chunk) => {
        text += chunk;
      });
      req.on("end", () => {
        arrivals.push((JSON.parse(text) as { id: string }).id);
        held.push(() => res.end("ok"));
      });
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const ep = harness.endpoint("runpodkit/echo", { workersMax: 0 });
    const worker = new ProtocolWorker(harness, ep.id, "w-burst");
    const ids: string[] = [];
    for (let i = 0; i < jobs; i++) {
      const reply = await harness.call("POST", `/v2/${ep.id}/run`, { body: { input: { i }, webhook: url } });
      ids.push((reply.body as { id: string }).id);
    }
    expect((await worker.takeBatch(jobs)).body).toHaveLength(jobs);
    await Promise.all(ids.map((id) => worker.done(id, { output: id })));
    const answerAfter6s = async (sent: number) => {
      await eventually(() => (arrivals.length >= sent ? true : undefined));
      expect(arrivals).toHaveLength(sent);
      await clock.advance(6_000);
      for (const answer of held.splice(0)) answer();
    };
    await answerAfter6s(connectionsPerOrigin);
    await answerAfter6s(jobs);
    // Every delivery ended with its first attempt's 200: none waits to be sent again.
    await eventually(() => (harness.plane.webhooks.deliveries === 0 ? true : undefined));
    expect([...arrivals].sort()).toEqual([...ids].sort());
    expect(harness.logs.filter((line) => line.includes("webhook"))).toEqual([]);
  });
});
