/**
 * 1b. End-to-end jobs per second: /run, the built-in no-op handler (runpodkit/echo) in N worker
 * processes of the project's worker runtime speaking the worker protocol over HTTP, COMPLETED seen
 * by the client. One service and endpoint per worker count; a warm-up run, then the measured runs.
 */

import { JobClient } from "../../sdk/jobs";
import { built } from "../lib/build";
import { type Figure, figure } from "../lib/figures";
import { Child } from "../lib/ipc";
import { ClientReady, E2eResult } from "../lib/protocol";
import {
  BENCH_API_KEY,
  createQueueEndpoint,
  startService,
  tempDataDir,
  waitForIdleWorkers,
} from "../lib/servers";

export interface EndToEndRow {
  workers: number;
  jobsPerRun: number;
  jobsPerSec: Figure;
  /** /run submissions per second while the workers drained (same runs). */
  submitPerSec: Figure;
  failed: number;
  sampleWrong: number;
}

export interface EndToEndOptions {
  runs: number;
  workerCounts: number[];
  /** Jobs per measured run for a worker count. */
  jobsFor: (workers: number) => number;
  concurrency: number;
  log: (line: string) => void;
}

export async function endToEnd(options: EndToEndOptions): Promise<EndToEndRow[]> {
  const rows: EndToEndRow[] = [];
  for (const workers of options.workerCounts) {
    const data = await tempDataDir();
    const svc = await startService({ data: data.file });
    const client = new Child(built("bench/clients/e2e"), [], { env: { BENCH_API_KEY } });
    const health = (endpointId: string) =>
      new JobClient({ apiKey: BENCH_API_KEY, endpointId, baseUrl: `${svc.ready.queueUrl}/v2` });
    try {
      await client.ready(ClientReady);
      const endpointId = await createQueueEndpoint(svc, `e2e-${workers}`, "runpodkit/echo", workers);
      await waitForIdleWorkers(svc, endpointId, workers);
      const jobs = options.jobsFor(workers);
      const rates: number[] = [];
      const submits: number[] = [];
      let failed = 0;
      let sampleWrong = 0;
      for (let run = 0; run <= options.runs; run++) {
        const reader = health(endpointId);
        const before = (await reader.health()).jobs.completed;
        await reader.close();
        const size = run === 0 ? Math.ceil(jobs / 4) : jobs;
        const result = await client.call(
          "run",
          {
            queueUrl: svc.ready.queueUrl,
            endpointId,
            jobs: size,
            concurrency: options.concurrency,
            completedBefore: before,
            sample: 100,
          },
          E2eResult,
        );
        if (result.submitErrors > 0)
          throw new Error(`e2e: ${result.submitErrors} /run failed: ${result.firstError}`);
        if (run === 0) continue; // warm-up
        const rate = (result.jobs / result.elapsedMs) * 1000;
        rates.push(rate);
        submits.push((result.jobs / result.submittedMs) * 1000);
        failed += result.failed;
        sampleWrong += result.sampleWrong;
        options.log(
          `  ${workers} worker(s): ${rate.toFixed(0)} jobs/s (${result.jobs} jobs in ${result.elapsedMs.toFixed(0)} ms)`,
        );
      }
      rows.push({
        workers,
        jobsPerRun: jobs,
        jobsPerSec: figure(rates, "jobs/s", 0),
        submitPerSec: figure(submits, "/run per s", 0),
        failed,
        sampleWrong,
      });
    } finally {
      await client.stop();
      await svc.close();
      await data.remove();
    }
  }
  return rows;
}
