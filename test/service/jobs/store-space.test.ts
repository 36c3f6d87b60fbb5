/**
 * The store file after a burst: the pages its expired jobs leave are given back to the file system
 * by the sweep (a bounded step at a time), and a store written before auto-vacuum is switched at
 * open while its live rows are small. Before, a CI farm that queued a burst once kept the file at its
 * peak for good (200,000 jobs: 115 MB, over restarts too).
 */
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, statSync, truncateSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { FREE_SPACE_KEPT, openDatabase } from "../../../service/db";
import { createJob } from "../../../service/jobs/model/job";
import { JobStore, jobMigrations } from "../../../service/jobs/store/job-store";
import { managementMigrations } from "../../../service/management/store/migrations";
import { restartableHarnesses } from "./harness";

const MIGRATIONS = [...managementMigrations, ...jobMigrations];
const MB = 1024 * 1024;
const JOBS = 6_000;

const fileSize = (file: string) => (existsSync(file) ? statSync(file).size : 0);

/** `count` finished jobs of about 4 KB each, written at `now` by the store itself, then closed. */
function writeFinishedJobs(
  data: string,
  now: number,
  count: number,
  db = openDatabase(data, MIGRATIONS),
): void {
  const store = new JobStore(db, { clock: new ManualClock(now) });
  for (let i = 0; i < count; i++) {
    const job = createJob({
      id: `job-${i}`,
      accountId: "acc",
      endpointId: "ep-burst",
      kind: "async",
      input: { i },
      now,
    });
    job.status = "COMPLETED";
    job.startedAt = now;
    job.completedAt = now;
    job.output = { text: "o".repeat(4_000), i };
    store.save(job);
    if (i % 500 === 499) store.flush();
  }
  store.flush();
  db.close();
}

function pragma(data: string, name: string): number {
  const db = new DatabaseSync(data, { readOnly: true });
  try {
    return Number(Object.values(db.prepare(`PRAGMA ${name}`).get() ?? {})[0]);
  } finally {
    db.close();
  }
}

describe("store space after a burst", () => {
  const { storeFile, start, stop } = restartableHarnesses();

  it("the sweep gives the expired jobs' pages back: the file shrinks to what it holds plus 8 MB kept for new rows", async () => {
    const { data } = storeFile("runpodkit-space-");
    const clock = new ManualClock();
    writeFinishedJobs(data, clock.now(), JOBS);
    const peak = fileSize(data);
    expect(peak).toBeGreaterThan(2 * FREE_SPACE_KEPT);

    // Past the results' 30 minutes: the first sweep deletes them, the next ones give pages back.
    const later = new ManualClock(clock.now() + 31 * 60_000);
    const h = await start(data, later);
    const sweep = h.plane.config.sweepIntervalMs;
    await later.advance(sweep);
    expect(h.plane.store.counts().filter((c) => c.count > 0)).toEqual([]);
    await later.advance(sweep * 12);
    // A job submitted meanwhile is served as ever.
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const run = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { after: "burst" } } });
    expect(run.status).toBe(200);
    await stop(h);

    const after = fileSize(data);
    expect(after).toBeLessThanOrEqual(FREE_SPACE_KEPT + 2 * MB);
    expect(after).toBeLessThan(peak / 2);
    expect(fileSize(`${data}-wal`)).toBe(0);
    expect(pragma(data, "auto_vacuum")).toBe(2);
    // What was kept is free space for new rows, not lost data: the job written after is there.
    const again = await start(data, new ManualClock(later.now()));
    expect(
      (await again.call("GET", `/v2/${ep.id}/status/${(run.body as { id: string }).id}`)).body,
    ).toMatchObject({
      status: "IN_QUEUE",
    });
  });

  it("a store written before auto-vacuum is switched at open while its rows are small, and left as it is (with a line saying so) when they are not", async () => {
    const { data } = storeFile("runpodkit-space-old-");
    const now = Date.UTC(2026, 0, 1);
    // The layout of an older runpodkit's store: its first table made without auto-vacuum.
    const old = new DatabaseSync(data);
    old.exec("PRAGMA journal_mode = WAL");
    old.exec("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)");
    old.close();
    // Opened as the older runpodkit would: never switched (no live row is small enough).
    const asBefore = () => openDatabase(data, MIGRATIONS, { vacuumAtOpenLimit: -1 });
    writeFinishedJobs(data, now, JOBS, asBefore());
    {
      const db = asBefore();
      new JobStore(db, { clock: new ManualClock(now) }).deleteExpired(now + 31 * 60_000, JOBS);
      db.close();
    }
    const peak = fileSize(data);
    expect(pragma(data, "auto_vacuum")).toBe(0);

    // Live rows above the limit: not rewritten at this start, and the operator is told.
    const told: string[] = [];
    const kept = openDatabase(data, MIGRATIONS, { log: (line) => told.push(line), vacuumAtOpenLimit: 1_000 });
    expect(kept.releaseFreePages(1_000)).toBe(0);
    kept.close();
    expect(told).toEqual([
      expect.stringMatching(
        /^store: its free space is not given back yet .* a start once they have expired switches it$/,
      ),
    ]);
    expect(fileSize(data)).toBe(peak);

    told.length = 0;
    const switched = openDatabase(data, MIGRATIONS, { log: (line) => told.push(line) });
    switched.close();
    expect(told).toEqual([
      expect.stringMatching(
        /^store: switched to auto-vacuum \(its free space is given back from now on\): \d+\.\d MB -> 0\.\d MB$/,
      ),
    ]);
    expect(pragma(data, "auto_vacuum")).toBe(2);
    expect(fileSize(data)).toBeLessThan(MB);
    // Switched once: the next open rewrites nothing and says nothing.
    told.length = 0;
    openDatabase(data, MIGRATIONS, { log: (line) => told.push(line) }).close();
    expect(told).toEqual([]);
  });

  const mounts: string[] = [];
  afterEach(() => {
    for (const mount of mounts.splice(0)) execFileSync("umount", [mount], { stdio: "ignore" });
  });

  it.runIf(process.getuid?.() === 0)(
    "on a disk without room for the VACUUM (a small tmpfs), an older store is not switched: it opens and takes writes, and the line says how much room is needed (root: tmpfs)",
    () => {
      const { dir } = storeFile("runpodkit-space-tmpfs-");
      const mount = join(dir, "disk");
      mkdirSync(mount);
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=6m", "tmpfs", mount], { stdio: "ignore" });
      mounts.push(mount);
      const data = join(mount, "store.sqlite");
      const old = new DatabaseSync(data);
      old.exec("PRAGMA journal_mode = WAL");
      old.exec("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)");
      old.close();
      writeFinishedJobs(
        data,
        Date.UTC(2026, 0, 1),
        300,
        openDatabase(data, MIGRATIONS, { vacuumAtOpenLimit: -1 }),
      );
      // The rest of the disk filled but for 1 MiB: less than the live rows twice over.
      const filler = join(mount, "filler");
      const chunk = Buffer.alloc(64 * 1024);
      try {
        for (;;) appendFileSync(filler, chunk);
      } catch (error) {
        expect((error as NodeJS.ErrnoException).code).toBe("ENOSPC");
      }
      truncateSync(filler, statSync(filler).size - 1024 * 1024);
      const size = fileSize(data);

      const told: string[] = [];
      const db = openDatabase(data, MIGRATIONS, { log: (line) => told.push(line) });
      try {
        expect(told).toEqual([
          expect.stringMatching(
            /^store: its free space is not given back yet \(the file predates auto-vacuum; switching it needs \d+\.\d MB free on its disk, which has \d+\.\d MB\); a later start switches it$/,
          ),
        ]);
        expect(fileSize(data)).toBe(size);
        db.exec("CREATE TABLE later (v TEXT)");
        db.prepare("INSERT INTO later VALUES (?)").run("written after the start");
      } finally {
        db.close();
      }
      expect(pragma(data, "auto_vacuum")).toBe(0);
    },
  );
});
