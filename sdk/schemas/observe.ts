import { z } from "zod";
import { queryInt } from "./common";
import { JobStatus } from "./job";

/**
 * Wire schemas of the local service's read-only observation routes under /v2/{endpoint_id}: worker
 * logs, recent jobs, queue depth and workers over time, and workers (what `runpodkit logs` and the
 * console read). The real service's public material describes the lines its workers print
 * (docs/worker-protocol.md, section 6, "Logs"), not a logs API; each entry keeps those lines'
 * `requestId`, `level` and `message` and adds where and when.
 */

export const LogEntry = z.looseObject({
  seq: z.number().int(),
  time: z.string(),
  endpointId: z.string(),
  workerId: z.string(),
  requestId: z.string().nullable(),
  level: z.string(),
  stream: z.enum(["stdout", "stderr", "service"]),
  message: z.string(),
});
export type LogEntry = z.infer<typeof LogEntry>;

/** A time as ms since the epoch or an ISO 8601 string. */
const Instant = z.string().transform((value, ctx) => {
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (Number.isNaN(ms)) {
    ctx.addIssue({ code: "custom", message: "expected ms since the epoch or an ISO 8601 time" });
    return z.NEVER;
  }
  return ms;
});

/** Query of GET /v2/{endpoint_id}/logs. */
export const LogsQuery = z.object({
  worker: z.string().min(1).optional(),
  job: z.string().min(1).optional(),
  since: Instant.optional(),
  /** Entries after this seq (resume a read). */
  after: queryInt(0, Number.MAX_SAFE_INTEGER).optional(),
  /** Entries before this seq (page back: the first seq a reader has). */
  before: queryInt(0, Number.MAX_SAFE_INTEGER).optional(),
  /** The newest this many entries (default 1000). */
  limit: queryInt(1, 10_000).default(1000),
  /** Keep the reply open and send new entries as they come (chunked JSON lines). */
  follow: z
    .enum(["0", "1", "true", "false"])
    .optional()
    .transform((v) => v === "1" || v === "true"),
});
export type LogsQuery = z.infer<typeof LogsQuery>;

/** Query of GET /v2/{endpoint_id}/jobs. */
export const RecentJobsQuery = z.object({
  limit: queryInt(1, 500).default(50),
  /** Only this job (the console's job page), instead of the newest `limit`. */
  job: z.string().min(1).max(200).optional(),
  /** The page after this job (the last one of the page before: a cursor that new jobs do not move). */
  before: z.string().min(1).max(200).optional(),
  /**
   * Leave out input, output, error and stream: the timelines only. A list of 50 jobs with
   * megabyte inputs is otherwise tens of megabytes, read again at every refresh.
   */
  summary: z
    .enum(["0", "1", "true", "false"])
    .optional()
    .transform((v) => v === "1" || v === "true"),
  /**
   * With the job's summary, its buffered stream chunks from this stream position on (`stream`): a page
   * watching a running job reads the chunks it has not shown, not its input and every chunk again.
   */
  streamFrom: queryInt(0, Number.MAX_SAFE_INTEGER).optional(),
});
export type RecentJobsQuery = z.infer<typeof RecentJobsQuery>;

/** One job as the console shows it: its timeline (ms since the epoch) and what it carried. */
export const RecentJob = z.looseObject({
  id: z.string(),
  status: JobStatus,
  createdAt: z.number(),
  queuedAt: z.number(),
  startedAt: z.number().nullable(),
  completedAt: z.number().nullable(),
  delayTime: z.number().optional(),
  executionTime: z.number().optional(),
  workerId: z.string().nullable(),
  retries: z.number().int(),
  /** input and stream are left out of a summary (`?summary=1`), with output and error. */
  input: z.unknown().optional(),
  output: z.unknown().optional(),
  error: z.string().optional(),
  /**
   * Stream chunks buffered and not yet drained by /stream (reading them here does not drain them); in
   * a summary, only with `streamFrom`, and then those from that position on.
   */
  stream: z.array(z.unknown()).optional(),
  /** The stream position of the first chunk still buffered (those before it were drained by /stream). */
  streamAt: z.number().int().optional(),
  /**
   * How many those chunks are, in a summary too: with status and retries, what can still change of a
   * finished job (a client drains its stream), so a page showing one reads the summary, not the job.
   */
  streamChunks: z.number().int().optional(),
});
export type RecentJob = z.infer<typeof RecentJob>;

export const RecentJobsReply = z.looseObject({ jobs: z.array(RecentJob) });

/** One worker of the endpoint (live or recently stopped). */
export const WorkerInfo = z.looseObject({
  id: z.string(),
  desiredStatus: z.enum(["RUNNING", "EXITED", "TERMINATED"]),
  state: z.enum(["initializing", "idle", "running", "unhealthy"]),
  managed: z.boolean(),
  imageName: z.string(),
  createdAt: z.number(),
  lastStartedAt: z.number().nullable(),
  readyAt: z.number().nullable(),
  coldStartMs: z.number().nullable(),
  jobsRun: z.number().int(),
});
export type WorkerInfo = z.infer<typeof WorkerInfo>;

export const WorkersReply = z.looseObject({ workers: z.array(WorkerInfo) });

/** Query of GET /v2/{endpoint_id}/metrics. */
export const MetricsQuery = z.object({
  /**
   * Only the points recorded at or after this time (ms since the epoch), then now: a reader that has
   * the older ones (the console's chart, every second) reads what is new, not all 600 again.
   */
  since: queryInt(0, Number.MAX_SAFE_INTEGER).optional(),
});
export type MetricsQuery = z.infer<typeof MetricsQuery>;

/** Reply of GET /v2/{endpoint_id}/metrics: a point per change, oldest first, the last one being now. */
export const MetricsReply = z.looseObject({
  points: z.array(
    z.looseObject({ t: z.number(), inQueue: z.number(), inProgress: z.number(), workers: z.number() }),
  ),
});
export type MetricsReply = z.infer<typeof MetricsReply>;
