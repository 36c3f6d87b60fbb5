/**
 * The job store's writes alone, on a store file: how long each flush holds the event loop (p50, p99,
 * max) and the CPU per job (the whole process: the WAL checkpointer's thread included), with the
 * service's checkpointer and with SQLite's auto-checkpoint on the main connection.
 *
 *   npx tsx bench/tools/store-flush.ts [jobs] [jobs-per-flush] [gap]
 *
 * jobs-per-flush 1 is /runsync's shape (a job's insert, then its completion, each flushed alone);
 * larger figures the shape of /run under load (many jobs' writes in one flush).
 */
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SystemClock } from "../../service/clock";
import { openDatabase } from "../../service/db";
import { createJob, type Job, transition } from "../../service/jobs/model/job";
import { JobStore, jobMigrations } from "../../service/jobs/store/job-store";

const jobs = Number(process.argv[2] ?? 20_000);
const perFlush = Number(process.argv[3] ?? 1);
/** "gap": a timer turn (~1 ms idle) after each flush pair, as between sequential /runsync calls. */
const gap = process.argv[4] === "gap";
/**
 * "e2e": the shape of /run under load with busy workers: insert, IN_PROGRESS and COMPLETED each in
 * a flush of its own (jobs-per-flush jobs each).
 */
const e2e = process.argv[4] === "e2e";

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

function start(job: Job, now: number): void {
  transition(job, "IN_PROGRESS");
  job.startedAt = now;
  job.workerId = "w1";
}

async function measure(label: string, checkpointer: boolean, deferStart = true): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "runpodkit-store-flush-"));
  const file = join(dir, "s.sqlite");
  const db = openDatabase(file, jobMigrations, { checkpoint: checkpointer ? {} : false });
  let walMax = 0;
  // With a clock, as in the service: a start waits for the job's end (see JobStore).
  const store = new JobStore(db, deferStart ? { clock: new SystemClock() } : {});
  const flushes: number[] = [];
  let flushCpu = 0;
  const timed = () => {
    const t = process.hrtime.bigint();
    const c = process.threadCpuUsage();
    store.flush();
    const used = process.threadCpuUsage(c);
    flushCpu += used.user + used.system;
    flushes.push(Number(process.hrtime.bigint() - t) / 1e6);
  };
  const cpu = process.cpuUsage();
  let now = Date.now();
  for (let n = 0; n < jobs; n += perFlush) {
    const batch: Job[] = [];
    for (let i = 0; i < perFlush; i++) {
      const job = createJob({
        id: `job-${n + i}-${Math.random().toString(36).slice(2)}`,
        accountId: "acct",
        endpointId: "ep",
        kind: "sync",
        input: { n: n + i },
        now: now++,
      });
      // Taken in the turn it was submitted (a waiting job-take): one insert, already IN_PROGRESS.
      store.save(job);
      if (!e2e) start(job, now);
      batch.push(job);
    }
    timed();
    if (e2e) {
      for (const job of batch) {
        start(job, now);
        store.save(job);
      }
      timed();
    }
    for (const job of batch) {
      transition(job, "COMPLETED");
      job.completedAt = now;
      job.output = { ok: true };
      store.save(job);
    }
    timed();
    // Let the checkpointer's replies in, as the event loop would between requests.
    if (n % (64 * perFlush) === 0 && existsSync(`${file}-wal`)) {
      walMax = Math.max(walMax, statSync(`${file}-wal`).size);
    }
    if (gap) await new Promise((resolve) => setTimeout(resolve, 0));
    else if (n % (64 * perFlush) === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  const used = process.cpuUsage(cpu);
  await db.checkpointer?.settled();
  db.close();
  rmSync(dir, { recursive: true, force: true });
  flushes.sort((a, b) => a - b);
  const us = (used.user + used.system) / jobs;
  const slow = flushes.filter((ms) => ms > 2).length;
  // The event loop's own CPU in flushes (this thread only: not the checkpointer's).
  const inFlush = flushCpu / jobs;
  console.log(
    `${label.padEnd(32)} flush p50 ${quantile(flushes, 0.5).toFixed(3)} ms  p99 ${quantile(flushes, 0.99).toFixed(3)} ms  p99.9 ${quantile(flushes, 0.999).toFixed(3)} ms  max ${(flushes.at(-1) ?? 0).toFixed(3)} ms  >2 ms ${slow}  main-thread CPU in flushes ${inFlush.toFixed(1)} us/job  process CPU ${us.toFixed(1)} us/job  checkpoints ${db.checkpointer?.completed ?? "auto"} (catch-ups ${db.checkpointer?.catchUps ?? "-"})  WAL max ${(walMax / 1048576).toFixed(1)} MB`,
  );
}

async function main(): Promise<void> {
  console.log(`${jobs} jobs, ${perFlush} per flush`);
  for (let run = 0; run < 2; run++) {
    await measure("auto-checkpoint, start written", false, false);
    await measure("checkpointer, start written", true, false);
    await measure("checkpointer, start waits", true);
  }
}

void main();
