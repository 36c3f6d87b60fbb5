import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { openDatabase } from "../../../service/db";
import { createJob } from "../../../service/jobs/model/job";
import { JobStore, jobMigrations } from "../../../service/jobs/store/job-store";
import { hashOf } from "../../../service/jobs/store/row-index";
import { restartableHarnesses } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

describe("restart recovery", () => {
  const { storeFile, start, stop } = restartableHarnesses();

  it("loses no queued job and no kept result; running jobs are requeued, counting as retried", async () => {
    const { data } = storeFile("runpodkit-restart-");
    const clock = new ManualClock();
    const first = await start(data, clock);
    const ep = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const worker = new ProtocolWorker(first, ep.id, "w-before");
    const submit = async (input: object) =>
      ((await first.call("POST", `/v2/${ep.id}/run`, { body: { input } })).body as { id: string }).id;
    const completed = await submit({ n: "completed" });
    const failed = await submit({ n: "failed" });
    const runningJob = await submit({ n: "running" });
    const queued = await submit({ n: "queued" });
    await worker.take();
    await worker.done(completed, { output: { kept: true } });
    await worker.take();
    await worker.done(failed, { error: "broke" });
    await worker.take();
    await stop(first);

    const second = await start(data, new ManualClock(clock.now()));
    const status = async (id: string) => (await second.call("GET", `/v2/${ep.id}/status/${id}`)).body;
    expect(await status(completed)).toMatchObject({ status: "COMPLETED", output: { kept: true } });
    expect(await status(failed)).toMatchObject({ status: "FAILED", error: "broke" });
    expect(await status(runningJob)).toEqual({
      id: runningJob,
      status: "IN_QUEUE",
      delayTime: expect.any(Number),
      executionTime: 0,
    });
    expect(await status(queued)).toEqual({
      id: queued,
      status: "IN_QUEUE",
      delayTime: expect.any(Number),
      executionTime: 0,
    });
    expect((await second.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({
      jobs: { completed: 1, failed: 1, inQueue: 2, inProgress: 0, retried: 1 },
    });
    // The interrupted job goes first, then the one that was waiting; inputs intact.
    const after = new ProtocolWorker(second, ep.id, "w-after");
    expect((await after.take()).body).toMatchObject({ id: runningJob, input: { n: "running" } });
    expect((await after.take(true)).body).toMatchObject({ id: queued, input: { n: "queued" } });
    // A kept failure can still be retried after the restart.
    expect((await second.call("POST", `/v2/${ep.id}/retry/${failed}`)).body).toEqual({
      id: failed,
      status: "IN_QUEUE",
    });
  });

  it("rows of two endpoints and several statuses interleaved: each endpoint's counts and queue come back", async () => {
    const { data } = storeFile("runpodkit-interleaved-");
    const clock = new ManualClock();
    const first = await start(data, clock);
    const a = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const b = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const submit = async (endpointId: string, input: object) =>
      ((await first.call("POST", `/v2/${endpointId}/run`, { body: { input } })).body as { id: string }).id;
    // Rows: a a a (to be COMPLETED, FAILED, running), then a b a b a b, then b b b.
    const ids: Record<string, string[]> = { [a.id]: [], [b.id]: [] };
    const order = [a, a, a, a, b, a, b, a, b, b, b, b];
    for (const [i, ep] of order.entries()) ids[ep.id]?.push(await submit(ep.id, { i }));
    const worker = new ProtocolWorker(first, a.id, "w-a");
    const aIds = ids[a.id] ?? [];
    await worker.take();
    await worker.done(aIds[0] as string, { output: 1 });
    await worker.take();
    await worker.done(aIds[1] as string, { error: "broke" });
    await worker.take();
    await stop(first);

    const second = await start(data, new ManualClock(clock.now()));
    const health = async (endpointId: string) => (await second.call("GET", `/v2/${endpointId}/health`)).body;
    expect(await health(a.id)).toMatchObject({
      jobs: { completed: 1, failed: 1, inQueue: 4, inProgress: 0, retried: 1 },
    });
    expect(await health(b.id)).toMatchObject({
      jobs: { completed: 0, failed: 0, inQueue: 6, inProgress: 0, retried: 0 },
    });
    // Queue order: a's interrupted job first, then its waiting ones; b's all in submit order.
    const takeAll = async (endpointId: string, n: number) => {
      const w = new ProtocolWorker(second, endpointId, `w-after-${endpointId}`);
      const taken: string[] = [];
      for (let i = 0; i < n; i++) taken.push(((await w.take(i > 0)).body as { id: string }).id);
      return taken;
    };
    expect(await takeAll(a.id, 4)).toEqual(aIds.slice(2));
    expect(await takeAll(b.id, 6)).toEqual(ids[b.id]);
  });

  it("a store written before the id_hash column (jobs-003) opens, migrates and restores the same jobs", async () => {
    const { data } = storeFile("runpodkit-migrate-");
    const clock = new ManualClock();
    const first = await start(data, clock);
    const a = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const b = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const submit = async (endpointId: string, body: object) =>
      ((await first.call("POST", `/v2/${endpointId}/run`, { body })).body as { id: string }).id;
    const aIds: string[] = [];
    const bIds: string[] = [];
    for (let i = 0; i < 4; i++) {
      aIds.push(await submit(a.id, { input: { a: i } }));
      bIds.push(await submit(b.id, { input: { b: i }, policy: { lowPriority: i === 1 } }));
    }
    const worker = new ProtocolWorker(first, a.id, "w-before");
    await worker.take();
    await worker.done(aIds[0] as string, { output: { kept: 0 } });
    await worker.take(); // aIds[1]: running when the service stops
    await stop(first);
    // The file as the version before jobs-003 left it: no id_hash column, the migration not recorded.
    const old = new DatabaseSync(data);
    old.exec("ALTER TABLE jobs DROP COLUMN id_hash");
    old.exec("DELETE FROM migrations WHERE name = 'jobs-003-id-hash'");
    old.close();

    let h = await start(data, new ManualClock(clock.now()));
    const check = async (service: typeof h) => {
      const status = async (id: string) => (await service.call("GET", `/v2/${a.id}/status/${id}`)).body;
      expect(await status(aIds[0] as string)).toMatchObject({ status: "COMPLETED", output: { kept: 0 } });
      for (const [endpointId, ids] of [
        [a.id, aIds.slice(1)],
        [b.id, bIds],
      ] as const) {
        for (const id of ids) {
          expect((await service.call("GET", `/v2/${endpointId}/status/${id}`)).body).toEqual({
            id,
            status: "IN_QUEUE",
            delayTime: expect.any(Number),
            executionTime: 0,
          });
        }
      }
      expect((await service.call("GET", `/v2/${a.id}/health`)).body).toMatchObject({
        jobs: { completed: 1, failed: 0, inQueue: 3, inProgress: 0, retried: 1 },
      });
      expect((await service.call("GET", `/v2/${b.id}/health`)).body).toMatchObject({
        jobs: { completed: 0, failed: 0, inQueue: 4, inProgress: 0, retried: 0 },
      });
    };
    await check(h);
    const migrated = new DatabaseSync(data, { readOnly: true });
    const hashes = migrated.prepare("SELECT id_hash FROM jobs").all() as { id_hash: number | null }[];
    migrated.close();
    expect(hashes.map((r) => r.id_hash)).toEqual(hashes.map(() => null));
    // A job submitted now gets its hash; old and new rows restore side by side.
    const added = (
      (await h.call("POST", `/v2/${b.id}/run`, { body: { input: { b: 4 } } })).body as { id: string }
    ).id;
    bIds.push(added);
    await stop(h);
    h = await start(data, new ManualClock(clock.now()));
    expect((await h.call("GET", `/v2/${b.id}/health`)).body).toMatchObject({ jobs: { inQueue: 5 } });
    expect((await h.call("GET", `/v2/${b.id}/status/${added}`)).body).toEqual({
      id: added,
      status: "IN_QUEUE",
      delayTime: expect.any(Number),
      executionTime: 0,
    });
    const reader = new DatabaseSync(data, { readOnly: true });
    const row = reader.prepare("SELECT id_hash FROM jobs WHERE id = ?").get(added) as { id_hash: number };
    reader.close();
    expect(row.id_hash).toBe(hashOf(added));
    // Queue order across old and new rows: a's interrupted job first, b's in submit order.
    const w = new ProtocolWorker(h, b.id, "w-mixed");
    const taken: string[] = [];
    for (let i = 0; i < bIds.length; i++) taken.push(((await w.take(i > 0)).body as { id: string }).id);
    expect(taken).toEqual(bIds);
    const wa = new ProtocolWorker(h, a.id, "w-mixed-a");
    expect(((await wa.take()).body as { id: string }).id).toBe(aIds[1]);
  });

  it("a job /run accepted is already on disk when the reply arrives (no graceful stop needed)", async () => {
    const { data } = storeFile("runpodkit-durable-");
    const h = await start(data, new ManualClock());
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(
        ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { i } } })).body as { id: string }).id,
      );
    }
    const reader = new DatabaseSync(data, { readOnly: true });
    const rows = reader.prepare("SELECT id, status, input FROM jobs ORDER BY created_at").all() as {
      id: string;
      status: string;
      input: string;
    }[];
    reader.close();
    expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(rows.every((r) => r.status === "IN_QUEUE")).toBe(true);
  });

  it("a job retried too often while its worker kept dying ends FAILED at restart", async () => {
    const { data } = storeFile("runpodkit-maxretry-");
    const clock = new ManualClock();
    let h = await start(data, clock);
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } })).body as { id: string })
      .id;
    for (let round = 0; round <= h.plane.config.maxRetries; round++) {
      await new ProtocolWorker(h, ep.id, `w-${round}`).take();
      await stop(h);
      h = await start(data, new ManualClock(clock.now()));
    }
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
      status: "FAILED",
      error: "the service stopped while the job was running",
    });
  });
});

describe("a restart on a clock set back", () => {
  const { storeFile, start, stop } = restartableHarnesses();
  const HOUR = 3_600_000;

  it("queued jobs wait from the start, not from a time still ahead: delayTime is never negative, and the store keeps the new time", async () => {
    const { data } = storeFile("runpodkit-clock-back-");
    const clock = new ManualClock();
    const first = await start(data, clock);
    const ep = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const submit = async (n: number) =>
      ((await first.call("POST", `/v2/${ep.id}/run`, { body: { input: { n } } })).body as { id: string }).id;
    const a = await submit(1);
    const b = await submit(2);
    await clock.advance(5_000);
    await stop(first);

    // The machine's clock an hour behind the one the jobs were queued on.
    const back = new ManualClock(clock.now() - HOUR);
    const second = await start(data, back);
    await back.advance(2_000);
    const worker = new ProtocolWorker(second, ep.id, "w-back");
    expect((await worker.take()).body).toMatchObject({ id: a });
    await back.advance(300);
    await worker.done(a, { output: { ok: true } });
    expect((await second.call("GET", `/v2/${ep.id}/status/${a}`)).body).toEqual({
      id: a,
      status: "COMPLETED",
      delayTime: 2_000,
      executionTime: 300,
      output: { ok: true },
      workerId: "w-back",
    });
    expect((await second.call("GET", `/v2/${ep.id}/status/${b}`)).body).toMatchObject({
      status: "IN_QUEUE",
      delayTime: 2_300,
    });
    await stop(second);

    // The next start reads b's new queue time from the store (not re-dated from this start again).
    const third = await start(data, new ManualClock(back.now() + 1_000));
    const next = new ProtocolWorker(third, ep.id, "w-next");
    expect((await next.take()).body).toMatchObject({ id: b });
    expect((await third.call("GET", `/v2/${ep.id}/status/${b}`)).body).toMatchObject({
      status: "IN_PROGRESS",
      delayTime: 3_300,
    });
  });
});

describe("ttl and retention after a restart on a clock set back", () => {
  const { storeFile, start, stop } = restartableHarnesses();
  const DAY = 86_400_000;
  const MINUTE = 60_000;

  it("a job's ttl and a result's retention count from the restart, not from a submit time a day ahead: neither expires at once nor lives on for the day", async () => {
    const { data } = storeFile("runpodkit-clock-back-ttl-");
    const clock = new ManualClock();
    const first = await start(data, clock);
    const ep = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const submit = async (n: number, ttl?: number) =>
      (
        (
          await first.call("POST", `/v2/${ep.id}/run`, {
            body: { input: { n }, ...(ttl === undefined ? {} : { policy: { ttl } }) },
          })
        ).body as { id: string }
      ).id;
    const done = await submit(1);
    const queued = await submit(2, 10 * MINUTE);
    const worker = new ProtocolWorker(first, ep.id, "w-ttl");
    expect((await worker.take()).body).toMatchObject({ id: done });
    await clock.advance(300);
    await worker.done(done, { output: { ok: true } });
    await clock.advance(MINUTE);
    await stop(first);

    // The machine's clock a day behind the one the jobs were submitted on.
    const back = new ManualClock(clock.now() - DAY);
    const second = await start(data, back);
    const status = async (id: string) => second.call("GET", `/v2/${ep.id}/status/${id}`);
    // Not at once: the queued job's 10 minutes and the result's 30 minutes run from the restart.
    await back.advance(9 * MINUTE);
    expect((await status(queued)).body).toMatchObject({ id: queued, status: "IN_QUEUE" });
    expect((await status(done)).body).toMatchObject({
      id: done,
      status: "COMPLETED",
      executionTime: 300,
      output: { ok: true },
    });
    // ... and not for the day the clock went back: gone once their time from the restart is up,
    // from the store too (the sweep deletes the rows).
    await back.advance(MINUTE + second.plane.config.sweepIntervalMs);
    expect((await status(queued)).status).toBe(404);
    await back.advance(20 * MINUTE);
    expect((await status(done)).status).toBe(404);
    expect(second.plane.store.counts().filter((c) => c.endpointId === ep.id && c.count > 0)).toEqual([]);
    await stop(second);
  });
});

describe("results that expired while the service was down", () => {
  const { storeFile, start, stop } = restartableHarnesses();

  it("are not read back at start (neither indexed nor counted); the first sweep deletes them and the counts stay right", async () => {
    const { data } = storeFile("runpodkit-expired-at-start-");
    const clock = new ManualClock();
    const first = await start(data, clock);
    const ep = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const worker = new ProtocolWorker(first, ep.id, "w-expiring");
    const submit = async (n: number) =>
      ((await first.call("POST", `/v2/${ep.id}/run`, { body: { input: { n } } })).body as { id: string }).id;
    const finish = async (count: number, from: number) => {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const id = await submit(from + i);
        expect((await worker.take()).body).toMatchObject({ id });
        expect((await worker.done(id, { output: { n: from + i } })).status).toBe(200);
        ids.push(id);
      }
      return ids;
    };
    const old = await finish(5, 0);
    await clock.advance(20 * 60_000);
    const recent = await finish(2, 100);
    const queued = await submit(200);
    await stop(first);

    // 35 minutes after the first results: those five are past their 30 minutes, the two are not.
    const later = new ManualClock(clock.now() + 15 * 60_000);
    const second = await start(data, later);
    expect(second.plane.store.indexStats.entries).toBe(3);
    const health = async () =>
      ((await second.call("GET", `/v2/${ep.id}/health`)).body as { jobs: object }).jobs;
    expect(await health()).toMatchObject({ completed: 2, inQueue: 1, inProgress: 0 });
    for (const id of old) expect((await second.call("GET", `/v2/${ep.id}/status/${id}`)).status).toBe(404);
    for (const id of recent) {
      expect((await second.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
        status: "COMPLETED",
      });
    }
    // Their rows are still stored until the first sweep, which deletes them without counting them off.
    expect(second.plane.store.counts()).toContainEqual(
      expect.objectContaining({ endpointId: ep.id, status: "COMPLETED", count: 7 }),
    );
    await later.advance(second.plane.config.sweepIntervalMs);
    expect(second.plane.store.counts()).toContainEqual(
      expect.objectContaining({ endpointId: ep.id, status: "COMPLETED", count: 2 }),
    );
    expect(await health()).toMatchObject({ completed: 2, inQueue: 1, inProgress: 0 });
    expect((await second.call("GET", `/v2/${ep.id}/status/${queued}`)).body).toMatchObject({
      status: "IN_QUEUE",
    });
  });
});

describe("the scan at start and large inputs and outputs", () => {
  /** Bytes this process has read through read(2) so far (Linux), page cache hits included. */
  const bytesRead = (): number => {
    const line = readFileSync("/proc/self/io", "utf8").match(/^rchar: (\d+)$/m);
    return Number(line?.[1] ?? Number.NaN);
  };

  it("reads only the rows' small columns: a store of 8 jobs of 2 x 1 MB (written in the layout before jobs-005) is read back without their bytes", () => {
    const dir = mkdtempSync(join(tmpdir(), "runpodkit-scan-columns-"));
    try {
      const data = join(dir, "store.sqlite");
      // The store as the version before jobs-005 wrote it: the large columns before the scan's.
      const before = jobMigrations.filter((m) => m.name !== "jobs-005-scan-columns-first");
      expect(before).toHaveLength(jobMigrations.length - 1);
      const old = openDatabase(data, before);
      const writer = new JobStore(old);
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const job = createJob({
          id: `big-${i}`,
          accountId: "acc",
          endpointId: "ep",
          kind: "async",
          input: { blob: "i".repeat(1_000_000), i },
          now: 0,
        });
        writer.save(job);
        writer.flush();
        job.status = "IN_PROGRESS";
        job.startedAt = 1;
        job.status = "COMPLETED";
        job.completedAt = 2;
        job.output = { blob: "o".repeat(1_000_000), i };
        writer.save(job);
        writer.flush();
        ids.push(job.id);
      }
      old.close();

      const db = openDatabase(data, jobMigrations);
      const from = bytesRead();
      const store = new JobStore(db, { clock: new ManualClock(3) });
      const read = bytesRead() - from;
      // 16 MB of inputs and outputs stay on disk: the scan reads a page or so a row.
      expect(read).toBeLessThan(1_000_000);
      expect(store.indexStats.entries).toBe(8);
      expect(store.startup().counts).toEqual([
        { endpointId: "ep", status: "COMPLETED", count: 8, retries: 0, lowPriority: 0 },
      ]);
      // Every job comes back whole from the rebuilt table.
      for (const [i, id] of ids.entries()) {
        const job = store.get(id);
        expect(job?.input).toEqual({ blob: "i".repeat(1_000_000), i });
        expect(job?.output).toEqual({ blob: "o".repeat(1_000_000), i });
      }
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a client's /retry and the automatic retries after lost workers", () => {
  const { storeFile, start, stop } = restartableHarnesses();

  /** A store of its own with one job queued on an endpoint without workers, on a manual clock. */
  async function oneQueuedJob(prefix: string) {
    const { data } = storeFile(prefix);
    const clock = new ManualClock();
    const h = await start(data, clock);
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } })).body as { id: string })
      .id;
    return { data, clock, h, ep, id };
  }

  /** The job runs on a worker, then the service stops under it (its worker is lost with it). */
  async function loseWorkers(
    h: Awaited<ReturnType<typeof start>>,
    data: string,
    clock: ManualClock,
    endpointId: string,
    times: number,
    name: string,
  ) {
    let current = h;
    for (let round = 0; round < times; round++) {
      await new ProtocolWorker(current, endpointId, `${name}-${round}`).take();
      await stop(current);
      current = await start(data, new ManualClock(clock.now()));
    }
    return current;
  }

  it("each /retry gets the whole budget again, kept across restarts; /health counts every retry", async () => {
    const queued = await oneQueuedJob("runpodkit-client-retry-");
    const { data, clock, ep, id } = queued;
    let h = queued.h;
    const max = h.plane.config.maxRetries;
    const status = async () => (await h.call("GET", `/v2/${ep.id}/status/${id}`)).body;
    // maxRetries lost workers are retried automatically; the next one fails the job.
    h = await loseWorkers(h, data, clock, ep.id, max + 1, "w-first");
    expect(await status()).toMatchObject({
      status: "FAILED",
      error: "the service stopped while the job was running",
    });
    expect((await h.call("POST", `/v2/${ep.id}/retry/${id}`)).body).toEqual({ id, status: "IN_QUEUE" });
    // The client's retry starts over: maxRetries more lost workers are each retried (restarts in
    // between: the count is in the store), not failed at the first.
    for (let round = 0; round < max; round++) {
      h = await loseWorkers(h, data, clock, ep.id, 1, `w-second-${round}`);
      expect(await status()).toMatchObject({ status: "IN_QUEUE" });
    }
    h = await loseWorkers(h, data, clock, ep.id, 1, "w-second-last");
    expect(await status()).toMatchObject({
      status: "FAILED",
      error: "the service stopped while the job was running",
    });
    // Every retry, automatic or the client's, is counted as one.
    expect((await h.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({
      jobs: { failed: 1, retried: 2 * max + 1 },
    });
    // And a second /retry gets it once more; the job still completes.
    expect((await h.call("POST", `/v2/${ep.id}/retry/${id}`)).body).toEqual({ id, status: "IN_QUEUE" });
    h = await loseWorkers(h, data, clock, ep.id, 1, "w-third");
    const worker = new ProtocolWorker(h, ep.id, "w-done");
    expect((await worker.take()).body).toMatchObject({ id });
    await worker.done(id, { output: { ok: true } });
    expect(await status()).toMatchObject({ status: "COMPLETED", output: { ok: true } });
  });

  it("in one run: a worker proven to have lost the job (job_in_progress=0) is a lost worker, after a /retry too", async () => {
    const { h, ep, id } = await oneQueuedJob("runpodkit-client-retry-live-");
    const max = h.plane.config.maxRetries;
    const status = async () => (await h.call("GET", `/v2/${ep.id}/status/${id}`)).body;
    // The take that fails the job is handed this other job instead of waiting for one.
    const filler = async () =>
      (
        (await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { filler: true } } })).body as {
          id: string;
        }
      ).id;
    const lose = async (worker: ProtocolWorker) => {
      // Each take holding nothing proves the job lost: requeued (and handed back) maxRetries times.
      for (let round = 0; round < max; round++) expect((await worker.take()).body).toMatchObject({ id });
      const other = await filler();
      expect((await worker.take()).body).toMatchObject({ id: other });
      expect(await status()).toMatchObject({
        status: "FAILED",
        error: `worker ${worker.id} was lost while running the job`,
      });
    };
    const first = new ProtocolWorker(h, ep.id, "w-live-1");
    expect((await first.take()).body).toMatchObject({ id });
    await lose(first);
    expect((await h.call("POST", `/v2/${ep.id}/retry/${id}`)).body).toEqual({ id, status: "IN_QUEUE" });
    const second = new ProtocolWorker(h, ep.id, "w-live-2");
    expect((await second.take()).body).toMatchObject({ id });
    await lose(second);
  });

  it("a store written before jobs-004 keeps each job's count as the lost workers' count", async () => {
    const queued = await oneQueuedJob("runpodkit-migrate-004-");
    const { data, clock, ep, id } = queued;
    let h = queued.h;
    const max = h.plane.config.maxRetries;
    h = await loseWorkers(h, data, clock, ep.id, max, "w-old");
    await new ProtocolWorker(h, ep.id, "w-old-last").take();
    await stop(h);
    // The file as the version before jobs-004 left it: one count for both kinds of retry.
    const old = new DatabaseSync(data);
    old.exec("ALTER TABLE jobs DROP COLUMN lost_retries");
    old.exec("DELETE FROM migrations WHERE name = 'jobs-004-lost-worker-retries'");
    old.close();
    h = await start(data, new ManualClock(clock.now()));
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({ status: "FAILED" });
    const reader = new DatabaseSync(data, { readOnly: true });
    const row = reader.prepare("SELECT retries, lost_retries FROM jobs WHERE id = ?").get(id);
    reader.close();
    expect(row).toEqual({ retries: max, lost_retries: max });
  });
});
