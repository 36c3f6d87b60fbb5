/**
 * Queue-depth curve: one service, one endpoint with no workers, its queue filled step by step to each
 * depth (autocannon, 64 connections). At each depth: the service's RSS and V8 heap; `runs` short
 * /run windows (autocannon, a fixed number of requests) with the service's CPU per request read from
 * process.cpuUsage in the service (microsecond resolution, unlike /proc's 10 ms ticks); then a
 * graceful restart on the same SQLite file (spawn to ready, every job restored), RSS again, and the
 * next fill goes on in the restarted process. Every new process is first warmed by 5,000 /run to a
 * scratch endpoint, whose queue is then purged (the cancelled jobs leave the queue; what they keep is
 * an id entry each), so the windows measure depth, not a cold JIT. The per-endpoint queue cap is
 * raised for this suite (the service's default, 100,000, would refuse the 1,000,000 step).
 */
import { performance } from "node:perf_hooks";
import { type Figure, figure } from "../lib/figures";
import { load } from "../lib/load";
import { BENCH_API_KEY, createQueueEndpoint, inQueue, startService, tempDataDir } from "../lib/servers";
import { round } from "../lib/stats";

export interface DepthPoint {
  /** Jobs in the queue when the /run windows started. */
  depth: number;
  /** Jobs in the queue after the windows (each window adds its requests). */
  depthAfterWindows: number;
  /** Service RSS and V8 heap in use once the queue reached `depth`, MB. */
  rssMb: number;
  heapMb: number;
  /** The fill from the previous depth to this one: /run per second and service CPU per request. */
  fill: { requests: number; perSec: number; cpuPerRequestUs: number } | null;
  /** The measured windows at this depth. */
  runPerSec: Figure;
  cpuPerRequestUs: Figure;
  /** Graceful stop, then a new process on the same file: spawn to ready (jobs restored), ms. */
  restartMs: number;
  startServiceMs: number;
  /**
   * CPU the new process spent from its start to ready (user + system), ms: on a loaded machine the
   * steadier form of the restart time (the wall time there includes waiting for a core).
   */
  restartCpuMs: number;
  rssAfterRestartMb: number;
  heapAfterRestartMb: number;
  /** Jobs in the queue after the restart (must equal depthAfterWindows). */
  restored: number;
}

export interface QueueDepthCurve {
  connections: number;
  windowRequests: number[];
  /** RSS of the service with its endpoint and no job, MB. */
  emptyRssMb: number;
  points: DepthPoint[];
}

const MB = 1024 * 1024;
const WARMUP = 5_000;
const BODY = JSON.stringify({ input: { prompt: "hello", max_tokens: 16 } });

/** Requests in one measured window at a depth: a tenth of it, within 2,000..10,000. */
export function windowRequests(depth: number): number {
  return Math.min(10_000, Math.max(2_000, Math.round(depth / 10)));
}

export async function queueDepthCurve(options: {
  depths: number[];
  runs: number;
  connections: number;
  log: (line: string) => void;
}): Promise<QueueDepthCurve> {
  const data = await tempDataDir();
  const maxQueued = 2 * Math.max(...options.depths) + 100_000;
  const start = () => startService({ data: data.file, maxQueuedPerEndpoint: maxQueued });
  let svc = await start();
  const headers = { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}` };
  try {
    const endpointId = await createQueueEndpoint(svc, "depth", "runpodkit/echo", 0);
    const scratchId = await createQueueEndpoint(svc, "depth-warmup", "runpodkit/echo", 0);
    const emptyRssMb = (await svc.stats()).rss / MB;
    options.log(`  empty service: RSS ${emptyRssMb.toFixed(0)} MB`);
    /** Warms a new process: /run to the scratch endpoint, then its queue purged. */
    const warm = async () => {
      const url = `${svc.ready.queueUrl}/v2/${scratchId}`;
      const result = await load({
        url: `${url}/run`,
        connections: options.connections,
        amount: WARMUP,
        method: "POST",
        headers,
        body: BODY,
      });
      if (result.total2xx !== WARMUP) throw new Error(`queue depth: warm-up ${result.total2xx}/${WARMUP}`);
      const purged = await fetch(`${url}/purge-queue`, { method: "POST", headers });
      if (!purged.ok) throw new Error(`queue depth: purge-queue answered ${purged.status}`);
      await purged.arrayBuffer();
    };
    await warm();
    /** Submits `amount` jobs; the rate and the service's CPU per request over them. */
    const submit = async (amount: number) => {
      const before = (await svc.stats()).cpuUs;
      const started = performance.now();
      const result = await load({
        url: `${svc.ready.queueUrl}/v2/${endpointId}/run`,
        connections: options.connections,
        amount,
        method: "POST",
        headers,
        body: BODY,
      });
      const seconds = (performance.now() - started) / 1000;
      const after = (await svc.stats()).cpuUs;
      if (result.total2xx !== amount)
        throw new Error(
          `queue depth: ${result.total2xx}/${amount} /run accepted (${result.non2xx} non-2xx, ${result.errors} errors)`,
        );
      return { perSec: amount / seconds, cpuPerRequestUs: (after - before) / amount };
    };
    let queued = 0;
    const points: DepthPoint[] = [];
    for (const depth of options.depths) {
      let fill: DepthPoint["fill"] = null;
      if (depth > queued) {
        const requests = depth - queued;
        fill = { requests, ...(await submit(requests)) };
        queued = depth;
      }
      const filled = await svc.stats();
      const rates: number[] = [];
      const cpu: number[] = [];
      const window = windowRequests(depth);
      for (let run = 0; run < options.runs; run++) {
        const measured = await submit(window);
        queued += window;
        rates.push(measured.perSec);
        cpu.push(measured.cpuPerRequestUs);
      }
      await svc.close();
      const spawned = performance.now();
      svc = await start();
      const restartMs = performance.now() - spawned;
      const atReady = await svc.stats();
      const restored = await inQueue(svc, endpointId);
      const restarted = await svc.stats();
      await warm();
      if (restored !== queued) throw new Error(`queue depth: ${restored}/${queued} jobs restored`);
      const point: DepthPoint = {
        depth,
        depthAfterWindows: queued,
        rssMb: round(filled.rss / MB, 1),
        heapMb: round(filled.heapUsed / MB, 1),
        fill: fill && {
          requests: fill.requests,
          perSec: round(fill.perSec, 0),
          cpuPerRequestUs: round(fill.cpuPerRequestUs, 1),
        },
        runPerSec: figure(rates, "/run per s", 0),
        cpuPerRequestUs: figure(cpu, "us/request", 1),
        restartMs: round(restartMs, 0),
        startServiceMs: round(svc.ready.startMs, 0),
        restartCpuMs: round(atReady.cpuUs / 1000, 0),
        rssAfterRestartMb: round(restarted.rss / MB, 1),
        heapAfterRestartMb: round(restarted.heapUsed / MB, 1),
        restored,
      };
      points.push(point);
      options.log(
        `  depth ${depth}: /run ${point.runPerSec.median}/s, ${point.cpuPerRequestUs.median} us CPU/request (fill ${fill ? `${fill.perSec.toFixed(0)}/s, ${fill.cpuPerRequestUs.toFixed(1)} us` : "-"}); RSS ${point.rssMb.toFixed(0)} MB (heap ${point.heapMb.toFixed(0)}); restart with ${queued} in ${restartMs.toFixed(0)} ms (${point.restartCpuMs} ms CPU), RSS after ${point.rssAfterRestartMb.toFixed(0)} MB`,
      );
    }
    return {
      connections: options.connections,
      windowRequests: options.depths.map(windowRequests),
      emptyRssMb: round(emptyRssMb, 1),
      points,
    };
  } finally {
    await svc.close();
    await data.remove();
  }
}
