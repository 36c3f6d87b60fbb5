/**
 * 1b. End-to-end jobs per second: /run, the built-in no-op handler (runpodkit/echo) in N worker
 * processes of the project's worker runtime speaking the worker protocol over HTTP, COMPLETED seen
 * by the client. One service per configuration (endpoints x workers each; the jobs spread over the
 * endpoints round-robin); a warm-up run, then the measured runs. The worker and endpoint curves are
 * this suite over a list of configurations.
 */

import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { built } from "../lib/build";
import { type Figure, figure } from "../lib/figures";
import { Child } from "../lib/ipc";
import { treeCpu } from "../lib/proc-cpu";
import { ClientReady, E2eResult } from "../lib/protocol";
import {
  BENCH_API_KEY,
  createQueueEndpoint,
  startService,
  tempDataDir,
  waitForIdleWorkers,
} from "../lib/servers";
import { round } from "../lib/stats";

export interface EndToEndRow {
  /** Workers in all (each endpoint has workers / endpoints of them). */
  workers: number;
  /** Endpoints the jobs were spread over (job i to endpoint i mod n). */
  endpoints: number;
  jobsPerRun: number;
  jobsPerSec: Figure;
  /** /run submissions per second while the workers drained (same runs). */
  submitPerSec: Figure;
  failed: number;
  sampleWrong: number;
  /**
   * CPU spent per job (user + system, microseconds) by the service process, by its worker processes
   * together, and by the client; with the rate 2 fully available cores would allow at that cost.
   * Unlike jobs/s these hardly depend on what else the machine runs.
   */
  cpuPerJobUs: { service: Figure; workers: Figure; client: Figure } | null;
  cpuBoundJobsPerSec: Figure | null;
  /**
   * CPU the service and its idle workers spend with no job at all, ms per second (2 s read before the
   * runs): the background cost (workers' polls and heartbeats) that a run's jobs share.
   */
  idleCpuMsPerSec: { service: number; workers: number } | null;
  /** Jobs in the warm-up run, and the CPU per job the service and its workers spent on it (us). */
  warmup?: { jobs: number; serviceUs: number | null; workersUs: number | null };
}

/** One measured configuration: `endpoints` endpoints with `workersPerEndpoint` workers each. */
export interface EndToEndPoint {
  endpoints: number;
  workersPerEndpoint: number;
}

export interface EndToEndOptions {
  runs: number;
  points: EndToEndPoint[];
  /** Jobs per measured run for a configuration. */
  jobsFor: (point: EndToEndPoint) => number;
  /**
   * Jobs in the warm-up run before the measured ones (at least a quarter of a run; `--e2e-warmup`).
   * The service and its workers start cold and V8 compiles through their first ~10,000 jobs, so a
   * short warm-up charges that one-time compiling to the cost per job (bench/README.md, "Warm-up").
   */
  warmupJobs: number;
  concurrency: number;
  log: (line: string) => void;
}

const cores = () => cpus().length;

export async function endToEnd(options: EndToEndOptions): Promise<EndToEndRow[]> {
  const rows: EndToEndRow[] = [];
  for (const point of options.points) {
    const workers = point.endpoints * point.workersPerEndpoint;
    const label =
      point.endpoints === 1
        ? `${workers} worker(s)`
        : `${point.endpoints} endpoints x ${point.workersPerEndpoint} worker(s)`;
    const data = await tempDataDir();
    const svc = await startService({ data: data.file });
    const client = new Child(built("bench/clients/e2e"), [], { env: { BENCH_API_KEY } });
    try {
      await client.ready(ClientReady);
      const endpointIds: string[] = [];
      for (let e = 0; e < point.endpoints; e++) {
        const name = `e2e-${point.endpoints}x${point.workersPerEndpoint}-${e}`;
        endpointIds.push(await createQueueEndpoint(svc, name, "runpodkit/echo", point.workersPerEndpoint));
      }
      for (const endpointId of endpointIds)
        await waitForIdleWorkers(svc, endpointId, point.workersPerEndpoint, 300_000);
      const idleBefore = treeCpu(svc.ready.pid);
      const idleStarted = performance.now();
      await sleep(2_000);
      const idleAfter = treeCpu(svc.ready.pid);
      const idleSec = (performance.now() - idleStarted) / 1000;
      const idleCpuMsPerSec =
        idleBefore && idleAfter
          ? {
              service: round((idleAfter.selfMs - idleBefore.selfMs) / idleSec, 1),
              workers: round((idleAfter.childrenMs - idleBefore.childrenMs) / idleSec, 1),
            }
          : null;
      if (idleCpuMsPerSec)
        options.log(
          `  ${label} idle: service ${idleCpuMsPerSec.service} ms/s, workers ${idleCpuMsPerSec.workers} ms/s of CPU`,
        );
      const jobs = options.jobsFor(point);
      const rates: number[] = [];
      const submits: number[] = [];
      const cpu = { service: [] as number[], workers: [] as number[], client: [] as number[] };
      let failed = 0;
      let sampleWrong = 0;
      let warmup: EndToEndRow["warmup"];
      for (let run = 0; run <= options.runs; run++) {
        const size = run === 0 ? Math.max(Math.ceil(jobs / 4), options.warmupJobs) : jobs;
        const cpuBefore = treeCpu(svc.ready.pid);
        const result = await client.call(
          "run",
          {
            queueUrl: svc.ready.queueUrl,
            endpointIds,
            jobs: size,
            concurrency: options.concurrency,
            sample: 100,
          },
          E2eResult,
        );
        if (result.submitErrors > 0)
          throw new Error(`e2e: ${result.submitErrors} /run failed: ${result.firstError}`);
        const cpuAfter = treeCpu(svc.ready.pid);
        if (run === 0) {
          warmup = {
            jobs: result.jobs,
            serviceUs:
              cpuBefore && cpuAfter
                ? round(((cpuAfter.selfMs - cpuBefore.selfMs) * 1000) / result.jobs, 0)
                : null,
            workersUs:
              cpuBefore && cpuAfter
                ? round(((cpuAfter.childrenMs - cpuBefore.childrenMs) * 1000) / result.jobs, 0)
                : null,
          };
          options.log(
            `  ${label} warm-up: ${result.jobs} jobs; CPU/job: service ${warmup.serviceUs} us, workers ${warmup.workersUs} us`,
          );
          continue;
        }
        if (cpuBefore && cpuAfter) {
          cpu.service.push(((cpuAfter.selfMs - cpuBefore.selfMs) * 1000) / result.jobs);
          cpu.workers.push(((cpuAfter.childrenMs - cpuBefore.childrenMs) * 1000) / result.jobs);
          cpu.client.push(result.cpuUs / result.jobs);
        }
        const rate = (result.jobs / result.elapsedMs) * 1000;
        rates.push(rate);
        submits.push((result.jobs / result.submittedMs) * 1000);
        failed += result.failed;
        sampleWrong += result.sampleWrong;
        options.log(
          `  ${label}: ${rate.toFixed(0)} jobs/s (${result.jobs} jobs in ${result.elapsedMs.toFixed(0)} ms); CPU/job: service ${cpu.service.at(-1)?.toFixed(0)} us, workers ${cpu.workers.at(-1)?.toFixed(0)} us, client ${cpu.client.at(-1)?.toFixed(0)} us`,
        );
      }
      rows.push({
        idleCpuMsPerSec,
        warmup,
        workers,
        endpoints: point.endpoints,
        jobsPerRun: jobs,
        jobsPerSec: figure(rates, "jobs/s", 0),
        submitPerSec: figure(submits, "/run per s", 0),
        failed,
        sampleWrong,
        cpuPerJobUs:
          cpu.service.length > 0
            ? {
                service: figure(cpu.service, "us/job", 0),
                workers: figure(cpu.workers, "us/job", 0),
                client: figure(cpu.client, "us/job", 0),
              }
            : null,
        cpuBoundJobsPerSec:
          cpu.service.length > 0
            ? figure(
                cpu.service.map(
                  (s, i) => (cores() * 1e6) / (s + (cpu.workers[i] ?? 0) + (cpu.client[i] ?? 0)),
                ),
                "jobs/s",
                0,
              )
            : null,
      });
    } finally {
      await client.stop();
      await svc.close();
      await data.remove();
    }
  }
  return rows;
}
