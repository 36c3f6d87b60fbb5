/**
 * End-to-end client (its own process): submits `jobs` no-op jobs with /run through the SDK, 64 in
 * flight, job i to endpoint i mod n, and watches /health until all of them are COMPLETED; then checks
 * a sample of them by /status (COMPLETED, output equal to the input). Time runs from the first
 * submission to the health poll that saw the last completion. Endpoints are watched one after the
 * other (each polled every few ms until done), so with many endpoints the polling stays one request
 * at a time and the error is a few ms plus one /health per endpoint.
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
  const n = args.endpointIds.length;
  const clients = args.endpointIds.map(
    (endpointId) =>
      new JobClient({
        apiKey,
        endpointId,
        baseUrl: `${args.queueUrl}/v2`,
        connections: Math.ceil(args.concurrency / n) + 2,
      }),
  );
  const client = (i: number) => clients[i % n] as JobClient;
  // Health counts are cumulative per endpoint: what each will have once this run's jobs are done.
  const targets: number[] = [];
  for (const [e, c] of clients.entries()) {
    const mine = Math.floor(args.jobs / n) + (e < args.jobs % n ? 1 : 0);
    const health = await c.health();
    targets.push(health.jobs.completed + health.jobs.failed + mine);
  }
  const ids: string[] = new Array(args.jobs);
  const cpu = process.cpuUsage();
  const started = performance.now();
  const submitting = inParallel(args.jobs, args.concurrency, async (i) => {
    ids[i] = (await client(i).run({ input: { n: i } })).id;
  });
  let submittedMs = 0;
  const submitted: { result: Awaited<typeof submitting> | null } = { result: null };
  void submitting.then((result) => {
    submittedMs = performance.now() - started;
    submitted.result = result;
  });
  let failed = 0;
  for (const [e, c] of clients.entries()) {
    const target = targets[e] ?? 0;
    for (;;) {
      const health = await c.health();
      if (health.jobs.completed + health.jobs.failed >= target) {
        failed += health.jobs.failed;
        break;
      }
      // A refused /run never completes: say so now, with the refusal, rather than time out.
      const refused = submitted.result;
      if (refused && refused.errors > 0)
        throw new Error(`e2e: ${refused.errors} /run failed: ${refused.firstError}`);
      if (performance.now() - started > 180_000)
        throw new Error(
          `endpoint ${args.endpointIds[e]}: ${health.jobs.completed}/${target} completed after 180 s`,
        );
      await sleep(POLL_MS);
    }
  }
  const elapsedMs = performance.now() - started;
  const submit = await submitting;
  const used = process.cpuUsage(cpu);
  let wrong = 0;
  const step = Math.max(1, Math.floor(args.jobs / Math.max(1, args.sample)));
  for (let i = 0; i < args.jobs && args.sample > 0; i += step) {
    const id = ids[i];
    const status = id ? await client(i).status(id) : undefined;
    if (status?.status !== "COMPLETED" || !isDeepStrictEqual(status.output, { n: i })) wrong++;
  }
  await Promise.all(clients.map((c) => c.close()));
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
