import type { HandlerContext, WorkerJob } from "../../service/jobs/workers/runtime";

/**
 * A handler module for the worker runtime: export `handler` and map an image to this file
 * (`npm run serve -- --handler acme/uppercase=examples/handlers/uppercase.ts` at the repository root). It reports progress
 * and answers the input text in capitals.
 */
export async function handler(job: WorkerJob, context: HandlerContext): Promise<unknown> {
  const { text = "" } = (job.input ?? {}) as { text?: string };
  context.progress({ received: text.length });
  return { text: text.toUpperCase() };
}
