/**
 * `npm run bench`: builds the service, SDK and bench processes with tsc, runs every suite (or those
 * named with --only), prints a table and the targets, and writes bench/results.json. Loopback only;
 * each suite is bounded in time and stops by itself. Every figure is a median of --runs (>= 3) runs.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BENCH_DIR, buildBench } from "./lib/build";
import { machine } from "./lib/machine";
import { type Results, table, targetLines, targets } from "./lib/report";
import { endToEnd } from "./suites/end-to-end";
import { queuedMemory, runSyncLatency } from "./suites/latency-memory";
import { providerEconomy } from "./suites/provider";
import { runRate } from "./suites/run-rate";
import { sdkCycles, streamThroughput } from "./suites/sdk";

const SUITES = ["run-rate", "e2e", "runsync", "queued", "sdk", "stream", "provider"] as const;
type Suite = (typeof SUITES)[number];

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      only: { type: "string", multiple: true },
      runs: { type: "string", default: "3" },
      /** Worker counts of the end-to-end suite (default 1, 4, 16). */
      workers: { type: "string", multiple: true },
      out: { type: "string", default: join(BENCH_DIR, "results.json") },
      /** Reuse bench/.tmp/build as it is (for experiments on the compiled output). */
      "skip-build": { type: "boolean", default: false },
    },
  });
  const unknown = (values.only ?? []).filter((s) => !SUITES.includes(s as Suite));
  if (unknown.length > 0)
    throw new Error(`unknown suite(s) ${unknown.join(", ")}; known: ${SUITES.join(", ")}`);
  const only = new Set((values.only ?? [...SUITES]) as Suite[]);
  const runs = Math.max(3, Number(values.runs) || 3);
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const started = Date.now();
  const host = machine();
  log(`machine: ${host.cores} cores, ${host.cpuModel}, Node ${host.node}, load ${host.loadAverageAtStart}`);
  const build = await buildBench();
  log(`build: ${build.ms} ms`);
  if (build.warnings)
    log(`tsc reported errors in the tree (the bench runs what was emitted):\n${build.warnings}`);

  const r: Results = {};
  if (only.has("run-rate")) {
    log("service: /run accepted per second vs the bare-HTTP ceiling, 64 connections");
    r.runRate = await runRate({ runs, durationSec: 5, warmupSec: 1, connections: 64, log });
  }
  if (only.has("e2e")) {
    log("service: end-to-end jobs per second with 1, 4 and 16 workers");
    r.endToEnd = await endToEnd({
      runs,
      workerCounts: values.workers?.map(Number) ?? [1, 4, 16],
      jobsFor: (workers) => (workers === 1 ? 2_000 : 5_000),
      concurrency: 64,
      log,
    });
  }
  if (only.has("runsync")) {
    log("service: /runsync latency, no-op handler, one worker");
    r.runSync = await runSyncLatency({ runs, requests: 2_000, log });
  }
  if (only.has("queued")) {
    log("service: resident memory with 100,000 queued jobs; restart with them in the store");
    r.queued = await queuedMemory({ runs, jobs: 100_000, log });
  }
  if (only.has("sdk")) {
    log("sdk: 10,000 run + status cycles, this SDK vs runpod-sdk, 64 in flight");
    r.sdk = await sdkCycles({ runs, cycles: 10_000, concurrency: 64, log });
  }
  if (only.has("stream")) {
    log("sdk: streaming a 10 MiB output through stream()");
    r.stream = await streamThroughput({ runs, chunks: 40, chunkBytes: 256 * 1024, log });
  }
  if (only.has("provider")) {
    log("provider: 50 endpoints with their templates through the test engine");
    r.provider = await providerEconomy({ cycles: runs, count: 50, log });
  }

  const list = targets(r);
  const durationSec = Math.round((Date.now() - started) / 1000);
  await writeFile(
    values.out,
    `${JSON.stringify({ machine: host, startedAt: new Date(started).toISOString(), durationSec, runs, ...r, targets: list }, null, 2)}\n`,
  );
  log("");
  for (const line of table(r)) log(line);
  log("");
  for (const line of targetLines(list)) log(line);
  log(`\n${durationSec} s; results in ${values.out}`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
