import { setTimeout as sleep } from "node:timers/promises";
import type { HandlerContext, WorkerJob } from "../runtime/types";

/** runpodkit/sleep: waits `input.ms` (or `input.seconds`), stoppable, then answers how long it slept. */
export async function handler(job: WorkerJob, context: HandlerContext): Promise<unknown> {
  const input = (job.input ?? {}) as { ms?: number; seconds?: number };
  const ms = input.ms ?? (input.seconds ?? 1) * 1000;
  await sleep(ms, undefined, { signal: context.signal });
  return { slept: ms };
}
