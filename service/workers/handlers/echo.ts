import type { WorkerJob } from "../runtime/types";

/** runpodkit/echo: the output is the input. */
export async function handler(job: WorkerJob): Promise<unknown> {
  return job.input;
}
