import { z } from "zod";
import { queryInt } from "./common";

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
// The job client's types below are written out rather than inferred through zod, so a consumer whose
// checker cannot reach zod (pnpm's layout read without following symlinks) still sees them; a type
// test holds each equal to its schema's.
export type JobStatus = (typeof JOB_STATUSES)[number];

/** Statuses after which a job never changes again (unless retried). */
export type TerminalJobStatus = Extract<JobStatus, "COMPLETED" | "FAILED" | "CANCELLED" | "TIMED_OUT">;
export const TERMINAL_JOB_STATUSES: ReadonlySet<JobStatus> = new Set<TerminalJobStatus>([
  "COMPLETED",
  "FAILED",
  "CANCELLED",
  "TIMED_OUT",
]);
export const isTerminalJobStatus = (status: string): status is TerminalJobStatus =>
  TERMINAL_JOB_STATUSES.has(status as JobStatus);

/**
 * Bounds and defaults of the job API's parameters, in milliseconds: the schemas below validate with
 * them and the SDK checks `wait` against them. (The service's own policy, such as rate limits,
 * retention and body sizes, is in service/jobs/policy.ts.)
 */
export const JOB_LIMITS = {
  runsyncWait: { min: 1_000, max: 300_000, default: 90_000 },
  executionTimeout: { min: 5_000, max: 7 * 24 * 3_600_000, default: 600_000 },
  ttl: { min: 10_000, max: 7 * 24 * 3_600_000, default: 86_400_000 },
  /** The longest the service holds a /stream call with no chunk to give (the SDK's polls allow it). */
  streamHold: { max: 10_000 },
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

/** `policy` of a submission. */
export interface JobPolicyInput {
  /** ms the job may run before it ends TIMED_OUT (5 s to 7 days; default 10 min). */
  executionTimeout?: number | undefined;
  lowPriority?: boolean | undefined;
  /** ms the job lives, counted from submission (10 s to 7 days; default 24 h). */
  ttl?: number | undefined;
}

export const S3Config = z.object({
  accessId: z.string().min(1),
  accessSecret: z.string().min(1),
  bucketName: z.string().min(1),
  endpointUrl: z.url(),
  /** Accepted by the official JS client; passed through to the worker. */
  objectPath: z.string().optional(),
});
export type S3Config = z.infer<typeof S3Config>;

/** `s3Config` of a submission, passed through to the worker. */
export interface S3ConfigInput {
  accessId: string;
  accessSecret: string;
  bucketName: string;
  endpointUrl: string;
  objectPath?: string | undefined;
}

/**
 * Where the service POSTs a finished job: an http(s) URL with a host. `localhost:3000/hook` (no
 * scheme) parses as a URL of scheme "localhost:", and was taken, then never delivered.
 */
/** Longest webhook URL kept with a job (a URL is stored with every job that names one). */
export const WEBHOOK_URL_MAX_CHARS = 2048;

export const WebhookUrl = z
  .url({
    protocol: /^https?$/,
    // A DNS name is at most 253 characters (an IPv6 literal far less): a longer host can never be reached.
    hostname: /^.{1,253}$/,
    error: 'expected an http:// or https:// URL with a host, e.g. "https://example.com/hook"',
  })
  .max(WEBHOOK_URL_MAX_CHARS, `at most ${WEBHOOK_URL_MAX_CHARS} characters`);

/** Body of POST /run and /runsync. `input` is the handler's own object. */
export const JobSubmission = z.object({
  input: z.record(z.string(), z.unknown()),
  webhook: WebhookUrl.optional(),
  policy: JobPolicy.optional(),
  s3Config: S3Config.optional(),
});
export type JobSubmission = z.infer<typeof JobSubmission>;

/** What run() and runSync() take: the submission as written, before the schema's defaults. */
export interface JobSubmissionInput {
  /** The handler's own object. */
  input: Record<string, unknown>;
  /** An http(s) URL the service POSTs the finished job to. */
  webhook?: string | undefined;
  policy?: JobPolicyInput | undefined;
  s3Config?: S3ConfigInput | undefined;
}

/** Query of POST /runsync. */
export const RunSyncQuery = z.object({
  wait: queryInt(JOB_LIMITS.runsyncWait.min, JOB_LIMITS.runsyncWait.max).optional(),
});

/** Query of GET/POST /status: `ttl` (ms) resets the job's lifetime, counted from submission. */
export const StatusQuery = z.object({
  ttl: queryInt(JOB_LIMITS.ttl.min, JOB_LIMITS.ttl.max).optional(),
});

/** Query of /status-sync (long-poll status, used by the official JS and Go clients). */
export const StatusSyncQuery = StatusQuery.extend({
  wait: queryInt(JOB_LIMITS.runsyncWait.min, JOB_LIMITS.runsyncWait.max).optional(),
});

/** Reply of /run, /cancel and /retry (and of /runsync when the job is not done within `wait`). */
export const JobAccepted = z.looseObject({ id: z.string(), status: JobStatus });
export interface JobAccepted {
  [field: string]: unknown;
  id: string;
  status: JobStatus;
}

/**
 * The status envelope: /run, /runsync, /status, /cancel, /retry and the webhook payload.
 * Failed jobs carry `error` (a string) instead of `output`; while running, `output` may hold progress.
 */
export const JobEnvelope = z.looseObject({
  id: z.string(),
  status: JobStatus,
  // The local service sends both in every state (a queued job: waited so far, 0 ms run); optional,
  // as a reply of the real service may leave them out.
  delayTime: z.number().optional(),
  executionTime: z.number().optional(),
  output: z.unknown().optional(),
  error: z.string().optional(),
  workerId: z.string().optional(),
});
export type JobEnvelope = z.infer<typeof JobEnvelope>;

/** What every status envelope the SDK hands out may carry, whatever the job's status. */
export interface JobResultFields {
  /** Fields the service adds beyond these (replies are parsed loosely). */
  [field: string]: unknown;
  id: string;
  /** ms the job waited in the queue. */
  delayTime?: number | undefined;
  /** ms the job ran (0 while it has not started). */
  executionTime?: number | undefined;
  workerId?: string | undefined;
}

/** Waiting for a worker (just submitted, or retried). */
export interface JobInQueue extends JobResultFields {
  status: "IN_QUEUE";
  output?: unknown;
  error?: undefined;
}

/** Running on a worker; `output` may hold a progress value the handler sent. */
export interface JobInProgress extends JobResultFields {
  status: "IN_PROGRESS";
  output?: unknown;
  error?: undefined;
}

/** Done: `output` is the handler's result (absent when it returned an empty object); no `error`. */
export interface JobCompleted extends JobResultFields {
  status: "COMPLETED";
  output?: unknown;
  error?: undefined;
}

/** The handler failed (or its worker was lost): `error` says why; retry() may requeue it. */
export interface JobFailed extends JobResultFields {
  status: "FAILED";
  error: string;
  output?: unknown;
}

/** Cancelled before it ended; no result. */
export interface JobCancelled extends JobResultFields {
  status: "CANCELLED";
  output?: unknown;
  error?: undefined;
}

/** Ran past its executionTimeout; `error` says so when the service words it. retry() may requeue it. */
export interface JobTimedOut extends JobResultFields {
  status: "TIMED_OUT";
  error?: string | undefined;
  output?: unknown;
}

/**
 * A job's status envelope as the SDK returns it (status, statusSync, waitFor, runSync): one member
 * per status, so that checking `status` narrows it: COMPLETED has no `error`, FAILED has `error` as a
 * string. Assignable to JobEnvelope, the loose wire shape.
 */
export type JobResult = JobInQueue | JobInProgress | JobCompleted | JobFailed | JobCancelled | JobTimedOut;

/** Statuses whose envelope carries no `error` (JobResult's members with `error?: undefined`). */
const ERRORLESS: ReadonlySet<JobStatus> = new Set<JobStatus>([
  "IN_QUEUE",
  "IN_PROGRESS",
  "COMPLETED",
  "CANCELLED",
]);

/**
 * JobEnvelope with the per-status rules JobResult states checked, so the narrowed type holds: a FAILED
 * job names its error (SERVICE-FACTS: failed jobs carry `error` instead of `output`), and a job
 * queued, running, completed or cancelled carries none. A reply breaking them is a ProtocolError
 * naming `error`, as a reply whose `error` is not a string already was.
 */
export const JobResultReply = JobEnvelope.superRefine((envelope, ctx) => {
  if (envelope.status === "FAILED" && envelope.error === undefined) {
    ctx.addIssue({ code: "custom", path: ["error"], message: "a FAILED job's status names its error" });
  } else if (ERRORLESS.has(envelope.status) && envelope.error !== undefined) {
    ctx.addIssue({ code: "custom", path: ["error"], message: `a ${envelope.status} job carries no error` });
  }
  // Checked just above: each status's envelope is its JobResult member.
}).transform((envelope) => envelope as JobResult);

export const StreamChunk = z.looseObject({
  output: z.unknown(),
  metrics: z.record(z.string(), z.unknown()).optional(),
});
export interface StreamChunk {
  [field: string]: unknown;
  output: unknown;
  metrics?: Record<string, unknown> | undefined;
}

/**
 * Query of GET/POST /stream (the local service's own, sent by the SDK; the real service ignores it):
 * `received` is the stream position the reader has received up to, the last reply's
 * STREAM_POSITION_HEADER. A reader that says so gets the chunks of a reply it did not receive (cut
 * on the way) handed out again on its next poll, and those past `received` of a reply it took part
 * of; without it, each chunk is handed out once. `maxReplyBytes` is the largest reply body the reader
 * takes: the reply's chunks stop short of it (one chunk is sent even past it), under the service's own
 * 4 MiB bound, so a client with a smaller limit is not sent a reply it refuses.
 */
export const StreamQuery = z.object({
  received: queryInt(0, Number.MAX_SAFE_INTEGER).optional(),
  maxReplyBytes: queryInt(1, Number.MAX_SAFE_INTEGER).optional(),
});

/** A stream position, as `received` and STREAM_POSITION_HEADER carry it: digits. */
export const StreamPosition = queryInt(0, Number.MAX_SAFE_INTEGER);

/**
 * The reply header of /stream (local service) with the stream position after its chunks: how many
 * chunks of the job's stream were handed out up to and including this reply.
 */
export const STREAM_POSITION_HEADER = "x-runpodkit-stream-position";

/** Reply of GET /stream/{job_id}: the chunks buffered since the previous call (each handed out once). */
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
  /**
   * The local service's own: while none of the endpoint's workers is up, why they do not start (the
   * last one's process exited or could not start before its first call, or it is still loading after
   * slowStartMs). Not sent by the real service.
   */
  startIssue: z.looseObject({ workerId: z.string(), since: z.string(), reason: z.string() }).optional(),
});
export interface HealthReply {
  [field: string]: unknown;
  jobs: {
    [field: string]: unknown;
    completed: number;
    failed: number;
    inProgress: number;
    inQueue: number;
    retried: number;
  };
  workers: {
    [field: string]: unknown;
    idle: number;
    running: number;
    initializing?: number | undefined;
    ready?: number | undefined;
    throttled?: number | undefined;
    unhealthy?: number | undefined;
  };
  /** The local service's own: why none of the endpoint's workers is up (see the schema). */
  startIssue?: { [field: string]: unknown; workerId: string; since: string; reason: string } | undefined;
}

export const PurgeReply = z.looseObject({ removed: z.int(), status: z.string() });
export interface PurgeReply {
  [field: string]: unknown;
  removed: number;
  status: string;
}

/** The webhook payload: the final status envelope plus the job's input and webhook. */
export const WebhookPayload = JobEnvelope.extend({
  input: z.record(z.string(), z.unknown()),
  webhook: z.string(),
});
export type WebhookPayload = z.infer<typeof WebhookPayload>;

/** Error body of the job API: `error` as the real service words it, `message` as REST does. */
export const JobErrorBody = z.looseObject({
  error: z.string(),
  message: z.string().optional(),
  code: z.string().optional(),
  field: z.string().optional(),
});
export type JobErrorBody = z.infer<typeof JobErrorBody>;

// ---- Worker protocol (docs/worker-protocol.md): what workers send and receive ----

/** Query of job-take / job-take-batch; other parameters (gpu, ...) are opaque. */
export const JobTakeQuery = z.looseObject({
  job_in_progress: z.enum(["0", "1"]).optional(),
  batch_size: queryInt(1, 1000).optional(),
});

/** Query of ping: comma-joined ids of held jobs; `status=unhealthy` reports a failed fitness check. */
export const PingQuery = z.looseObject({
  job_id: z.string().optional(),
  runpod_version: z.string().optional(),
  status: z.string().optional(),
  check: z.string().optional(),
  reason: z.string().optional(),
});

/** Query of job-done / job-stream. */
export const JobDoneQuery = z.looseObject({ isStream: z.enum(["true", "false"]).optional() });

/** The job handed to a worker by job-take; extra top-level keys pass through to the handler. */
export const WorkerJob = z.looseObject({
  id: z.string(),
  input: z.unknown(),
  webhook: z.string().optional(),
  s3Config: S3Config.optional(),
  policy: JobPolicy.optional(),
});
export type WorkerJob = z.infer<typeof WorkerJob>;

/**
 * Body of job-done: a final result (output and/or error, maybe stopPod), or a progress update when the
 * top-level status is IN_PROGRESS. `error` may be any JSON value; strings are kept verbatim.
 */
export const JobDoneBody = z.looseObject({
  output: z.unknown().optional(),
  error: z.unknown().optional(),
  status: z.string().optional(),
  stopPod: z.boolean().optional(),
});
export type JobDoneBody = z.infer<typeof JobDoneBody>;

/** Body of job-stream: one chunk. */
export const JobStreamBody = z.looseObject({ output: z.unknown() });
export type JobStreamBody = z.infer<typeof JobStreamBody>;

/** Reply of job-stop. */
export const JobStopReply = z.object({ jobsToStop: z.array(z.string()) });
export type JobStopReply = z.infer<typeof JobStopReply>;
