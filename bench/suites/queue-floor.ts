/**
 * The queue floor of the end-to-end suite: its client and the project's worker runtime (runpodkit/echo
 * in N worker processes), run against the bare server's `queue` endpoint (bare-queue.ts) instead of
 * the service. The requests a job costs are the same — /run, the worker's job-take-batch long-polls
 * and job-done, the client's /health — but nothing stands behind them, so the bare server's CPU per
 * job is what the protocol's exchanges alone cost this machine, measured in the same run as the
 * service's (the service CPU target, bench/README.md).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { workerWebhooks } from "../../service/jobs/workers/pool";
import { built } from "../lib/build";
import { type Figure, figure } from "../lib/figures";
import { Child } from "../lib/ipc";
import { treeCpu } from "../lib/proc-cpu";
import { ClientReady, E2eResult, QueueRequests } from "../lib/protocol";
import { BENCH_API_KEY, startBare } from "../lib/servers";

export interface QueueFloorResult {
  workers: number;
  jobsPerRun: number;
  jobsPerSec: Figure;
  /** CPU per job (user + system, us) of the bare server, of the workers together, of the client. */
  cpuPerJobUs: { server: Figure; workers: Figure; client: Figure };
  /** Requests per job the bare server answered, by route (run, job-take-batch, job-done, health...), median of the runs. */
  requestsPerJob: Record<string, number>;
}

export interface QueueFloorOptions {
  workers: number;
  runs: number;
  jobs: number;
  /** Jobs in the warm-up run before the measured ones (at least a quarter of a run), as end-to-end. */
  warmupJobs: number;
  concurrency: number;
  log: (line: string) => void;
}

/** A worker process of the runtime, as the service's pool starts one, pointed at the bare server. */
function startWorker(url: string, index: number): ChildProcess {
  return spawn(
    process.execPath,
    [built("service/jobs/workers/runtime/main"), built("service/jobs/workers/handlers/echo")],
    {
      env: {
        ...process.env,
        RUNPOD_POD_ID: `floor-${index}`,
        ...workerWebhooks(`${url}/v2/queue`),
        RUNPOD_AI_API_KEY: BENCH_API_KEY,
      },
      // Its log lines go nowhere (the service reads them from a pipe: one of its rules). The IPC
      // channel ends the worker with the bench, as the service's ends its own.
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    },
  );
}

const cpuMs = (pid: number | undefined) => (pid === undefined ? 0 : (treeCpu(pid)?.selfMs ?? 0));

export async function queueFloor(options: QueueFloorOptions): Promise<QueueFloorResult> {
  const bare = await startBare();
  const workers = Array.from({ length: options.workers }, (_, i) => startWorker(bare.url, i));
  const client = new Child(built("bench/clients/e2e"), [], { env: { BENCH_API_KEY } });
  try {
    await client.ready(ClientReady);
    const server: number[] = [];
    const workerCpu: number[] = [];
    const clientCpu: number[] = [];
    const rates: number[] = [];
    const workersMs = () => workers.reduce((sum, w) => sum + cpuMs(w.pid), 0);
    const requests = async () => (await bare.child.call("queueRequests", {}, QueueRequests)).byRoute;
    const perJob = new Map<string, number[]>();
    for (let run = 0; run <= options.runs; run++) {
      const size = run === 0 ? Math.max(Math.ceil(options.jobs / 4), options.warmupJobs) : options.jobs;
      const before = { server: cpuMs(bare.child.pid), workers: workersMs(), requests: await requests() };
      const result = await client.call(
        "run",
        {
          queueUrl: bare.url,
          endpointIds: ["queue"],
          jobs: size,
          concurrency: options.concurrency,
          sample: 100,
        },
        E2eResult,
      );
      if (result.submitErrors > 0 || result.sampleWrong > 0)
        throw new Error(
          `queue floor: ${result.submitErrors} /run failed, ${result.sampleWrong} of the sample wrong: ${result.firstError ?? ""}`,
        );
      if (run === 0) continue;
      for (const [route, count] of Object.entries(await requests())) {
        const list = perJob.get(route) ?? [];
        list.push((count - (before.requests[route] ?? 0)) / result.jobs);
        perJob.set(route, list);
      }
      server.push(((cpuMs(bare.child.pid) - before.server) * 1000) / result.jobs);
      workerCpu.push(((workersMs() - before.workers) * 1000) / result.jobs);
      clientCpu.push(result.cpuUs / result.jobs);
      rates.push((result.jobs / result.elapsedMs) * 1000);
      const routes = [...perJob].map(([route, runs]) => `${route} ${runs.at(-1)?.toFixed(3)}`).join(", ");
      options.log(
        `  queue floor, ${options.workers} workers: ${rates.at(-1)?.toFixed(0)} jobs/s; CPU/job: bare server ${server.at(-1)?.toFixed(0)} us, workers ${workerCpu.at(-1)?.toFixed(0)} us, client ${clientCpu.at(-1)?.toFixed(0)} us; requests/job: ${routes}`,
      );
    }
    return {
      workers: options.workers,
      jobsPerRun: options.jobs,
      jobsPerSec: figure(rates, "jobs/s", 0),
      cpuPerJobUs: {
        server: figure(server, "us/job", 1),
        workers: figure(workerCpu, "us/job", 0),
        client: figure(clientCpu, "us/job", 0),
      },
      requestsPerJob: Object.fromEntries(
        [...perJob].map(([route, runs]) => [route, figure(runs, "per job", 3).median]),
      ),
    };
  } finally {
    await client.stop();
    await Promise.all(
      workers.map(async (worker) => {
        if (worker.exitCode !== null || worker.signalCode !== null) return;
        const exited = once(worker, "exit");
        worker.kill("SIGKILL");
        await exited;
      }),
    );
    await bare.close();
  }
}
