import {
  isTerminalJobStatus,
  JOB_LIMITS,
  type JobEnvelope,
  type JobPolicy,
  type JobStatus,
  type S3Config,
  type StreamChunk,
} from "../../../sdk/schemas/job";
import { JOB_POLICY } from "../policy";

/** Async jobs come from /run (results kept 30 min), sync jobs from /runsync (kept 1 min). */
export type JobKind = "async" | "sync";

/**
 * A job as the job plane holds it. Mutable on purpose: the in-memory index is the hot copy and the
 * store is written behind it (see store/job-store.ts).
 */
export interface Job {
  readonly id: string;
  readonly accountId: string;
  readonly endpointId: string;
  readonly kind: JobKind;
  status: JobStatus;
  /**
   * The input as JSON text: what is kept (and stored) for the job's life. Held in memory, or, once a
   * large input is written, read from the store on each use (see `releaseInput`).
   */
  readonly inputText: string;
  /** Parsed from `inputText` on each read (job-take, webhooks), so queued jobs hold no object tree. */
  readonly input: Record<string, unknown>;
  /** Is the input text held in memory (not only in the store)? */
  readonly inputInMemory: boolean;
  /** Drops the in-memory input text: later reads come from `source` (the store, once it holds the row). */
  releaseInput(source: InputSource): void;
  /** Bytes of this job counted against the service's memory budget; set by JobMemory only. */
  heldBytes: number;
  readonly webhook: string | undefined;
  /** As submitted; passed through to the worker with the job. */
  readonly policy: JobPolicy | undefined;
  readonly s3Config: S3Config | undefined;
  /** Effective values after defaults. */
  readonly executionTimeoutMs: number;
  ttlMs: number;
  readonly lowPriority: boolean;
  /** ms since the epoch; ttl counts from here. */
  readonly createdAt: number;
  /** When it last entered the queue (submission or retry); delayTime counts from here. */
  queuedAt: number;
  startedAt: number | null;
  completedAt: number | null;
  workerId: string | null;
  /**
   * undefined: no output. While IN_PROGRESS, the latest progress value. A large output, once written,
   * is read from the store on each use (see `releaseOutput`).
   */
  output: unknown;
  /** Is the output held in memory (not only in the store)? */
  readonly outputInMemory: boolean;
  /** Drops the in-memory output: later reads come from `source` (the store, which holds it now). */
  releaseOutput(source: InputSource): void;
  error: string | undefined;
  /** Times the job went back to the queue (client retry, or recovered from a lost worker). */
  retries: number;
  /**
   * Of those, the requeues after a lost worker since the job was submitted or its client last retried
   * it: what maxRetries bounds, so each /retry gets the whole budget again.
   */
  lostRetries: number;
  /** Stream chunks not yet drained by /stream (memory only); null until the first chunk. */
  stream: StreamChunk[] | null;
  /** Bytes of `stream` counted against the service's memory budget; set by JobMemory only. */
  streamBytes: number;
  /** Where /stream's readers are in `stream` (memory only; see StreamCursor); null until a hand-out. */
  streamCursor: StreamCursor | null;
  /** The store's row of this job, 0 until first written; set by the store only (store/job-store.ts). */
  storeRow: number;
}

/**
 * /stream's place in a job's stream. `at` is the position of `stream[0]`: the chunks handed out
 * before it and known to be received. The first `out` chunks of `stream` are those the last /stream
 * reply (hand-out number `reply`) handed out, kept (their `outBytes` still counted) until that reply
 * is known to be received: a reader's next poll saying so, or, for a reader that cannot say
 * (`received` not sent), the reply written whole. `written`: it was, and its reader will say. A reply
 * not received is put back (`out` = 0) and its chunks handed out again.
 */
export interface StreamCursor {
  at: number;
  out: number;
  outBytes: number;
  written: boolean;
  reply: number;
}

/** Where an input or output no longer held in memory is read (the job store). */
export interface InputSource {
  readInput(job: Job): string;
  /** The output's JSON text. */
  readOutput(job: Job): string;
}

/** Every field of a job but the parsed input; the input text may be where to read it. */
export type JobFields = Omit<
  Job,
  | "input"
  | "inputText"
  | "inputInMemory"
  | "releaseInput"
  | "heldBytes"
  | "outputInMemory"
  | "releaseOutput"
  | "streamBytes"
  | "streamCursor"
> & {
  inputText: string | InputSource;
};

/** What a job gets once it runs; queued jobs share none (null), which saves ~50 bytes each. */
interface RunState {
  startedAt: number | null;
  completedAt: number | null;
  workerId: string | null;
  output: unknown;
  /** Set when the output was left in the store: `output` is then read from here. */
  outputSource: InputSource | null;
  error: string | undefined;
  stream: StreamChunk[] | null;
  streamBytes: number;
  streamCursor: StreamCursor | null;
}

/** The rarely given pass-through fields, in one object only when one is given. */
interface Extras {
  webhook: string | undefined;
  policy: JobPolicy | undefined;
  s3Config: S3Config | undefined;
}

/**
 * The one shape of every job in memory: fields assigned in one order (one hidden class), accessors
 * and the input getter on the prototype (no per-job closure); what only running or finished jobs
 * have lives in a RunState made on first write. 100,000 queued jobs cost ~350 B each this way.
 */
class JobRecord implements Job {
  readonly id: string;
  readonly accountId: string;
  readonly endpointId: string;
  readonly kind: JobKind;
  status: JobStatus;
  readonly executionTimeoutMs: number;
  ttlMs: number;
  readonly lowPriority: boolean;
  readonly createdAt: number;
  queuedAt: number;
  retries: number;
  lostRetries: number;
  storeRow: number;
  heldBytes = 0;
  #input: string | InputSource;
  readonly #extras: Extras | null;
  #run: RunState | null = null;

  constructor(f: JobFields) {
    this.id = f.id;
    this.accountId = f.accountId;
    this.endpointId = f.endpointId;
    this.kind = f.kind;
    this.status = f.status;
    this.#input = f.inputText;
    this.executionTimeoutMs = f.executionTimeoutMs;
    this.ttlMs = f.ttlMs;
    this.lowPriority = f.lowPriority;
    this.createdAt = f.createdAt;
    this.queuedAt = f.queuedAt;
    this.retries = f.retries;
    this.lostRetries = f.lostRetries;
    this.storeRow = f.storeRow;
    const given = f.webhook !== undefined || f.policy !== undefined || f.s3Config !== undefined;
    this.#extras = given ? { webhook: f.webhook, policy: f.policy, s3Config: f.s3Config } : null;
    this.startedAt = f.startedAt;
    this.completedAt = f.completedAt;
    this.workerId = f.workerId;
    this.output = f.output;
    this.error = f.error;
    this.stream = f.stream;
  }

  get inputText(): string {
    const input = this.#input;
    return typeof input === "string" ? input : input.readInput(this);
  }

  get input(): Record<string, unknown> {
    return JSON.parse(this.inputText) as Record<string, unknown>;
  }

  get inputInMemory(): boolean {
    return typeof this.#input === "string";
  }

  releaseInput(source: InputSource): void {
    this.#input = source;
  }

  get webhook(): string | undefined {
    return this.#extras?.webhook;
  }
  get policy(): JobPolicy | undefined {
    return this.#extras?.policy;
  }
  get s3Config(): S3Config | undefined {
    return this.#extras?.s3Config;
  }

  get startedAt(): number | null {
    return this.#run?.startedAt ?? null;
  }
  set startedAt(value: number | null) {
    if (value !== null || this.#run) this.#runState().startedAt = value;
  }
  get completedAt(): number | null {
    return this.#run?.completedAt ?? null;
  }
  set completedAt(value: number | null) {
    if (value !== null || this.#run) this.#runState().completedAt = value;
  }
  get workerId(): string | null {
    return this.#run?.workerId ?? null;
  }
  set workerId(value: string | null) {
    if (value !== null || this.#run) this.#runState().workerId = value;
  }
  get output(): unknown {
    const run = this.#run;
    if (run?.outputSource) return JSON.parse(run.outputSource.readOutput(this)) as unknown;
    return run?.output;
  }
  set output(value: unknown) {
    if (value === undefined && !this.#run) return;
    const run = this.#runState();
    run.output = value;
    run.outputSource = null;
  }
  get outputInMemory(): boolean {
    return !this.#run?.outputSource;
  }
  releaseOutput(source: InputSource): void {
    const run = this.#runState();
    run.output = undefined;
    run.outputSource = source;
  }
  get error(): string | undefined {
    return this.#run?.error;
  }
  set error(value: string | undefined) {
    if (value !== undefined || this.#run) this.#runState().error = value;
  }
  get stream(): StreamChunk[] | null {
    return this.#run?.stream ?? null;
  }
  set stream(value: StreamChunk[] | null) {
    if (value !== null || this.#run) this.#runState().stream = value;
  }
  get streamBytes(): number {
    return this.#run?.streamBytes ?? 0;
  }
  set streamBytes(value: number) {
    if (value !== 0 || this.#run) this.#runState().streamBytes = value;
  }
  get streamCursor(): StreamCursor | null {
    return this.#run?.streamCursor ?? null;
  }
  set streamCursor(value: StreamCursor | null) {
    if (value !== null || this.#run) this.#runState().streamCursor = value;
  }

  #runState(): RunState {
    this.#run ??= {
      startedAt: null,
      completedAt: null,
      workerId: null,
      output: undefined,
      outputSource: null,
      error: undefined,
      stream: null,
      streamBytes: 0,
      streamCursor: null,
    };
    return this.#run;
  }
}

/** A job from all its fields (a new one, or one read back from the store). */
export const jobFrom = (fields: JobFields): Job => new JobRecord(fields);

export interface NewJob {
  id: string;
  accountId: string;
  endpointId: string;
  kind: JobKind;
  input: Record<string, unknown>;
  webhook?: string | undefined;
  policy?: JobPolicy | undefined;
  s3Config?: S3Config | undefined;
  /** The endpoint's default when the policy has none. */
  endpointExecutionTimeoutMs?: number | undefined;
  now: number;
}

export function createJob(spec: NewJob): Job {
  return jobFrom({
    id: spec.id,
    accountId: spec.accountId,
    endpointId: spec.endpointId,
    kind: spec.kind,
    status: "IN_QUEUE",
    // A flat copy: holds neither the parsed tree nor slices of the request body's text.
    inputText: JSON.stringify(spec.input),
    webhook: spec.webhook,
    policy: spec.policy,
    s3Config: spec.s3Config,
    executionTimeoutMs:
      spec.policy?.executionTimeout ?? spec.endpointExecutionTimeoutMs ?? JOB_LIMITS.executionTimeout.default,
    ttlMs: spec.policy?.ttl ?? JOB_LIMITS.ttl.default,
    lowPriority: spec.policy?.lowPriority ?? false,
    createdAt: spec.now,
    queuedAt: spec.now,
    startedAt: null,
    completedAt: null,
    workerId: null,
    output: undefined,
    error: undefined,
    retries: 0,
    lostRetries: 0,
    stream: null,
    storeRow: 0,
  });
}

/**
 * Every status change the job plane makes, and no other. The spec's table gives the client-driven
 * ones (cancel, retry); the worker-driven ones are those of the worker protocol. "Deleted" (ttl expiry,
 * purge, result expiry) is not a status: the job is removed.
 */
export const TRANSITIONS: Readonly<Record<JobStatus, readonly JobStatus[]>> = {
  // take by a worker; cancel
  IN_QUEUE: ["IN_PROGRESS", "CANCELLED"],
  // worker result; execution timeout; cancel; lost worker puts it back in the queue
  IN_PROGRESS: ["COMPLETED", "FAILED", "TIMED_OUT", "CANCELLED", "IN_QUEUE"],
  COMPLETED: [],
  // retry
  FAILED: ["IN_QUEUE"],
  TIMED_OUT: ["IN_QUEUE"],
  CANCELLED: [],
};

export function canTransition(from: JobStatus, to: JobStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Moves a job to `to`, refusing any change the table does not list (a bug if it happens). */
export function transition(job: Job, to: JobStatus): void {
  if (!canTransition(job.status, to)) {
    throw new Error(`illegal job transition ${job.status} -> ${to} for ${job.id}`);
  }
  job.status = to;
}

export const isTerminal = (job: Job): boolean => isTerminalJobStatus(job.status);

export function retentionMs(kind: JobKind): number {
  return kind === "sync" ? JOB_POLICY.retentionSyncMs : JOB_POLICY.retentionAsyncMs;
}

/**
 * When the job is deleted: its ttl (counted from submission) always applies; once finished, its
 * result is also kept only for the retention of its kind.
 */
export function expiresAt(job: Job): number {
  const ttlEnd = job.createdAt + job.ttlMs;
  if (job.completedAt === null || !isTerminal(job)) return ttlEnd;
  return Math.min(ttlEnd, job.completedAt + retentionMs(job.kind));
}

export const isExpired = (job: Job, now: number): boolean => now >= expiresAt(job);

/**
 * The status envelope clients see (/status, /status-sync, a finished /runsync). delayTime and
 * executionTime are in every state, as the real service's /status shape has them: a job not yet
 * taken has waited until now (or until it was cancelled) and run 0 ms.
 */
export function envelopeOf(job: Job, now: number): JobEnvelope {
  const env: JobEnvelope = { id: job.id, status: job.status };
  if (job.startedAt !== null) {
    env.delayTime = job.startedAt - job.queuedAt;
    env.executionTime = (job.completedAt ?? now) - job.startedAt;
  } else {
    env.delayTime = Math.max(0, (job.completedAt ?? now) - job.queuedAt);
    env.executionTime = 0;
  }
  if (job.error !== undefined) env.error = job.error;
  else if (job.output !== undefined) env.output = job.output;
  if (job.workerId !== null) env.workerId = job.workerId;
  return env;
}

/** What a worker receives from job-take: id, input and the pass-through fields the client sent. */
export function workerJobOf(job: Job): Record<string, unknown> {
  const out: Record<string, unknown> = { id: job.id, input: job.input };
  if (job.webhook !== undefined) out.webhook = job.webhook;
  if (job.s3Config !== undefined) out.s3Config = job.s3Config;
  if (job.policy !== undefined) out.policy = job.policy;
  return out;
}
