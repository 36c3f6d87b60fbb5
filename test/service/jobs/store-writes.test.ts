import { copyFileSync, existsSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import {
  ENDED_SYNC_BATCH,
  ENDED_SYNC_MAX_CHARS,
  START_WRITE_DELAY_MS,
} from "../../../service/jobs/store/job-store";
import { eventually, type Harness, KEY, restartableHarnesses } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

interface StoredRow {
  status: string;
  started_at: number | null;
  worker_id: string | null;
  retries: number;
}

/** The job's row as another connection reads it from the store file (what a restart would find). */
function stored(data: string, id: string): StoredRow | undefined {
  const reader = new DatabaseSync(data, { readOnly: true });
  try {
    return reader.prepare("SELECT status, started_at, worker_id, retries FROM jobs WHERE id = ?").get(id) as
      | StoredRow
      | undefined;
  } finally {
    reader.close();
  }
}

/** A store file, a service on it with a manual clock, an echo endpoint without workers, and a protocol worker ("w-1") for it. */
async function echoOnStore(
  harnesses: ReturnType<typeof restartableHarnesses>,
  prefix: string,
  config: { fastPath?: boolean } = {},
): Promise<{
  dir: string;
  data: string;
  clock: ManualClock;
  h: Harness;
  ep: { id: string };
  worker: ProtocolWorker;
}> {
  const { dir, data } = harnesses.storeFile(prefix);
  const clock = new ManualClock();
  const h = await harnesses.start(data, clock, config);
  const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
  return { dir, data, clock, h, ep, worker: new ProtocolWorker(h, ep.id, "w-1") };
}

describe("job store writes: a job's start waits for its end", () => {
  const harnesses = restartableHarnesses();
  const { start, stop } = harnesses;

  it("a job that ends within the delay is written once more, ended; one still running is written IN_PROGRESS after it", async () => {
    const { data, clock, h, ep, worker } = await echoOnStore(harnesses, "runpodkit-start-write-");
    const submit = async (n: number) =>
      ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { n } } })).body as { id: string }).id;

    const quick = await submit(1);
    await worker.take();
    await h.plane.store.flushed();
    // Running, as the service answers; its row still says IN_QUEUE.
    expect((await h.call("GET", `/v2/${ep.id}/status/${quick}`)).body).toMatchObject({
      status: "IN_PROGRESS",
    });
    expect(stored(data, quick)).toMatchObject({ status: "IN_QUEUE", started_at: null, worker_id: null });
    await worker.done(quick, { output: { ok: true } });
    await h.plane.store.flushed();
    expect(stored(data, quick)).toMatchObject({ status: "COMPLETED", worker_id: "w-1", retries: 0 });
    expect(stored(data, quick)?.started_at).toBe(clock.now());

    const slow = await submit(2);
    await worker.take(true);
    await h.plane.store.flushed();
    expect(stored(data, slow)).toMatchObject({ status: "IN_QUEUE" });
    await clock.advance(START_WRITE_DELAY_MS - 1);
    await h.plane.store.flushed();
    expect(stored(data, slow)).toMatchObject({ status: "IN_QUEUE" });
    await clock.advance(1);
    await h.plane.store.flushed();
    expect(stored(data, slow)).toMatchObject({ status: "IN_PROGRESS", worker_id: "w-1" });
  });

  it("a crash within the delay loses only the start: the job is read back IN_QUEUE, no retry counted, and runs", async () => {
    const { dir, data, clock, h, ep } = await echoOnStore(harnesses, "runpodkit-start-crash-");
    const id = (
      (await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { n: 1 } } })).body as { id: string }
    ).id;
    await new ProtocolWorker(h, ep.id, "w-before").take();
    await h.plane.store.flushed();
    // The store file as a crash now would leave it (no graceful stop: nothing more written).
    const crashed = join(dir, "crashed.sqlite");
    for (const suffix of ["", "-wal", ".key"]) {
      if (existsSync(`${data}${suffix}`)) copyFileSync(`${data}${suffix}`, `${crashed}${suffix}`);
    }
    const after = await start(crashed, new ManualClock(clock.now()));
    expect((await after.call("GET", `/v2/${ep.id}/status/${id}`)).body).toEqual({
      id,
      status: "IN_QUEUE",
      delayTime: expect.any(Number),
      executionTime: 0,
    });
    expect((await after.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({
      jobs: { inQueue: 1, inProgress: 0, retried: 0 },
    });
    expect((await new ProtocolWorker(after, ep.id, "w-after").take()).body).toMatchObject({
      id,
      input: { n: 1 },
    });
  });

  it("a graceful stop writes the start of a running job (a restart then requeues it as retried)", async () => {
    const { data, h, ep } = await echoOnStore(harnesses, "runpodkit-start-stop-");
    const id = ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } })).body as { id: string })
      .id;
    await new ProtocolWorker(h, ep.id, "w-before").take();
    await stop(h);
    expect(stored(data, id)).toMatchObject({ status: "IN_PROGRESS", worker_id: "w-before" });
  });
});

describe("job-done answers after the store's write, and after the /runsync reply waiting on it", () => {
  const harnesses = restartableHarnesses();

  for (const fastPath of [true, false]) {
    it(`a /run job: the worker hears back once the result is in the store file (fast path ${fastPath ? "on" : "off"})`, async () => {
      const { data, h, ep, worker } = await echoOnStore(harnesses, "runpodkit-done-write-", { fastPath });
      const { id } = (await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { n: 1 } } })).body as {
        id: string;
      };
      await worker.take();
      const done = await worker.done(id, { output: { ok: 1 } });
      // Read at once, from another connection: what a crash of the service now would leave.
      expect(done.status).toBe(200);
      expect(stored(data, id)).toMatchObject({ status: "COMPLETED", worker_id: "w-1" });
    });

    it(`a /runsync job: the worker hears back after the client (fast path ${fastPath ? "on" : "off"})`, async () => {
      const { h, ep, worker } = await echoOnStore(harnesses, "runpodkit-done-order-", { fastPath });
      const order: string[] = [];
      const sync = h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { n: 1 } } }).then((reply) => {
        order.push("runsync");
        return reply;
      });
      const taken = await worker.take();
      const id = (taken.body as { id: string }).id;
      const done = await worker.done(id, { output: { ok: 1 } });
      order.push("job-done");
      expect(done.status).toBe(200);
      expect((await sync).body).toMatchObject({ id, status: "COMPLETED", output: { ok: 1 } });
      expect(order).toEqual(["runsync", "job-done"]);
    });
  }
});

describe("job store writes: a /runsync job's row waits for its end", () => {
  const harnesses = restartableHarnesses();
  const { start, stop } = harnesses;

  it("one that ends within the delay is answered at once and written once, ended, when the delay passes", async () => {
    const { data, clock, h, ep, worker } = await echoOnStore(harnesses, "runpodkit-sync-write-");
    const pending = h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { n: 1 } } });
    const id = ((await worker.take()).body as { id: string }).id;
    await h.plane.store.flushed();
    expect(stored(data, id)).toBeUndefined();
    // Answered from memory meanwhile, as any job.
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({ status: "IN_PROGRESS" });
    await clock.advance(START_WRITE_DELAY_MS - 1);
    await worker.done(id, { output: { ok: true } });
    expect((await pending).body).toMatchObject({ id, status: "COMPLETED", output: { ok: true } });
    await h.plane.store.flushed();
    // Answered, not written yet: /status answers from memory.
    expect(stored(data, id)).toBeUndefined();
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
      id,
      status: "COMPLETED",
      output: { ok: true },
    });
    await clock.advance(1);
    await h.plane.store.flushed();
    expect(stored(data, id)).toMatchObject({ status: "COMPLETED", worker_id: "w-1", retries: 0 });
  });

  it(`${ENDED_SYNC_BATCH} ended ones waiting are written together, before the delay`, async () => {
    const { data, h, ep, worker } = await echoOnStore(harnesses, "runpodkit-sync-batch-");
    const ids: string[] = [];
    for (let n = 0; n < ENDED_SYNC_BATCH; n++) {
      const pending = h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { n } } });
      const id = ((await worker.take()).body as { id: string }).id;
      await worker.done(id, { output: n });
      expect((await pending).body).toMatchObject({ id, status: "COMPLETED", output: n });
      await h.plane.store.flushed();
      ids.push(id);
      if (n < ENDED_SYNC_BATCH - 1) expect(stored(data, id)).toBeUndefined();
    }
    expect(ids).toHaveLength(ENDED_SYNC_BATCH);
    expect(ids.map((id) => stored(data, id)?.status)).toEqual(ids.map(() => "COMPLETED"));
  });

  it("a large one is written as it ends", async () => {
    const { data, h, ep, worker } = await echoOnStore(harnesses, "runpodkit-sync-large-");
    const pending = h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { n: 1 } } });
    const id = ((await worker.take()).body as { id: string }).id;
    const output = "x".repeat(ENDED_SYNC_MAX_CHARS);
    await worker.done(id, { output });
    expect((await pending).body).toMatchObject({ id, status: "COMPLETED", output });
    expect(stored(data, id)).toMatchObject({ status: "COMPLETED" });
  });

  it("a graceful stop writes the ended ones waiting; a crash loses them after their answer", async () => {
    const { data, clock, h, ep, worker } = await echoOnStore(harnesses, "runpodkit-sync-stop-");
    const pending = h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { n: 5 } } });
    const id = ((await worker.take()).body as { id: string }).id;
    await worker.done(id, { output: 5 });
    expect((await pending).body).toMatchObject({ id, status: "COMPLETED", output: 5 });
    const crashed = `${data}.crashed`;
    for (const suffix of ["", "-wal", "-shm"]) {
      if (existsSync(`${data}${suffix}`)) copyFileSync(`${data}${suffix}`, `${crashed}${suffix}`);
    }
    expect(stored(crashed, id)).toBeUndefined();
    await stop(h);
    expect(stored(data, id)).toMatchObject({ status: "COMPLETED", worker_id: "w-1" });
    const after = await start(data, new ManualClock(clock.now()));
    expect((await after.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
      id,
      status: "COMPLETED",
      output: 5,
    });
  });

  it("one still running after the delay is written then, IN_PROGRESS", async () => {
    const { data, clock, h, ep, worker } = await echoOnStore(harnesses, "runpodkit-sync-slow-");
    const pending = h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { n: 2 } } });
    const id = ((await worker.take()).body as { id: string }).id;
    await clock.advance(START_WRITE_DELAY_MS);
    await h.plane.store.flushed();
    expect(stored(data, id)).toMatchObject({ status: "IN_PROGRESS", worker_id: "w-1" });
    await worker.done(id, { output: 2 });
    expect((await pending).body).toMatchObject({ id, status: "COMPLETED", output: 2 });
    expect(stored(data, id)).toMatchObject({ status: "COMPLETED" });
  });

  it("one whose client leaves is written then: it goes on, and a restart finds it", async () => {
    const { data, clock, h, ep } = await echoOnStore(harnesses, "runpodkit-sync-left-");
    const leaving = request(`${h.url}/v2/${ep.id}/runsync`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    });
    leaving.on("error", () => {});
    leaving.end(JSON.stringify({ input: { n: 4 } }));
    await eventually(() => (h.plane.book.watchers.waiting > 0 ? true : undefined));
    const [job] = h.plane.book.liveJobs(ep.id);
    if (!job) throw new Error("no job");
    expect(stored(data, job.id)).toBeUndefined();
    leaving.destroy();
    await eventually(() => (h.plane.book.watchers.waiting === 0 ? true : undefined));
    await h.plane.store.flushed();
    // Well within the delay: written because its hold ended.
    expect(stored(data, job.id)).toMatchObject({ status: "IN_QUEUE" });
    await stop(h);
    const after = await start(data, new ManualClock(clock.now()));
    expect((await new ProtocolWorker(after, ep.id, "w-after").take()).body).toMatchObject({
      id: job.id,
      input: { n: 4 },
    });
  });

  it("one whose hold ends first is on disk when its id is answered", async () => {
    const { data, clock, h, ep } = await echoOnStore(harnesses, "runpodkit-sync-held-");
    const pending = h.call("POST", `/v2/${ep.id}/runsync?wait=1000`, { body: { input: { n: 3 } } });
    await eventually(() => (h.plane.book.watchers.waiting > 0 ? true : undefined));
    await clock.advance(1_000);
    const reply = (await pending).body as { id: string; status: string };
    expect(reply.status).toBe("IN_QUEUE");
    // Read at once, from another connection: what a crash of the service now would leave.
    expect(stored(data, reply.id)).toMatchObject({ status: "IN_QUEUE" });
  });
});
