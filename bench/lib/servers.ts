/**
 * Starting what is measured: the service (compiled, persistence in a temp SQLite file) and the bare
 * ceiling server, each in its own process; and the queue endpoints the runs submit to.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { JobClient } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";
import { built } from "./build";
import { Child } from "./ipc";
import { BareReady, Empty, type ServerOptions, ServerReady, ServerStats } from "./protocol";

/**
 * With BENCH_PROFILE=<dir>, the service (and clients that ask) run under --cpu-prof, writing
 * .cpuprofile files there (read them with bench/tools/cpuprofile-top.ts). For finding causes only:
 * figures measured this way are not the service as shipped.
 */
export function profileArgs(name: string): string[] | undefined {
  const dir = process.env.BENCH_PROFILE;
  return dir ? ["--cpu-prof", `--cpu-prof-dir=${join(dir, name)}`] : undefined;
}

/** One key per bench run; it never appears in output (children get it through the environment). */
export const BENCH_API_KEY = `rpk_bench_${randomBytes(16).toString("hex")}`;

export interface BenchService {
  child: Child;
  ready: ServerReady;
  rest: RestClient;
  stats(): Promise<ServerStats>;
  resetCalls(): Promise<void>;
  /** Graceful close (store flushed, workers stopped), then the process ends. */
  close(): Promise<void>;
}

/**
 * The bench's service process, started from the bench build, or from `buildDir` (another build of
 * the bench, e.g. a copy with a change in it, for A/B tools).
 */
export async function startService(
  options: ServerOptions,
  childOptions: { execArgv?: string[]; buildDir?: string } = {},
): Promise<BenchService> {
  const script = childOptions.buildDir
    ? join(childOptions.buildDir, "bench", "server.js")
    : built("bench/server");
  const child = new Child(script, [], {
    env: { BENCH_SERVER: JSON.stringify(options), BENCH_API_KEY },
    execArgv: childOptions.execArgv ?? profileArgs("service"),
  });
  const ready = await child.ready(ServerReady);
  const rest = new RestClient({ apiKey: BENCH_API_KEY, baseUrl: ready.restUrl });
  return {
    child,
    ready,
    rest,
    stats: () => child.call("stats", {}, ServerStats),
    resetCalls: async () => {
      await child.call("resetCalls", {}, Empty);
    },
    close: async () => {
      await rest.close();
      await child.call("close", {}, Empty).catch(() => undefined);
      await child.stop();
    },
  };
}

export interface BareServer {
  child: Child;
  url: string;
  close(): Promise<void>;
}

export async function startBare(): Promise<BareServer> {
  const child = new Child(built("bench/bare-server"), []);
  const ready = await child.ready(BareReady);
  return { child, url: ready.url, close: () => child.stop() };
}

/** A fresh temp dir for one run's SQLite file; removed by the returned function. */
export async function tempDataDir(): Promise<{ file: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "runpodkit-bench-"));
  return { file: join(dir, "runpodkit.sqlite"), remove: () => rm(dir, { recursive: true, force: true }) };
}

/** A queue endpoint running `image` with exactly `workers` workers (0: jobs only queue). */
export async function createQueueEndpoint(
  service: BenchService,
  name: string,
  image: string,
  workers: number,
): Promise<string> {
  const template = await service.rest.templates.create({
    name: `${name}-template`,
    imageName: image,
    isServerless: true,
  });
  const endpoint = await service.rest.endpoints.create({
    name,
    templateId: template.id,
    workersMin: workers,
    workersMax: workers,
    flashboot: true,
    idleTimeout: 3600,
  });
  return endpoint.id;
}

/** Jobs in an endpoint's queue, by its /health. */
export async function inQueue(svc: BenchService, endpointId: string): Promise<number> {
  const jobs = new JobClient({ apiKey: BENCH_API_KEY, endpointId, baseUrl: `${svc.ready.queueUrl}/v2` });
  try {
    return (await jobs.health()).jobs.inQueue;
  } finally {
    await jobs.close();
  }
}

/** Waits until the endpoint reports `count` idle workers (started, polling for jobs). */
export async function waitForIdleWorkers(
  service: BenchService,
  endpointId: string,
  count: number,
  timeoutMs = 60_000,
): Promise<void> {
  const jobs = new JobClient({ apiKey: BENCH_API_KEY, endpointId, baseUrl: `${service.ready.queueUrl}/v2` });
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const health = await jobs.health();
      if (health.workers.idle >= count) return;
      if (Date.now() > deadline) {
        throw new Error(
          `endpoint ${endpointId}: ${health.workers.idle}/${count} workers idle after ${timeoutMs} ms`,
        );
      }
      await sleep(100);
    }
  } finally {
    await jobs.close();
  }
}

/** A tool's command line split at `--`: its own options before, Node flags for the service after. */
export function splitNodeFlags(argv: readonly string[]): { args: string[]; nodeFlags: string[] } {
  const dash = argv.indexOf("--");
  return dash >= 0
    ? { args: argv.slice(0, dash), nodeFlags: argv.slice(dash + 1) }
    : { args: [...argv], nodeFlags: [] };
}
