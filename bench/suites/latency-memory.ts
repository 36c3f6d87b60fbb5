/**
 * 1c. /runsync latency (p50, p99) of the no-op handler with one worker, beside a direct call and the
 * bare server's keep-alive round trip (same client loop, same run).
 * 1d. Resident memory of the service holding 100,000 queued jobs, and the time to restart with them
 * in the store (graceful stop, then a new process on the same SQLite file until it listens).
 */
import { performance } from "node:perf_hooks";
import { built } from "../lib/build";
import { type Figure, figure, ratioFigure } from "../lib/figures";
import { Child } from "../lib/ipc";
import { load } from "../lib/load";
import { ClientReady, LatencyResult } from "../lib/protocol";
import {
  BENCH_API_KEY,
  createQueueEndpoint,
  inQueue,
  startBare,
  startService,
  tempDataDir,
  waitForIdleWorkers,
} from "../lib/servers";

export interface RunSyncLatency {
  requestsPerRun: number;
  p50Ms: Figure;
  p99Ms: Figure;
  directCallP50Ms: Figure;
  /** runsync p50 minus the direct call's p50. */
  overheadP50Ms: Figure;
  /**
   * The same client loop (one undici keep-alive connection, same request count) against the bare
   * server's /runsync, which echoes the input at once: the HTTP round-trip floor of the same run.
   */
  bareP50Ms: Figure;
  bareP99Ms: Figure;
  /** /runsync p50 / bare round-trip p50, per side-by-side pair. */
  p50OverBare: Figure;
  /**
   * The same loop against the relay floor (bare-server.ts, endpoint `relay`): /runsync held and its
   * job relayed to a bare worker process through job-take and job-done, no rule or store: what three
   * processes and four hops cost on this machine before any of the service's work.
   */
  relayP50Ms?: Figure;
  relayP99Ms?: Figure;
  /** /runsync p50 / relay-floor p50, per side-by-side pair. */
  p50OverRelay?: Figure;
  /**
   * The unmeasured warm-up loop each of the three ran first (`requests` each; README, "Warm-up"),
   * and the p50 and p99 of /runsync's over all of it: a service from cold.
   */
  warmup?: { requests: number; p50Ms: number; p99Ms: number };
  wrong: number;
}

export async function runSyncLatency(options: {
  runs: number;
  requests: number;
  /**
   * Requests of one unmeasured loop against each of the three before the measured runs: the first
   * seconds after the service and its worker start (likely V8 still compiling them) lengthened the
   * tails of /runsync and of the bare and relay floors measured beside it (bench/HISTORY.md, eighth pass).
   */
  warmupRequests: number;
  log: (line: string) => void;
}): Promise<RunSyncLatency> {
  const data = await tempDataDir();
  const svc = await startService({ data: data.file });
  const bare = await startBare();
  const client = new Child(built("bench/clients/runsync"), [], { env: { BENCH_API_KEY } });
  const relayWorker = new Child(built("bench/bare-worker"), [], { env: { BARE_URL: bare.url } });
  try {
    await client.ready(ClientReady);
    await relayWorker.ready(ClientReady);
    const endpointId = await createQueueEndpoint(svc, "runsync", "runpodkit/echo", 1);
    await waitForIdleWorkers(svc, endpointId, 1);
    const results: LatencyResult[] = [];
    const floor: LatencyResult[] = [];
    const relay: LatencyResult[] = [];
    /** One run of the client loop against `queueUrl`/`target`, kept in `into`. */
    const measure =
      (label: string, into: LatencyResult[], queueUrl: string, target: string, direct: boolean) =>
      async () => {
        const args = { queueUrl, endpointId: target, warmup: 200, requests: options.requests, direct };
        const result = await client.call("run", args, LatencyResult);
        into.push(result);
        options.log(`  ${label} p50 ${result.p50Ms.toFixed(3)} ms, p99 ${result.p99Ms.toFixed(3)} ms`);
      };
    const measureService = measure("/runsync", results, svc.ready.queueUrl, endpointId, true);
    const measureBare = measure("bare round trip", floor, bare.url, "bareendpoint00", false);
    const measureRelay = measure("relay floor", relay, bare.url, "relay", false);
    let warmup: RunSyncLatency["warmup"];
    let warmupWrong = 0;
    if (options.warmupRequests > 0) {
      const loops = [
        { queueUrl: svc.ready.queueUrl, endpointId, direct: false },
        { queueUrl: bare.url, endpointId: "bareendpoint00", direct: false },
        { queueUrl: bare.url, endpointId: "relay", direct: false },
      ];
      for (const loop of loops) {
        const args = { ...loop, warmup: 0, requests: options.warmupRequests };
        const result = await client.call("run", args, LatencyResult);
        warmupWrong += result.wrong;
        warmup ??= { requests: options.warmupRequests, p50Ms: result.p50Ms, p99Ms: result.p99Ms };
      }
      options.log(
        `  warm-up: ${options.warmupRequests} requests each, /runsync's: p50 ${warmup?.p50Ms.toFixed(3)} ms, p99 ${warmup?.p99Ms.toFixed(3)} ms (not counted)`,
      );
    }
    for (let run = 0; run < options.runs; run++) {
      // Alternate the order, so a drift in machine load biases none of them.
      const order = [measureBare, measureRelay, measureService];
      for (const measure of run % 2 === 0 ? order : order.reverse()) await measure();
    }
    /** A figure in ms of one value of each run. */
    const ms = (runs: LatencyResult[], value: (r: LatencyResult) => number, digits = 3) =>
      figure(runs.map(value), "ms", digits);
    const p50 = (r: LatencyResult) => r.p50Ms;
    const p99 = (r: LatencyResult) => r.p99Ms;
    return {
      requestsPerRun: options.requests,
      p50Ms: ms(results, p50),
      p99Ms: ms(results, p99),
      directCallP50Ms: ms(results, (r) => r.directP50Ms, 5),
      overheadP50Ms: ms(results, (r) => r.p50Ms - r.directP50Ms),
      bareP50Ms: ms(floor, p50),
      bareP99Ms: ms(floor, p99),
      p50OverBare: ratioFigure(results.map(p50), floor.map(p50)),
      relayP50Ms: ms(relay, p50),
      relayP99Ms: ms(relay, p99),
      p50OverRelay: ratioFigure(results.map(p50), relay.map(p50)),
      ...(warmup ? { warmup } : {}),
      wrong: [...results, ...floor, ...relay].reduce((n, r) => n + r.wrong, warmupWrong),
    };
  } finally {
    await relayWorker.stop();
    await client.stop();
    await bare.close();
    await svc.close();
    await data.remove();
  }
}

export interface QueuedMemory {
  jobs: number;
  /** Service RSS once all jobs were accepted (load just ended), MB. */
  rssAfterSubmitMb: Figure;
  /** Service RSS after the restart, the same jobs restored from the store, MB. */
  rssAfterRestartMb: Figure;
  /** RSS of the same service with its endpoint and no job, MB (what the jobs add is the difference). */
  rssEmptyMb: Figure;
  /** V8 heap in use after submit and after restart, MB (the part of RSS that is live JS objects). */
  heapAfterSubmitMb: Figure;
  heapAfterRestartMb: Figure;
  /** From spawning the new process to its ready message (listening, jobs restored), ms. */
  restartMs: Figure;
  /** Of which startService itself (store open, restore, listen), ms. */
  startServiceMs: Figure;
  /** CPU the new process spent from its start to ready, ms (steadier than the wall time under load). */
  restartCpuMs: Figure;
  /** Jobs in the queue after the restart, per run (must equal `jobs`). */
  restoredJobs: number[];
}

const MB = 1024 * 1024;

export async function queuedMemory(options: {
  runs: number;
  jobs: number;
  log: (line: string) => void;
}): Promise<QueuedMemory> {
  const afterSubmit: number[] = [];
  const afterRestart: number[] = [];
  const empty: number[] = [];
  const heapSubmit: number[] = [];
  const heapRestart: number[] = [];
  const restart: number[] = [];
  const startMs: number[] = [];
  const restartCpu: number[] = [];
  const restored: number[] = [];
  for (let run = 0; run < options.runs; run++) {
    const data = await tempDataDir();
    let svc = await startService({ data: data.file });
    try {
      const endpointId = await createQueueEndpoint(svc, "queued", "runpodkit/echo", 0);
      empty.push((await svc.stats()).rss / MB);
      const filled = await load({
        url: `${svc.ready.queueUrl}/v2/${endpointId}/run`,
        connections: 64,
        amount: options.jobs,
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}` },
        body: JSON.stringify({ input: { prompt: "hello", max_tokens: 16 } }),
      });
      if (filled.total2xx !== options.jobs) {
        throw new Error(`queued: ${filled.total2xx}/${options.jobs} accepted (${filled.non2xx} non-2xx)`);
      }
      const submitted = await svc.stats();
      afterSubmit.push(submitted.rss / MB);
      heapSubmit.push(submitted.heapUsed / MB);
      await svc.close();
      const spawned = performance.now();
      svc = await startService({ data: data.file });
      restart.push(performance.now() - spawned);
      startMs.push(svc.ready.startMs);
      restartCpu.push((await svc.stats()).cpuUs / 1000);
      restored.push(await inQueue(svc, endpointId));
      const restarted = await svc.stats();
      afterRestart.push(restarted.rss / MB);
      heapRestart.push(restarted.heapUsed / MB);
      options.log(
        `  ${options.jobs} queued: RSS ${afterSubmit.at(-1)?.toFixed(0)} MB (empty ${empty.at(-1)?.toFixed(0)}, heap ${heapSubmit.at(-1)?.toFixed(0)} of ${(submitted.heapTotal / MB).toFixed(0)}), restart ${restart.at(-1)?.toFixed(0)} ms (startService ${svc.ready.startMs.toFixed(0)} ms), RSS after ${afterRestart.at(-1)?.toFixed(0)} MB (heap ${heapRestart.at(-1)?.toFixed(0)} of ${(restarted.heapTotal / MB).toFixed(0)}, external ${(restarted.external / MB).toFixed(0)}), restored ${restored.at(-1)}`,
      );
    } finally {
      await svc.close();
      await data.remove();
    }
  }
  return {
    jobs: options.jobs,
    rssAfterSubmitMb: figure(afterSubmit, "MB", 1),
    rssAfterRestartMb: figure(afterRestart, "MB", 1),
    rssEmptyMb: figure(empty, "MB", 1),
    heapAfterSubmitMb: figure(heapSubmit, "MB", 1),
    heapAfterRestartMb: figure(heapRestart, "MB", 1),
    restartMs: figure(restart, "ms", 0),
    startServiceMs: figure(startMs, "ms", 0),
    restartCpuMs: figure(restartCpu, "ms", 0),
    restoredJobs: restored,
  };
}
