import { z } from "zod";

/**
 * Wire schemas of the job API (/v2/{endpoint_id}), shared by the service (validation, replies) and
 * the SDK (request validation, reply parsing). Replies are parsed loosely: the real service adds fields.
 */

export const JOB_STATUSES = [
  "IN_QUEUE",
  "IN_PROGRESS",
  "COMPLETED",
  "FAILED",
  "CANCELLED",
  "TIMED_OUT",
] as const;
export const JobStatus = z.enum(JOB_STATUSES);
export type JobStatus = z.infer<typeof JobStatus>;

/** Statuses after which a job never changes again (unless retried). */
export const TERMINAL_JOB_STATUSES: ReadonlySet<JobStatus> = new Set([
  "COMPLETED",
  "FAILED",
  "CANCELLED",
  "TIMED_OUT",
]);
export const isTerminalJobStatus = (status: string): boolean =>
  TERMINAL_JOB_STATUSES.has(status as JobStatus);

/** Limits of the job API, in milliseconds unless named otherwise. */
export const JOB_LIMITS = {
  runsyncWait: { min: 1_000, max: 300_000, default: 90_000 },
  executionTimeout: { min: 5_000, max: 7 * 24 * 3_600_000, default: 600_000 },
  ttl: { min: 10_000, max: 7 * 24 * 3_600_000, default: 86_400_000 },
  runBodyBytes: 10 * 1024 * 1024,
  runsyncBodyBytes: 20 * 1024 * 1024,
  streamChunkBytes: 1024 * 1024,
} as const;

export const JobPolicy = z.object({
  executionTimeout: z
    .int()
    .min(JOB_LIMITS.executionTimeout.min)
    .max(JOB_LIMITS.executionTimeout.max)
    .optional(),
  lowPriority: z.boolean().optional(),
  ttl: z.int().min(JOB_LIMITS.ttl.min).max(JOB_LIMITS.ttl.max).optional(),
});
export type JobPolicy = z.infer<typeof JobPolicy>;

export const S3Config = z.object({
  accessId: z.string().min(1),
  accessSecret: z.string().min(1),
  bucketName: z.string().min(1),
  endpointUrl: z.url(),
});
export type S3Config = z.infer<typeof S3Config>;

/** Body of POST /run and /runsync. `input` is the handler's own object. */
export const JobSubmission = z.object({
  input: z.record(z.string(), z.unknown()),
  webhook: z.url().optional(),
  policy: JobPolicy.optional(),
  s3Config: S3Config.optional(),
});
export type JobSubmission = z.infer<typeof JobSubmission>;

/** Query of POST /runsync. */
export const RunSyncQuery = z.object({
  wait: z.coerce.number().int().min(JOB_LIMITS.runsyncWait.min).max(JOB_LIMITS.runsyncWait.max).optional(),
});

/**
 * The status envelope: /run, /runsync, /status, /cancel, /retry and the webhook payload.
 * Failed jobs carry `error` (a string) instead of `output`; while running, `output` may hold progress.
 */
export const JobEnvelope = z.looseObject({
  id: z.string(),
  status: JobStatus,
  delayTime: z.number().optional(),
  executionTime: z.number().optional(),
  output: z.unknown().optional(),
  error: z.string().optional(),
  workerId: z.string().optional(),
});
export type JobEnvelope = z.infer<typeof JobEnvelope>;

export const StreamChunk = z.looseObject({
  output: z.unknown(),
  metrics: z.record(z.string(), z.unknown()).optional(),
});
export type StreamChunk = z.infer<typeof StreamChunk>;

/** Reply of GET /stream/{job_id}: the chunks buffered since the previous call (the call drains them). */
export const StreamReply = z.looseObject({
  status: JobStatus,
  stream: z.array(StreamChunk).default([]),
  error: z.string().optional(),
});
export type StreamReply = z.infer<typeof StreamReply>;

export const HealthReply = z.looseObject({
  jobs: z.looseObject({
    completed: z.int(),
    failed: z.int(),
    inProgress: z.int(),
    inQueue: z.int(),
    retried: z.int(),
  }),
  workers: z.looseObject({
    idle: z.int(),
    running: z.int(),
    initializing: z.int().optional(),
    ready: z.int().optional(),
    throttled: z.int().optional(),
    unhealthy: z.int().optional(),
  }),
});
export type HealthReply = z.infer<typeof HealthReply>;

export const PurgeReply = z.looseObject({ removed: z.int(), status: z.string() });
export type PurgeReply = z.infer<typeof PurgeReply>;
