/**
 * 1a. /run accepted per second from 64 connections, against the bare-HTTP ceiling answering the same
 * JSON, side by side in the same run. The endpoint has no workers, so every accepted job queues (and
 * is written to the SQLite store before /run answers, as the service does).
 */
import { type Figure, figure, ratioFigure } from "../lib/figures";
import { type LoadOptions, load } from "../lib/load";
import { treeCpu } from "../lib/proc-cpu";
import { BENCH_API_KEY, createQueueEndpoint, startBare, startService, tempDataDir } from "../lib/servers";

export interface RunRateResult {
  connections: number;
  durationSec: number;
  service: Figure;
  ceiling: Figure;
  /** service / ceiling, per side-by-side pair. */
  ratio: Figure;
  serviceP99Ms: Figure;
  ceilingP99Ms: Figure;
  /**
   * Server CPU per answered request (user + system, microseconds), service and ceiling, and
   * ceiling / service: the share of the ceiling the service would reach on equal CPU. Unlike the
   * rates these hardly move with other load on the machine.
   */
  serviceCpuPerRequestUs: Figure | null;
  ceilingCpuPerRequestUs: Figure | null;
  cpuRatio: Figure | null;
  /** Non-2xx or errors seen in any measured run (must be 0 for the figure to mean "accepted"). */
  rejected: number;
}

export interface RunRateOptions {
  runs: number;
  durationSec: number;
  warmupSec: number;
  connections: number;
  log: (line: string) => void;
}

/** Room for ~6 s of /run at up to 150,000/s: no run here comes near the bound. */
const MAX_QUEUED = 1_000_000;

const BODY = JSON.stringify({ input: { prompt: "hello", max_tokens: 16 } });

export async function runRate(options: RunRateOptions): Promise<RunRateResult> {
  const service: number[] = [];
  const ceiling: number[] = [];
  const serviceP99: number[] = [];
  const ceilingP99: number[] = [];
  const serviceCpu: number[] = [];
  const ceilingCpu: number[] = [];
  /** Runs the measured load and the server's CPU over it (null without /proc). */
  const measured = async (pid: number, common: Omit<LoadOptions, "durationSec">) => {
    const before = treeCpu(pid);
    const result = await load({ ...common, durationSec: options.durationSec });
    const after = treeCpu(pid);
    const cpuUs =
      before && after && result.total2xx > 0
        ? ((after.selfMs - before.selfMs) * 1000) / result.total2xx
        : null;
    return { result, cpuUs };
  };
  let rejected = 0;
  const headers = { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}` };

  const measureService = async () => {
    const data = await tempDataDir();
    // The warm-up and the run queue ~6 s of /run on one endpoint: above the default bound of
    // 100,000 queued per endpoint on a fast machine, whose refusals would be counted as load.
    const svc = await startService({ data: data.file, maxQueuedPerEndpoint: MAX_QUEUED });
    try {
      const endpointId = await createQueueEndpoint(svc, "run-rate", "runpodkit/echo", 0);
      const url = `${svc.ready.queueUrl}/v2/${endpointId}/run`;
      const common = { url, connections: options.connections, method: "POST" as const, headers, body: BODY };
      await load({ ...common, durationSec: options.warmupSec });
      const { result, cpuUs } = await measured(svc.ready.pid, common);
      if (cpuUs !== null) serviceCpu.push(cpuUs);
      rejected += result.non2xx + result.errors;
      service.push(result.acceptedPerSec);
      serviceP99.push(result.latencyP99Ms);
      options.log(
        `  service /run: ${result.acceptedPerSec.toFixed(0)}/s (non-2xx ${result.non2xx}), ${cpuUs?.toFixed(1)} us CPU/request`,
      );
    } finally {
      await svc.close();
      await data.remove();
    }
  };
  const measureCeiling = async () => {
    const bare = await startBare();
    try {
      const url = `${bare.url}/v2/bareendpoint00/run`;
      const common = { url, connections: options.connections, method: "POST" as const, headers, body: BODY };
      await load({ ...common, durationSec: options.warmupSec });
      const { result, cpuUs } = await measured(bare.child.pid, common);
      if (cpuUs !== null) ceilingCpu.push(cpuUs);
      ceiling.push(result.acceptedPerSec);
      ceilingP99.push(result.latencyP99Ms);
      options.log(
        `  bare ceiling /run: ${result.acceptedPerSec.toFixed(0)}/s, ${cpuUs?.toFixed(1)} us CPU/request`,
      );
    } finally {
      await bare.close();
    }
  };

  for (let i = 0; i < options.runs; i++) {
    // Alternate which side goes first, so a drift in machine load biases neither.
    if (i % 2 === 0) {
      await measureCeiling();
      await measureService();
    } else {
      await measureService();
      await measureCeiling();
    }
  }
  if (rejected > 0)
    options.log(
      `  WARNING: ${rejected} /run refused or failed while measured: the rates above are not capacity`,
    );
  return {
    connections: options.connections,
    durationSec: options.durationSec,
    service: figure(service, "accepted/s", 0),
    ceiling: figure(ceiling, "req/s", 0),
    ratio: ratioFigure(service, ceiling),
    serviceP99Ms: figure(serviceP99, "ms"),
    ceilingP99Ms: figure(ceilingP99, "ms"),
    serviceCpuPerRequestUs: serviceCpu.length > 0 ? figure(serviceCpu, "us/request", 1) : null,
    ceilingCpuPerRequestUs: ceilingCpu.length > 0 ? figure(ceilingCpu, "us/request", 1) : null,
    cpuRatio: serviceCpu.length > 0 && ceilingCpu.length > 0 ? ratioFigure(ceilingCpu, serviceCpu) : null,
    rejected,
  };
}
