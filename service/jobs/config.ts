import { JOB_LIMITS } from "../../sdk/schemas/job";
import { DEFAULT_RATE_LIMIT_OPTIONS, type RateLimitOptions } from "./client/rate-limit";
import { DEFAULT_LOG_LIMITS, type LogLimits } from "./logs/log-book";
import { JOB_POLICY } from "./policy";
import { DEFAULT_WEBHOOK_OPTIONS, type WebhookOptions } from "./webhooks/webhooks";

/** Tunables of the job plane; every duration runs on the service's clock. */
export interface JobPlaneConfig {
  /** Image name -> handler module path or command line (see workers/launch.ts). */
  handlers: Record<string, string>;
  /** Cold start of a worker, ms; with FLASHBOOT; factor when the endpoint's model is cached. */
  coldStartMs: number;
  flashBootColdStartMs: number;
  cachedModelFactor: number;
  /** Hold of job-take / job-stop long-polls with nothing to give (< 90 s), ms. */
  pollHoldMs: number;
  /** Hold of /stream when no chunk is buffered, ms (the SDK's stream polls allow JOB_LIMITS.streamHold). */
  streamHoldMs: number;
  /** Most chunk JSON one /stream reply hands out, bytes (JOB_POLICY.streamReplyBytes). */
  streamReplyBytes: number;
  /**
   * Time a worker has to stop a cancelled or timed-out job, ms. Past it, a worker that still reports
   * the job in a ping, or has not pinged for heartbeatGraceMs, is killed and replaced.
   */
  stopGraceMs: number;
  /** While a worker still holds a job it was told to stop, the stop is sent again this often, ms. */
  stopResendMs: number;
  /** A worker that has not pinged for this long is silent, ms; null: 3 ping intervals. */
  heartbeatGraceMs: number | null;
  /** After SIGTERM, time before SIGKILL, ms. */
  killGraceMs: number;
  /**
   * A worker whose process has run this long without calling the service (its handler module still
   * loading: a top-level await that never settles) is named in its endpoint's /health, ms.
   */
  slowStartMs: number;
  /**
   * A job whose worker was lost (or that ran when the service died) is requeued until requeued this
   * often since its submission or its client's last /retry (Job.lostRetries); then FAILED.
   */
  maxRetries: number;
  /** Scaler evaluation period, ms. */
  scalerIntervalMs: number;
  /**
   * Worker processes the service runs at once, over every endpoint and account (starting ones
   * included). workersMin and workersMax have no bound on the wire (the real service's quota is not
   * described), and each worker is a process on this machine: past this bound, further workers are
   * not started and jobs wait IN_QUEUE until one stops.
   */
  maxWorkers: number;
  /** Deletion of expired results, period in ms. */
  sweepIntervalMs: number;
  /** How often running workers' time is written to the billing record (a killed service loses at most this). */
  usageCheckpointMs: number;
  /** Finished jobs kept in memory for fast status reads. */
  recentCacheSize: number;
  /**
   * Queued jobs of an endpoint held in memory; /run's jobs behind them wait in the store only and are
   * read back in queue order (a deep queue costs ~40 bytes of memory a job). Their ttl is enforced by
   * the sweep (sweepIntervalMs) and on every read.
   */
  hotQueuedPerEndpoint: number;
  /** Ping interval given to workers, ms. */
  pingIntervalMs: number;
  /** A hand-run worker silent this long is gone, ms. */
  externalWorkerTimeoutMs: number;
  /** Largest job-done / job-stream body, bytes. */
  workerBodyLimit: number;
  /**
   * The hot routes (/run, job-take, job-take-batch, job-done) served by plain node:http handlers in
   * front of Fastify (http/fast-routes.ts); false: every request through Fastify (A/B measurements).
   */
  fastPath: boolean;
  /** Worker processes' stdout/stderr are always captured into their logs; "inherit" also echoes them to the service's stderr. */
  workerOutput: "inherit" | "ignore";
  /**
   * With workerOutput "inherit": bytes a second of each worker's lines echoed to the service's stderr
   * (a second's worth at once). Past it lines are not echoed, and a one-line note says how many were
   * not; the worker's logs keep them all (within `logs`). A handler printing in a tight loop wrote
   * tens of MB a second to the service's terminal.
   */
  workerEchoBytesPerSecond: number;
  /**
   * Resident memory one worker may use, bytes: its whole process group (the handler and what it
   * started), read from /proc every memoryWatchMs (Linux only); a handler module's V8 heap is bounded
   * to it too (--max-old-space-size). Past it the worker is killed and the jobs it held end FAILED,
   * not retried, naming this setting. Without it a leak grew until V8's own limit (JS heap, then 3
   * retries) or the kernel's OOM killer (a Buffer), which may pick any process. null: no bound.
   */
  workerMemoryBytes: number | null;
  /** How often workers' resident memory is read, ms. */
  memoryWatchMs: number;
  /** How many captured lines are kept (ring buffers per worker and per endpoint, in memory). */
  logs: LogLimits;
  /** Address workers use to reach the service; default: the address it listens on. */
  workerBaseUrl: string | null;
  /** Jobs an endpoint may have in its queue; past it /run and /runsync answer 429. */
  maxQueuedPerEndpoint: number;
  /** Service-wide bound of job input bytes held in memory; past it /run and /runsync answer 503. */
  memoryBudgetBytes: number;
  /** Inputs larger than this live in the store, not in memory, while they wait (read back when taken). */
  spillInputBytes: number;
  /** Outputs larger than this (JSON) live in the store once written, not in memory (read back when asked for). */
  spillOutputBytes: number;
  rateLimits: RateLimitOptions;
  webhooks: WebhookOptions;
}

export const DEFAULT_JOB_PLANE_CONFIG: JobPlaneConfig = {
  handlers: {},
  coldStartMs: 1_000,
  flashBootColdStartMs: 100,
  cachedModelFactor: 0.5,
  pollHoldMs: 20_000,
  // Under the official Python client's 10 s read timeout (runner.py), which an answer at 10 s raced.
  streamHoldMs: JOB_LIMITS.streamHold.max - 1_000,
  streamReplyBytes: JOB_POLICY.streamReplyBytes,
  stopGraceMs: 10_000,
  stopResendMs: 1_000,
  heartbeatGraceMs: null,
  killGraceMs: 5_000,
  slowStartMs: 60_000,
  maxRetries: 3,
  scalerIntervalMs: 1_000,
  maxWorkers: 64,
  sweepIntervalMs: 5_000,
  usageCheckpointMs: 60_000,
  recentCacheSize: 10_000,
  hotQueuedPerEndpoint: 10_000,
  pingIntervalMs: 10_000,
  externalWorkerTimeoutMs: 60_000,
  workerBodyLimit: 5 * JOB_POLICY.runsyncBodyBytes,
  fastPath: true,
  workerOutput: "inherit",
  workerEchoBytesPerSecond: 64 * 1024,
  workerMemoryBytes: 4 * 1024 * 1024 * 1024,
  memoryWatchMs: 1_000,
  logs: DEFAULT_LOG_LIMITS,
  workerBaseUrl: null,
  maxQueuedPerEndpoint: 100_000,
  memoryBudgetBytes: 256 * 1024 * 1024,
  spillInputBytes: 64 * 1024,
  spillOutputBytes: 1024,
  rateLimits: DEFAULT_RATE_LIMIT_OPTIONS,
  webhooks: DEFAULT_WEBHOOK_OPTIONS,
};
