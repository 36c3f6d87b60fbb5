/** The job a handler receives: what job-take delivered (id, input, and any pass-through keys). */
export interface WorkerJob {
  id: string;
  input: unknown;
  webhook?: string;
  s3Config?: { accessId: string; accessSecret: string; bucketName: string; endpointUrl: string };
  policy?: { executionTimeout?: number; lowPriority?: boolean; ttl?: number };
  [key: string]: unknown;
}

/** Given to the handler beside the job. */
export interface HandlerContext {
  /**
   * Aborted when the platform stops the job (cancel, timeout); the result is then not sent. Honour it
   * to stop (pass it on, or check it in loops): the job's slot is freed at once and the worker takes
   * new jobs, so a handler that ignores it runs on beside them (examples/handlers/README.md).
   */
  signal: AbortSignal;
  /**
   * Reports a progress value: /status shows it as `output` while the job runs. One post at a time,
   * the newest value next (values overtaken meanwhile are skipped; none after the handler is done).
   * A value JSON cannot carry (a BigInt, a circular reference) is not sent; the job's log says so
   * and the job goes on.
   */
  progress(value: unknown): void;
}

/**
 * A handler: returns a value (the job's output), or is a generator / async generator whose yields
 * stream out as chunks. Throwing fails the job. Returning `{error: ...}` fails it with that error;
 * `{refresh_worker: true, ...}` asks for a fresh worker after this job.
 */
export type Handler = (
  job: WorkerJob,
  context: HandlerContext,
) => unknown | Promise<unknown> | AsyncIterable<unknown> | Iterable<unknown>;

export interface StartOptions {
  handler: Handler;
  /**
   * Jobs run at once (default 1), or a function of the current value, asked before each take: a
   * number of at least 1 (a fraction is rounded down, above 1000 it is 1000). Anything else, or a
   * function that throws, keeps the current value and is logged once.
   */
  concurrency?: (number | ((current: number) => number)) | undefined;
  /** For streaming handlers: the final output is the list of all chunks (default: []). */
  returnAggregateStream?: boolean | undefined;
  /** Replace this worker after every job (stopPod), then exit. */
  refreshWorker?: boolean | undefined;
}

/** The job-done body, as the real worker library sends it. */
export interface JobResultBody {
  output?: unknown;
  error?: unknown;
  stopPod?: boolean;
}
