import type { WorkerJob } from "../runtime/types";

/**
 * runpodkit/fail: fails the job with `input.message`. By default the handler throws; with
 * `input.as = "result"` it returns `{error}` instead (both end FAILED).
 */
export async function handler(job: WorkerJob): Promise<unknown> {
  const input = (job.input ?? {}) as { message?: string; as?: string };
  const message = input.message ?? "failed on purpose";
  if (input.as === "result") return { error: message };
  throw new Error(message);
}
