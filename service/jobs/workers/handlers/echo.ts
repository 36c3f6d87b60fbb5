import type { WorkerJob } from "../runtime/types";

/** runpodkit/echo: the output is the input. */
export async function handler(job: WorkerJob): Promise<unknown> {
  return job.input;
}

/** Echo is safe to run concurrently: a worker holds several jobs at once (batch takes). */
export const config = { concurrency: 8 };
