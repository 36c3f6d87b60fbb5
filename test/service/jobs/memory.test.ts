import { mkdtempSync, rmSync } from "node:fs";
import { type ClientRequest, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import type { JobPlaneConfig } from "../../../service/jobs/config";
import { eventually, type Harness, KEY, startHarness } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

/** Issue 10, finding 4: large queued inputs live in the store, queues have a cap, memory a budget. */
describe("job memory", () => {
  const running: Harness[] = [];
  const dirs: string[] = [];
  /** Requests whose bodies never came (a test that failed midway): ended before the harness closes. */
  const stalled: ClientRequest[] = [];
  afterEach(async () => {
    for (const request of stalled.splice(0)) request.destroy();
    for (const h of running.splice(0)) await h.close().catch(() => {});
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  const start = async (config: Partial<JobPlaneConfig>, data?: string, clock?: ManualClock) => {
    const h = await startHarness({ config, ...(data ? { data } : {}), ...(clock ? { clock } : {}) });
    running.push(h);
    return h;
  };
  const run = async (h: Harness, endpointId: string, input: object) => {
    const reply = await h.call("POST", `/v2/${endpointId}/run`, { body: { input } });
    expect(reply.status).toBe(200);
    return (reply.body as { id: string }).id;
  };

  it("an input past spillInputBytes leaves memory once written and is read back when the job is taken", async () => {
    const h = await start({ spillInputBytes: 1_024 });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const big = { text: "é".repeat(5_000) };
    const small = { n: 1 };
    const bigId = await run(h, ep.id, big);
    const smallId = await run(h, ep.id, small);
    expect(h.plane.book.find(bigId)?.inputInMemory).toBe(false);
    expect(h.plane.book.find(smallId)?.inputInMemory).toBe(true);
    // Only the small input counts against the budget.
    expect(h.plane.memory.used).toBe(JSON.stringify(small).length);

    const worker = new ProtocolWorker(h, ep.id, "w-memory");
    const taken = await worker.take();
    expect(taken.body).toEqual({ id: bigId, input: big });
    await worker.done(bigId, { output: { ok: 1 } });
    expect((await h.call("GET", `/v2/${ep.id}/status/${bigId}`)).body).toMatchObject({
      status: "COMPLETED",
      output: { ok: 1 },
    });
    await worker.take();
    await worker.done(smallId, { output: {} });
    expect(h.plane.memory.used).toBe(0);
  });

  it("after a restart, large queued inputs stay in the store until taken", async () => {
    const dir = mkdtempSync(join(tmpdir(), "runpodkit-memory-"));
    dirs.push(dir);
    const data = join(dir, "service.sqlite");
    const clock = new ManualClock();
    const first = await start({ spillInputBytes: 1_024 }, data, clock);
    const ep = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const big = { text: "x".repeat(50_000) };
    const id = await run(first, ep.id, big);
    await first.close();
    running.splice(running.indexOf(first), 1);

    const second = await start({ spillInputBytes: 1_024 }, data, clock);
    expect(second.plane.book.find(id)?.inputInMemory).toBe(false);
    expect(second.plane.memory.used).toBe(0);
    const taken = await new ProtocolWorker(second, ep.id, "w-after").take();
    expect(taken.body).toEqual({ id, input: big });
  });

  it("finished results past the in-memory cache are served from the store for their retention, then gone", async () => {
    const clock = new ManualClock();
    const h = await start({ recentCacheSize: 2 }, undefined, clock);
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const worker = new ProtocolWorker(h, ep.id, "w-retained");
    const ids: string[] = [];
    for (let n = 0; n < 8; n++) {
      const id = await run(h, ep.id, { n });
      ids.push(id);
      await worker.take();
      await worker.done(id, { output: { n } });
    }
    await h.plane.store.flushed();
    // Every finished job is indexed by its row (no Job kept for it); the oldest is read from the store.
    expect(h.plane.store.indexStats.entries).toBe(8);
    for (const [n, id] of ids.entries()) {
      const reply = await h.call("GET", `/v2/${ep.id}/status/${id}`);
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ id, status: "COMPLETED", output: { n } });
    }
    // Retention (30 minutes after /run's jobs end): swept from the store and the index.
    await clock.advance(30 * 60_000 + 10_000);
    for (const id of ids) expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).status).toBe(404);
    expect(h.plane.store.indexStats.entries).toBe(0);
    expect(h.plane.book.counts(ep.id).completed).toBe(0);
  });

  it("stream chunks count against the memory budget until drained: past it 503 naming the budget", async () => {
    const h = await start({ memoryBudgetBytes: 1_500 });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = await run(h, ep.id, { n: 1 });
    const worker = new ProtocolWorker(h, ep.id, "w-stream");
    await worker.take();
    const chunk = "c".repeat(600);
    const sizeOf = JSON.stringify(chunk).length;
    expect((await worker.streamChunk(id, chunk)).status).toBe(200);
    expect((await worker.streamChunk(id, chunk)).status).toBe(200);
    expect(h.plane.memory.used).toBe(JSON.stringify({ n: 1 }).length + 2 * sizeOf);
    const over = await worker.streamChunk(id, chunk);
    expect(over.status).toBe(503);
    expect(over.headers["retry-after"]).toBe("1");
    expect((over.body as { error: string }).error).toContain("memory budget for jobs (1500 bytes)");
    // The service keeps answering; /stream drains what was kept, which frees the budget.
    const drained = await h.call("GET", `/v2/${ep.id}/stream/${id}`);
    expect((drained.body as { stream: unknown[] }).stream).toEqual([{ output: chunk }, { output: chunk }]);
    expect(h.plane.memory.used).toBe(JSON.stringify({ n: 1 }).length);
    expect((await worker.streamChunk(id, chunk)).status).toBe(200);
    await worker.done(id, { output: { ok: true } });
    // Chunks of a finished job are held until drained or the job leaves memory.
    expect(h.plane.memory.used).toBe(sizeOf);
    await h.call("GET", `/v2/${ep.id}/stream/${id}`);
    expect(h.plane.memory.used).toBe(0);
  });

  it("an output past spillOutputBytes leaves memory once written and is read back when asked for", async () => {
    const h = await start({ spillOutputBytes: 1_024, recentCacheSize: 10 });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const worker = new ProtocolWorker(h, ep.id, "w-output");
    const large = { text: "o".repeat(5_000) };
    const id = await run(h, ep.id, { n: 1 });
    await worker.take();
    await worker.progress(id, large);
    await h.plane.store.flushed();
    expect(h.plane.book.find(id)?.outputInMemory).toBe(false);
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
      status: "IN_PROGRESS",
      output: large,
    });
    await worker.done(id, { output: large });
    await h.plane.store.flushed();
    const finished = h.plane.book.find(id);
    expect(finished?.outputInMemory).toBe(false);
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
      status: "COMPLETED",
      output: large,
    });
    // A small output stays in memory (the recent cache's fast path).
    const small = await run(h, ep.id, { n: 2 });
    await worker.take();
    await worker.done(small, { output: { ok: 1 } });
    await h.plane.store.flushed();
    expect(h.plane.book.find(small)?.outputInMemory).toBe(true);
  });

  it("the queue cap: 429 with Retry-After naming the cap; room again once the queue shrinks", async () => {
    const h = await start({ maxQueuedPerEndpoint: 2 });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    await run(h, ep.id, { n: 1 });
    await run(h, ep.id, { n: 2 });
    for (const path of ["run", "runsync"]) {
      const over = await h.call("POST", `/v2/${ep.id}/${path}`, { body: { input: { n: 3 } } });
      expect(over.status).toBe(429);
      expect(over.headers["retry-after"]).toBe("10");
      expect(over.body).toMatchObject({ code: "RATE_LIMITED" });
      expect((over.body as { error: string }).error).toContain("maxQueuedPerEndpoint 2");
    }
    // Another endpoint has its own queue.
    const other = h.endpoint("runpodkit/echo", { workersMax: 0 });
    await run(h, other.id, { n: 1 });
    await h.call("POST", `/v2/${ep.id}/purge-queue`);
    await run(h, ep.id, { n: 4 });
  });

  it("the memory budget: 503 with Retry-After, before the body is read when its length says so", async () => {
    const h = await start({ memoryBudgetBytes: 1_000, spillInputBytes: 10_000 });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    await run(h, ep.id, { text: "x".repeat(600) });
    const over = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { text: "y".repeat(600) } } });
    expect(over.status).toBe(503);
    expect(over.headers["retry-after"]).toBe("1");
    expect(over.body).toMatchObject({ code: "UNAVAILABLE" });
    expect((over.body as { error: string }).error).toContain("memory budget for jobs (1000 bytes)");
    // A body that says it is larger than the room left is refused unread (it is not even JSON).
    const unread = await h.call("POST", `/v2/${ep.id}/run`, { raw: `{${"z".repeat(2_000)}` });
    expect(unread.status).toBe(503);
    // Nothing of the refused jobs was kept; the budget frees as jobs leave.
    expect(h.plane.book.counts(ep.id).inQueue).toBe(1);
    await h.call("POST", `/v2/${ep.id}/purge-queue`);
    expect(h.plane.memory.used).toBe(0);
    await run(h, ep.id, { text: "y".repeat(600) });
  });

  it.each([
    ["the fast path", true],
    ["Fastify's routes", false],
  ])(
    "bodies read at once count together: past the budget the rest are refused unread, the ones read become jobs (%s)",
    async (_, fastPath) => {
      // Five clients at once, each /run saying 400 KB, their bodies slow to come. Each was admitted
      // against the memory held (none yet), so all five bodies were read into memory, 2 MB against a
      // 1 MB budget (a burst of 10 MB bodies the same, in GB), and three refused only once read.
      const h = await start({ memoryBudgetBytes: 1_000_000, spillInputBytes: 10_000_000, fastPath });
      const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
      const bytes = 400_000;
      const head = '{"input": {"text": "';
      const tail = '"}}';
      const requests: { request: ClientRequest; status: number | null; text: string }[] = [];
      for (let i = 0; i < 5; i++) {
        const request = httpRequest(`${h.url}/v2/${ep.id}/run`, {
          method: "POST",
          headers: {
            authorization: KEY,
            "content-type": "application/json",
            "content-length": String(bytes),
          },
        });
        const entry = { request, status: null as number | null, text: "" };
        stalled.push(request);
        request.on("error", () => {});
        request.on("response", (response) => {
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => {
            entry.text += chunk;
          });
          response.on("end", () => {
            entry.status = response.statusCode ?? 0;
          });
        });
        request.write(head);
        requests.push(entry);
      }
      // Two bodies fit (800 KB held while read); the other three are refused before they are sent.
      await eventually(() => (requests.filter((r) => r.status !== null).length === 3 ? true : undefined));
      for (const refused of requests.filter((r) => r.status !== null)) {
        expect(refused.status).toBe(503);
        expect(refused.text).toContain("memory budget for jobs (1000000 bytes)");
      }
      expect(h.plane.memory.used).toBe(2 * bytes);
      const read = requests.filter((r) => r.status === null);
      for (const { request } of read) request.end(`${"x".repeat(bytes - head.length - tail.length)}${tail}`);
      await eventually(() => (read.every((r) => r.status !== null) ? true : undefined));
      expect(read.map((r) => r.status)).toEqual([200, 200]);
      // The jobs hold their inputs in the reservations' place.
      expect(h.plane.book.counts(ep.id).inQueue).toBe(2);
      expect(h.plane.memory.used).toBeLessThan(2 * bytes);
      await h.call("POST", `/v2/${ep.id}/purge-queue`);
      expect(h.plane.memory.used).toBe(0);
    },
  );
});
