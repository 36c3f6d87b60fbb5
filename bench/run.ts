/**
 * `npm run bench`: builds the service, SDK and bench processes with tsc, runs the suites (or those
 * named with --only; `curves` names the four scaling curves), prints a table, each curve's verdict
 * and the targets, writes bench/results.json and draws the curves into bench/charts/. Loopback only;
 * each suite is bounded in time and stops by itself. Every figure is a median of --runs (>= 3) runs,
 * except the stack-size curve's (--stack-cycles, 1 by default: a 500-resource cycle takes minutes).
 * --quick: small sizes everywhere (a developer run; results to bench/.tmp unless --out is given).
 */
import { writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { BENCH_DIR, buildBench } from "./lib/build";
import { chartSpecs, renderCharts } from "./lib/charts";
import { machine } from "./lib/machine";
import { curveLines, type Results, table, targetLines, targets } from "./lib/report";
import { type EndToEndPoint, endToEnd } from "./suites/end-to-end";
import { queuedMemory, runSyncLatency } from "./suites/latency-memory";
import { providerEconomy, stackSizeCurve } from "./suites/provider";
import { queueDepthCurve } from "./suites/queue-depth";
import { queueFloor } from "./suites/queue-floor";
import { runRate } from "./suites/run-rate";
import { sdkCycles, streamThroughput } from "./suites/sdk";

const SUITES = [
  "run-rate",
  "e2e",
  "runsync",
  "queued",
  "sdk",
  "stream",
  "provider",
  "queue-depth",
  "e2e-workers",
  "queue-floor",
  "e2e-endpoints",
  "stack-size",
] as const;
type Suite = (typeof SUITES)[number];
const CURVES: Suite[] = ["queue-depth", "e2e-workers", "e2e-endpoints", "stack-size"];
/** `e2e` (1, 4 and 16 workers) is left out by default: the e2e-workers curve covers it. */
const DEFAULT: Suite[] = SUITES.filter((s) => s !== "e2e");

/** The sizes of a full run and of a --quick one. */
const SIZES = {
  full: {
    runRateSec: 5,
    e2eJobs: (p: EndToEndPoint) => (p.endpoints * p.workersPerEndpoint === 1 ? 2_000 : 5_000),
    /** Each end-to-end point's warm-up: enough jobs that V8 has compiled the job path (README, "Warm-up"). */
    e2eWarmupJobs: 10_000,
    /** The runsync suite's warm-up loop, against each of the service, the bare server and the relay. */
    runsyncWarmup: 5_000,
    queuedJobs: 100_000,
    sdkCycles: 10_000,
    providerCount: 50,
    depths: [1_000, 10_000, 100_000, 1_000_000],
    workers: [1, 2, 4, 8, 16, 32],
    endpoints: [1, 10, 100],
    stackSizes: [10, 100, 500],
  },
  quick: {
    runRateSec: 2,
    e2eJobs: () => 1_000,
    e2eWarmupJobs: 0,
    runsyncWarmup: 500,
    queuedJobs: 20_000,
    sdkCycles: 2_000,
    providerCount: 5,
    depths: [1_000, 10_000, 100_000],
    workers: [1, 4],
    endpoints: [1, 10],
    stackSizes: [10, 50],
  },
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      only: { type: "string", multiple: true },
      runs: { type: "string", default: "3" },
      quick: { type: "boolean", default: false },
      /** Worker counts of the `e2e` suite (default 1, 4, 16). */
      workers: { type: "string", multiple: true },
      /**
       * Jobs in each end-to-end point's warm-up run (default 10,000 in a full run, which measures the
       * service warm, bench/README.md "Warm-up"; a quarter of a run with --quick). 0: a quarter.
       */
      "e2e-warmup": { type: "string" },
      /** Fresh cycles per size of the stack-size curve (default 1). */
      "stack-cycles": { type: "string", default: "1" },
      /** Resources per stack of the stack-size curve, comma-separated (default 10,100,500). */
      "stack-sizes": { type: "string" },
      out: { type: "string" },
      /** Where the curves' SVG charts go (default: charts/ beside --out). */
      charts: { type: "string" },
      /** Reuse bench/.tmp/build as it is (for experiments on the compiled output). */
      "skip-build": { type: "boolean", default: false },
    },
  });
  const named = (values.only ?? []).flatMap((s) => (s === "curves" ? CURVES : [s]));
  const unknown = named.filter((s) => !SUITES.includes(s as Suite));
  if (unknown.length > 0)
    throw new Error(`unknown suite(s) ${unknown.join(", ")}; known: ${SUITES.join(", ")}, curves`);
  const only = new Set(named.length > 0 ? (named as Suite[]) : DEFAULT);
  const runs = Math.max(3, Number(values.runs) || 3);
  const size = values.quick ? SIZES.quick : SIZES.full;
  const e2eWarmup =
    values["e2e-warmup"] === undefined ? size.e2eWarmupJobs : Number(values["e2e-warmup"]) || 0;
  const out =
    values.out ?? join(BENCH_DIR, ...(values.quick ? [".tmp", "results-quick.json"] : ["results.json"]));
  const chartsDir = values.charts ?? join(dirname(out), "charts");
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const started = Date.now();
  const host = machine();
  log(`machine: ${host.cores} cores, ${host.cpuModel}, Node ${host.node}, load ${host.loadAverageAtStart}`);
  if (!values["skip-build"]) {
    const build = await buildBench();
    log(`build: ${build.ms} ms`);
    if (build.warnings)
      log(`tsc reported errors in the tree (the bench runs what was emitted):\n${build.warnings}`);
  }

  const r: Results = {};
  const timed = async (suite: Suite, title: string, body: () => Promise<void>) => {
    if (!only.has(suite)) return;
    const at = Date.now();
    log(title);
    await body();
    log(`  (${suite}: ${Math.round((Date.now() - at) / 1000)} s)`);
  };
  await timed(
    "run-rate",
    "service: /run accepted per second vs the bare-HTTP ceiling, 64 connections",
    async () => {
      r.runRate = await runRate({ runs, durationSec: size.runRateSec, warmupSec: 1, connections: 64, log });
    },
  );
  await timed("e2e", "service: end-to-end jobs per second with 1, 4 and 16 workers", async () => {
    r.endToEnd = await endToEnd({
      runs,
      points: (values.workers?.map(Number) ?? [1, 4, 16]).map((w) => ({
        endpoints: 1,
        workersPerEndpoint: w,
      })),
      jobsFor: size.e2eJobs,
      warmupJobs: e2eWarmup,
      concurrency: 64,
      log,
    });
  });
  await timed(
    "runsync",
    "service: /runsync latency, no-op handler, one worker; bare keep-alive round trip",
    async () => {
      r.runSync = await runSyncLatency({ runs, requests: 2_000, warmupRequests: size.runsyncWarmup, log });
    },
  );
  await timed(
    "queued",
    `service: resident memory with ${size.queuedJobs} queued jobs; restart with them`,
    async () => {
      r.queued = await queuedMemory({ runs, jobs: size.queuedJobs, log });
    },
  );
  await timed(
    "sdk",
    `sdk: ${size.sdkCycles} run + status cycles, this SDK vs runpod-sdk, 64 in flight`,
    async () => {
      r.sdk = await sdkCycles({ runs, cycles: size.sdkCycles, concurrency: 64, log });
    },
  );
  await timed("stream", "sdk: streaming a 10 MiB output through stream()", async () => {
    r.stream = await streamThroughput({ runs, chunks: 40, chunkBytes: 256 * 1024, log });
  });
  await timed(
    "provider",
    `provider: ${size.providerCount} endpoints with their templates through the test engine`,
    async () => {
      r.provider = await providerEconomy({ cycles: runs, count: size.providerCount, log });
    },
  );
  await timed(
    "queue-depth",
    `curve: /run and RSS against queue depth ${size.depths.join(", ")}`,
    async () => {
      r.queueDepth = await queueDepthCurve({ depths: size.depths, runs, connections: 64, log });
    },
  );
  await timed("e2e-workers", `curve: end to end against workers ${size.workers.join(", ")}`, async () => {
    r.e2eWorkers = await endToEnd({
      runs,
      points: size.workers.map((w) => ({ endpoints: 1, workersPerEndpoint: w })),
      jobsFor: size.e2eJobs,
      warmupJobs: e2eWarmup,
      concurrency: 64,
      log,
    });
  });
  await timed(
    "queue-floor",
    "floor: the e2e client and 4 workers of the runtime against the bare server's in-memory queue",
    async () => {
      r.queueFloor = await queueFloor({
        workers: 4,
        runs,
        jobs: size.e2eJobs({ endpoints: 1, workersPerEndpoint: 4 }),
        warmupJobs: e2eWarmup,
        concurrency: 64,
        log,
      });
    },
  );
  await timed(
    "e2e-endpoints",
    `curve: end to end against endpoints ${size.endpoints.join(", ")} (1 worker each)`,
    async () => {
      r.e2eEndpoints = await endToEnd({
        runs,
        points: size.endpoints.map((e) => ({ endpoints: e, workersPerEndpoint: 1 })),
        jobsFor: (p) => Math.max(size.e2eJobs({ endpoints: 1, workersPerEndpoint: 4 }), 10 * p.endpoints),
        warmupJobs: e2eWarmup,
        concurrency: 64,
        log,
      });
    },
  );
  const stackSizes = values["stack-sizes"]?.split(",").map(Number) ?? size.stackSizes;
  await timed(
    "stack-size",
    `curve: provider against stack size ${stackSizes.join(", ")} resources`,
    async () => {
      r.stackSize = await stackSizeCurve({
        sizes: stackSizes,
        cycles: Math.max(1, Number(values["stack-cycles"]) || 1),
        log,
      });
    },
  );

  const list = targets(r);
  const durationSec = Math.round((Date.now() - started) / 1000);
  const charts = await renderCharts(chartSpecs(r), chartsDir);
  await writeFile(
    out,
    `${JSON.stringify({ machine: host, startedAt: new Date(started).toISOString(), durationSec, runs, quick: values.quick, ...r, curves: curveLines(r), targets: list }, null, 2)}\n`,
  );
  log("");
  for (const line of table(r)) log(line);
  const verdicts = curveLines(r);
  if (verdicts.length > 0) {
    log("");
    for (const line of verdicts) log(line);
  }
  if (list.length > 0) {
    log("");
    for (const line of targetLines(list)) log(line);
    log(`${list.filter((t) => t.met).length} of ${list.length} targets met`);
  }
  log(
    `\n${durationSec} s; results in ${out}${charts.length > 0 ? `; ${charts.length} charts in ${chartsDir}` : ""}`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
