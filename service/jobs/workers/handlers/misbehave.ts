import { setTimeout as sleep } from "node:timers/promises";
import type { HandlerContext, WorkerJob } from "../runtime/types";

/**
 * runpodkit/misbehave: a handler that goes wrong on purpose, to show the service survives it.
 * `input.mode`: "hang" never returns (and ignores stop), "spin" loops on the CPU forever, "crash"
 * kills its own process mid-job, "progress" reports `input.steps` progress values, waits
 * `input.holdMs` (stoppable), then returns.
 */
export async function handler(job: WorkerJob, context: HandlerContext): Promise<unknown> {
  const input = (job.input ?? {}) as { mode?: string; steps?: number; code?: number; holdMs?: number };
  switch (input.mode) {
    case "hang":
      return new Promise(() => {});
    case "spin":
      for (;;) {
        // Blocks the event loop: only killing the process ends it.
      }
    case "crash":
      process.exit(input.code ?? 13);
      break;
    case "progress": {
      for (let step = 1; step <= (input.steps ?? 3); step++) context.progress({ step });
      if (input.holdMs) await sleep(input.holdMs, undefined, { signal: context.signal });
      return { steps: input.steps ?? 3 };
    }
  }
  return { mode: input.mode ?? null };
}
