/**
 * 2. The SDK against the official JS client: run + status cycles, 64 in flight, each client in its own
 * process, both in the same run and alternating which goes first; against the bare server (the
 * client's own cost shows) and against the local service. Then streaming a 10 MiB output.
 */
import { built } from "../lib/build";
import { type Figure, figure, ratioFigure } from "../lib/figures";
import { Child } from "../lib/ipc";
import { ClientReady, type CyclesArgs, LoopResult, StreamResult } from "../lib/protocol";
import {
  BENCH_API_KEY,
  createQueueEndpoint,
  profileArgs,
  startBare,
  startService,
  tempDataDir,
  waitForIdleWorkers,
} from "../lib/servers";

export interface ClientSide {
  cyclesPerSec: Figure;
  /** Client process CPU (user + system) per HTTP call (a cycle is 2 calls), microseconds. */
  cpuPerCallUs: Figure;
  errors: number;
}

export interface SdkAgainst {
  ours: ClientSide;
  official: ClientSide;
  /** A bare undici Pool doing the same cycles: the floor of any Node client (reference only). */
  undici: ClientSide;
  /** ours / official cycle rate, per side-by-side pair. */
  ratio: Figure;
}

export interface SdkResult {
  cycles: number;
  concurrency: number;
  bare: SdkAgainst;
  service: SdkAgainst;
}

type Side = "ours" | "official" | "undici";

async function measure(args: CyclesArgs): Promise<LoopResult> {
  const child = new Child(built("bench/clients/cycles"), [], {
    env: { BENCH_API_KEY },
    execArgv: profileArgs(`client-${args.client}`),
  });
  try {
    await child.ready(ClientReady);
    const result = await child.call("run", args, LoopResult);
    if (result.errors > 0)
      throw new Error(`${args.client}: ${result.errors} cycles failed: ${result.firstError}`);
    return result;
  } finally {
    await child.stop();
  }
}

function side(results: LoopResult[]): ClientSide {
  return {
    cyclesPerSec: figure(
      results.map((r) => (r.calls / r.elapsedMs) * 1000),
      "cycles/s",
      0,
    ),
    cpuPerCallUs: figure(
      results.map((r) => (r.cpuUserUs + r.cpuSystemUs) / (2 * r.calls)),
      "us/call",
      1,
    ),
    errors: results.reduce((n, r) => n + r.errors, 0),
  };
}

async function against(
  target: "bare" | "service",
  options: { runs: number; cycles: number; concurrency: number; log: (line: string) => void },
): Promise<SdkAgainst> {
  const results: Record<Side, LoopResult[]> = { ours: [], official: [], undici: [] };
  for (let run = 0; run < options.runs; run++) {
    const data = target === "service" ? await tempDataDir() : null;
    const bare = target === "bare" ? await startBare() : null;
    const svc = data ? await startService({ data: data.file }) : null;
    try {
      const baseUrl = bare ? `${bare.url}/v2` : `${svc?.ready.queueUrl}/v2`;
      const endpointId = svc ? await createQueueEndpoint(svc, "sdk", "runpodkit/echo", 0) : "bareendpoint00";
      const order: Side[] = run % 2 === 0 ? ["ours", "official", "undici"] : ["official", "ours", "undici"];
      for (const client of order) {
        const result = await measure({
          client,
          baseUrl,
          endpointId,
          cycles: options.cycles,
          warmup: 1_000,
          concurrency: options.concurrency,
        });
        results[client].push(result);
        options.log(
          `  ${target} / ${client}: ${((result.calls / result.elapsedMs) * 1000).toFixed(0)} cycles/s, ${((result.cpuUserUs + result.cpuSystemUs) / (2 * result.calls)).toFixed(1)} us CPU/call`,
        );
      }
    } finally {
      await bare?.close();
      await svc?.close();
      await data?.remove();
    }
  }
  const rate = (r: LoopResult) => r.calls / r.elapsedMs;
  return {
    ours: side(results.ours),
    official: side(results.official),
    undici: side(results.undici),
    ratio: ratioFigure(results.ours.map(rate), results.official.map(rate)),
  };
}

export async function sdkCycles(options: {
  runs: number;
  cycles: number;
  concurrency: number;
  log: (line: string) => void;
}): Promise<SdkResult> {
  options.log(" against the bare server");
  const bare = await against("bare", options);
  options.log(" against the local service");
  const service = await against("service", options);
  return { cycles: options.cycles, concurrency: options.concurrency, bare, service };
}

export interface StreamThroughput {
  bytes: number;
  chunks: number;
  mbPerSec: Figure;
  elapsedMs: Figure;
}

const STREAM_IMAGE = "bench/big-stream";

export async function streamThroughput(options: {
  runs: number;
  chunks: number;
  chunkBytes: number;
  log: (line: string) => void;
}): Promise<StreamThroughput> {
  const data = await tempDataDir();
  const svc = await startService({
    data: data.file,
    handlers: { [STREAM_IMAGE]: built("bench/handlers/big-stream") },
  });
  const child = new Child(built("bench/clients/stream"), [], { env: { BENCH_API_KEY } });
  try {
    await child.ready(ClientReady);
    const endpointId = await createQueueEndpoint(svc, "stream", STREAM_IMAGE, 1);
    await waitForIdleWorkers(svc, endpointId, 1);
    const args = {
      queueUrl: svc.ready.queueUrl,
      endpointId,
      chunks: options.chunks,
      chunkBytes: options.chunkBytes,
    };
    const results: StreamResult[] = [];
    for (let run = 0; run <= options.runs; run++) {
      const result = await child.call("run", args, StreamResult);
      const expected = options.chunks * options.chunkBytes;
      if (result.bytes !== expected || result.status !== "COMPLETED") {
        throw new Error(`stream: ${result.bytes}/${expected} bytes, status ${result.status}`);
      }
      if (run === 0) continue; // warm-up
      results.push(result);
      options.log(`  stream ${(result.bytes / 2 ** 20).toFixed(0)} MiB in ${result.elapsedMs.toFixed(0)} ms`);
    }
    return {
      bytes: options.chunks * options.chunkBytes,
      chunks: options.chunks,
      mbPerSec: figure(
        results.map((r) => r.bytes / 2 ** 20 / (r.elapsedMs / 1000)),
        "MiB/s",
        1,
      ),
      elapsedMs: figure(
        results.map((r) => r.elapsedMs),
        "ms",
        0,
      ),
    };
  } finally {
    await child.stop();
    await svc.close();
    await data.remove();
  }
}
