/*
 * The job API's policy: the tables the real service publishes and this service applies. They are
 * rules of the service, not of the wire (the SDK validates against the schemas' bounds in
 * sdk/schemas/job.ts and never needs these), so they live here. Tunables that override them for a
 * running service (tests, the bench) are in config.ts.
 */

/** Limits of the job API, in milliseconds unless named otherwise. */
export const JOB_POLICY = {
  /** Largest /run body. */
  runBodyBytes: 10 * 1024 * 1024,
  /** Largest /runsync body. */
  runsyncBodyBytes: 20 * 1024 * 1024,
  /** Largest stream chunk a client receives; larger outputs are split. */
  streamChunkBytes: 1024 * 1024,
  /**
   * Most chunk JSON one /stream reply carries (always one chunk at least): four of the largest chunks.
   * A job may buffer hundreds; handed out at once they made one reply of that size, past an SDK
   * client's maxReplyBytes. The rest waits for the next poll, answered at once while chunks remain.
   */
  streamReplyBytes: 4 * 1024 * 1024,
  /**
   * Most characters of a failed job's error the service keeps; the rest is cut, saying so. An output
   * is counted against the memory budget and spilled to the store; an error is neither, so a worker's
   * error of its whole 100 MB body stayed in memory for the job's retention.
   */
  errorChars: 1024 * 1024,
  /** Results are kept this long after an async (/run) job ends. */
  retentionAsyncMs: 30 * 60_000,
  /** Results are kept this long after a sync (/runsync) job ends. */
  retentionSyncMs: 60_000,
  /** A webhook is retried this many times after the first attempt... */
  webhookRetries: 2,
  /** ...this far apart. */
  webhookSpacingMs: 10_000,
} as const;

/** Rate limits per endpoint and operation: requests per window, and requests in flight at once. */
export interface RateLimit {
  requests: number;
  windowMs: number;
  /** null: no concurrency limit */
  concurrent: number | null;
}

export const RATE_LIMITED_OPERATIONS = [
  "runsync",
  "run",
  "status",
  "status-sync",
  "stream",
  "cancel",
  "purge-queue",
  "openai",
  "requests",
] as const;
export type RateLimitedOperation = (typeof RATE_LIMITED_OPERATIONS)[number];

/** The spec's table; the effective rate is max(base, running workers x requests per worker). */
export const RATE_LIMITS: Record<RateLimitedOperation, RateLimit> = {
  runsync: { requests: 2000, windowMs: 10_000, concurrent: 400 },
  run: { requests: 1000, windowMs: 10_000, concurrent: 200 },
  status: { requests: 2000, windowMs: 10_000, concurrent: 400 },
  // Not in the spec's table: /status's numbers, counted apart, so calls held up to `wait` (waitFor's)
  // never take the slots of /status polls.
  "status-sync": { requests: 2000, windowMs: 10_000, concurrent: 400 },
  stream: { requests: 2000, windowMs: 10_000, concurrent: 400 },
  cancel: { requests: 100, windowMs: 10_000, concurrent: 20 },
  "purge-queue": { requests: 2, windowMs: 10_000, concurrent: null },
  openai: { requests: 2000, windowMs: 10_000, concurrent: 400 },
  requests: { requests: 10, windowMs: 10_000, concurrent: 2 },
};
