/**
 * `npm run bench`: builds the service, SDK and bench processes with tsc, runs every suite (or those
 * named with --only), prints a table and writes bench/results.json. Loopback only; each suite is
 * bounded in time and stops by itself.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BENCH_DIR, buildBench } from "./lib/build";
import { machine } from "./lib/machine";
import { endToEnd } from "./suites/end-to-end";
import { queuedMemory, runSyncLatency } from "./suites/latency-memory";
import { runRate } from "./suites/run-rate";

const SUITES = ["run-rate", "e2e", "runsync", "queued"] as const;
type Suite = (typeof SUITES)[number];

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      only: { type: "string", multiple: true },
      runs: { type: "string", default: "3" },
      out: { type: "string", default: join(BENCH_DIR, "results.json") },
    },
  });
  const only = new Set((values.only ?? [...SUITES]) as Suite[]);
  const runs = Math.max(3, Number(values.runs));
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const started = Date.now();
  const host = machine();
  log(`machine: ${host.cores} cores, ${host.cpuModel}, Node ${host.node}, load ${host.loadAverageAtStart}`);
  const build = await buildBench();
  log(`build: ${build.ms} ms${build.warnings ? " (tsc reported errors in the tree; see above)" : ""}`);
  if (build.warnings) log(build.warnings);

  const results: Record<string, unknown> = { machine: host, startedAt: new Date(started).toISOString() };
  if (only.has("run-rate")) {
    log("service: /run accepted per second vs the bare-HTTP ceiling");
    results.runRate = await runRate({ runs, durationSec: 5, warmupSec: 1, connections: 64, log });
  }
  if (only.has("e2e")) {
    log("service: end-to-end jobs per second with 1, 4 and 16 workers");
    results.endToEnd = await endToEnd({
      runs,
      workerCounts: [1, 4, 16],
      jobsFor: (workers) => (workers === 1 ? 2_000 : 5_000),
      concurrency: 64,
      log,
    });
  }
  if (only.has("runsync")) {
    log("service: /runsync latency, no-op handler, one worker");
    results.runSync = await runSyncLatency({ runs, requests: 2_000, log });
  }
  if (only.has("queued")) {
    log("service: resident memory with 100,000 queued jobs; restart with them in the store");
    results.queued = await queuedMemory({ runs, jobs: 100_000, log });
  }
  results.durationSec = Math.round((Date.now() - started) / 1000);
  await writeFile(values.out, `${JSON.stringify(results, null, 2)}\n`);
  log(JSON.stringify(results, null, 2));
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
