/**
 * End-to-end client (its own process): submits `jobs` no-op jobs with /run through the SDK, 64 in
 * flight, and watches /health until all of them are COMPLETED; then checks a sample of them by
 * /status (COMPLETED, output equal to the input). Time runs from the first submission to the health
 * poll that saw the last completion (polled every few ms, so the error is a few ms per run).
 */

import { setTimeout as sleep } from "node:timers/promises";
import { isDeepStrictEqual } from "node:util";
import { JobClient } from "../../sdk/jobs";
import { serveIpc } from "../lib/ipc";
import { inParallel } from "../lib/pool";
import { E2eArgs, type E2eResult } from "../lib/protocol";

const POLL_MS = 5;

async function runE2e(raw: unknown): Promise<E2eResult> {
  const args = E2eArgs.parse(raw);
  const apiKey = process.env.BENCH_API_KEY ?? "";
  const client = new JobClient({
    apiKey,
    endpointId: args.endpointId,
    baseUrl: `${args.queueUrl}/v2`,
    connections: args.concurrency + 2,
  });
  const ids: string[] = new Array(args.jobs);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const submitting = inParallel(args.jobs, args.concurrency, async (i) => {
    ids[i] = (await client.run({ input: { n: i } })).id;
  });
  let submittedMs = 0;
  void submitting.then(() => {
    submittedMs = performance.now() - started;
  });
  let completed = 0;
  let failed = 0;
  const target = args.completedBefore + args.jobs;
  for (;;) {
    const health = await client.health();
    completed = health.jobs.completed;
    failed = health.jobs.failed;
    if (completed + failed >= target) break;
    if (performance.now() - started > 120_000)
      throw new Error(`only ${completed}/${target} completed after 120 s`);
    await sleep(POLL_MS);
  }
  const elapsedMs = performance.now() - started;
  const submit = await submitting;
  const used = process.cpuUsage(cpu);
  let wrong = 0;
  const step = Math.max(1, Math.floor(args.jobs / Math.max(1, args.sample)));
  for (let i = 0; i < args.jobs && args.sample > 0; i += step) {
    const id = ids[i];
    const status = id ? await client.status(id) : undefined;
    if (status?.status !== "COMPLETED" || !isDeepStrictEqual(status.output, { n: i })) wrong++;
  }
  await client.close();
  return {
    jobs: args.jobs,
    elapsedMs,
    submittedMs,
    failed,
    submitErrors: submit.errors,
    ...(submit.firstError ? { firstError: submit.firstError } : {}),
    sampleWrong: wrong,
    cpuUs: used.user + used.system,
  };
}

serveIpc({ run: runE2e }, { pid: process.pid });
