import {
  type HealthReply,
  JOB_LIMITS,
  type JobAccepted,
  type JobEnvelope,
  type JobSubmission,
} from "../../../sdk/schemas/job";
import type { RecentJob } from "../../../sdk/schemas/observe";
import type { Clock } from "../../clock";
import { endpointNotFound, jobNotFound, ServiceError } from "../../errors";
import type { Ids } from "../../ids";
import type { EndpointDirectory, EndpointSettings } from "../../planes";
import type { JobBook, StreamHandOut } from "../book/book";
import type { JobMemory, Reservation } from "../book/memory";
import { createJob, envelopeOf, isTerminal, type Job, type JobKind } from "../model/job";
import type { JobStore } from "../store/job-store";

/** Worker numbers of an endpoint, for /health. */
export type WorkerCounts = {
  idle: number;
  running: number;
  initializing: number;
  ready: number;
  throttled: number;
  unhealthy: number;
};

/** Why an endpoint's workers do not start (/health's `startIssue`): the worker, since when, why. */
export type WorkerStartIssue = { workerId: string; since: string; reason: string };

/**
 * The job API's rules, wire-free: every operation of /v2/{endpoint_id} is one method here. Callers
 * pass the account the key resolved to; another account's endpoint or job is simply not found.
 */
export class JobService {
  readonly #book: JobBook;
  readonly #store: JobStore;
  readonly #memory: JobMemory;
  readonly #maxQueued: number;
  readonly #endpoints: EndpointDirectory;
  readonly #clock: Clock;
  readonly #ids: Ids;
  readonly #workerCounts: (endpointId: string) => WorkerCounts;
  readonly #workerStartIssue: (endpoint: EndpointSettings) => WorkerStartIssue | undefined;

  constructor(deps: {
    book: JobBook;
    store: JobStore;
    memory: JobMemory;
    maxQueuedPerEndpoint: number;
    endpoints: EndpointDirectory;
    clock: Clock;
    ids: Ids;
    workerCounts: (endpointId: string) => WorkerCounts;
    /** Why the endpoint's workers do not start, while none of them is up. */
    workerStartIssue?: (endpoint: EndpointSettings) => WorkerStartIssue | undefined;
  }) {
    this.#book = deps.book;
    this.#store = deps.store;
    this.#memory = deps.memory;
    this.#maxQueued = deps.maxQueuedPerEndpoint;
    this.#endpoints = deps.endpoints;
    this.#clock = deps.clock;
    this.#ids = deps.ids;
    this.#workerCounts = deps.workerCounts;
    this.#workerStartIssue = deps.workerStartIssue ?? (() => undefined);
  }

  /** The account's endpoint of any type, or NOT_FOUND. */
  endpoint(accountId: string, endpointId: string): EndpointSettings {
    const endpoint = this.#endpoints.get(accountId, endpointId);
    if (!endpoint) throw endpointNotFound(endpointId);
    return endpoint;
  }

  /**
   * The endpoint's newest jobs, newest first, with their timelines (the console's view); with `job`,
   * that one job only (none when it is not the endpoint's or has expired); with `before` (the last
   * job of a page), the page after it; with `summary`, without input, output, error and stream.
   */
  recent(
    accountId: string,
    endpointId: string,
    query: {
      limit: number;
      job?: string | undefined;
      before?: string | undefined;
      summary?: boolean;
      streamFrom?: number | undefined;
    },
  ): RecentJob[] {
    this.endpoint(accountId, endpointId);
    const now = this.#clock.now();
    let cursor: Job | undefined;
    if (query.before !== undefined) {
      cursor = this.#book.find(query.before);
      if (cursor?.endpointId !== endpointId) {
        throw new ServiceError(
          "VALIDATION",
          `before: no job ${query.before} of this endpoint is kept (it expired, or the id is wrong): read the newest page (without before) and page from there`,
          { field: "before" },
        );
      }
    }
    const jobs =
      query.job === undefined
        ? this.#book.recent(endpointId, query.limit, cursor)
        : [this.#book.find(query.job)].filter((job): job is Job => job?.endpointId === endpointId);
    return jobs.map((job) => {
      const { id: _id, status: _status, output, error, ...times } = envelopeOf(job, now);
      const streamAt = job.streamCursor?.at ?? 0;
      const chunks = job.stream ?? [];
      const view: RecentJob = {
        id: job.id,
        status: job.status,
        createdAt: job.createdAt,
        queuedAt: job.queuedAt,
        startedAt: job.startedAt,
        completedAt: job.completedAt,
        ...times,
        workerId: job.workerId,
        retries: job.retries,
        streamChunks: chunks.length,
        streamAt,
      };
      if (query.summary) {
        if (query.streamFrom === undefined) return view;
        const from = Math.max(0, query.streamFrom - streamAt);
        return { ...view, stream: chunks.slice(from).map((chunk) => chunk.output) };
      }
      return {
        ...view,
        ...(error !== undefined ? { error } : output !== undefined ? { output } : {}),
        input: job.input,
        stream: chunks.map((chunk) => chunk.output),
      };
    });
  }

  /** The account's queue-based endpoint, or NOT_FOUND / UNSUPPORTED. */
  queueEndpoint(accountId: string, endpointId: string): EndpointSettings {
    const endpoint = this.#endpoints.get(accountId, endpointId);
    if (!endpoint) throw endpointNotFound(endpointId);
    if (endpoint.type !== "QB") {
      throw new ServiceError(
        "UNSUPPORTED",
        `endpoint ${endpointId} is a load-balancing endpoint: it has no job queue; send requests to its workers' own HTTP paths`,
      );
    }
    return endpoint;
  }

  /**
   * /run: a new job in the queue, answered once it is on disk (a restart keeps what a client was told
   * was accepted). It may already be on a worker by then; /run reports the state it was accepted in.
   */
  async run(
    accountId: string,
    endpointId: string,
    body: JobSubmission,
    reservation: Reservation | null = null,
  ): Promise<JobAccepted> {
    const job = this.submit(accountId, endpointId, body, "async", reservation);
    await this.#written(job);
    return { id: job.id, status: "IN_QUEUE" };
  }

  /**
   * /runsync: a new job, held up to `waitMs` (default 90 s) for its end. A finished job answers its
   * envelope, one still going its {id, status} (the client polls on). A job still going is on disk
   * before its id is answered; a finished one is answered at once, and its row written within a
   * second with other /runsync jobs' (JobStore: a /runsync job's row waits, so it is written once).
   */
  async runSync(
    accountId: string,
    endpointId: string,
    body: JobSubmission,
    waitMs: number | undefined,
    signal: AbortSignal,
    reservation: Reservation | null = null,
  ): Promise<JobEnvelope> {
    const job = this.submit(accountId, endpointId, body, "sync", reservation);
    const ended = await this.#waitForEnd(job, waitMs ?? JOB_LIMITS.runsyncWait.default, signal);
    if (!this.exists(job)) throw jobNotFound(job.id, job.endpointId);
    // Answered with its result: its row is written with others' (JobStore). Otherwise (the hold
    // ended first, or the client left) the row is on disk before its id can be known.
    if (ended && !signal.aborted) return this.envelope(job);
    this.#store.writeWaiting(job);
    await this.#store.flushed();
    return ended ? this.envelope(job) : { id: job.id, status: job.status };
  }

  /**
   * A non-streamed /openai reply answered the whole output of job `id`: a generator's yields, kept for
   * /stream, are that output again, and its client never learns the id to read them. They are
   * dropped (they held the budget until the job left the recent cache, thousands of jobs later).
   */
  answeredWhole(id: string): void {
    const job = this.#book.find(id);
    if (job) this.#book.dropStream(job);
  }

  /**
   * A streamed /openai reply's hold on its sync job ended (`answered`: the job ended and its whole
   * reply was written). As runSync: a job answered whole is written with others' rows; one the
   * reply left (the wait ended, the client went away) is on disk before the reply ends.
   */
  async syncHoldEnded(job: Job, answered: boolean): Promise<void> {
    if (answered || !this.exists(job)) return;
    this.#store.writeWaiting(job);
    await this.#store.flushed();
  }

  /** /status-sync: the job's envelope once it ends, or after `waitMs` (default 90 s). */
  async statusSync(job: Job, waitMs: number | undefined, signal: AbortSignal): Promise<JobEnvelope> {
    await this.#waitForEnd(job, waitMs ?? JOB_LIMITS.runsyncWait.default, signal);
    if (!this.exists(job)) throw jobNotFound(job.id, job.endpointId);
    return this.envelope(job);
  }

  /**
   * Room for a new job of about `bytes` (a request's content-length, before its body is read): the
   * endpoint's queue cap (RATE_LIMITED, 429) and the service's memory budget (UNAVAILABLE, 503). The
   * bytes are held against the budget while the body is read (the caller releases the reservation when
   * the request ends; submit, once its job holds its input): bodies read at once count together, so a
   * burst of large /run bodies is refused unread past the budget instead of all being read into memory.
   */
  reserveRoom(endpointId: string, bytes: number): Reservation {
    this.checkRoom(endpointId);
    return this.#memory.reserve(bytes);
  }

  /**
   * Holds `bytes` against the memory budget, or UNAVAILABLE (503) when they do not fit: what a route
   * keeps of a job's stream after its chunks left the buffer (the /openai route's rejoined output).
   */
  holdMemory(bytes: number): Reservation {
    return this.#memory.reserve(bytes);
  }

  /** Room in the endpoint's queue (its cap, maxQueuedPerEndpoint): RATE_LIMITED (429) otherwise. */
  checkRoom(endpointId: string): void {
    const queued = this.#book.counts(endpointId).inQueue;
    if (queued >= this.#maxQueued) {
      throw new ServiceError(
        "RATE_LIMITED",
        `endpoint ${endpointId} has ${queued} jobs in queue, its cap (maxQueuedPerEndpoint ${this.#maxQueued}); retry once workers have taken some`,
        { retryAfterMs: 10_000 },
      );
    }
  }

  /**
   * A new job in the queue (the job of /run and /runsync). The reservation its body held while read
   * is released first: the job's input is counted in its place.
   */
  submit(
    accountId: string,
    endpointId: string,
    body: JobSubmission,
    kind: JobKind,
    reservation: Reservation | null = null,
  ): Job {
    const endpoint = this.queueEndpoint(accountId, endpointId);
    this.checkRoom(endpoint.id);
    reservation?.release();
    const job = createJob({
      id: this.#ids.job(kind),
      // The cached endpoint's strings: shared by all its jobs, not a copy cut from each request's URL.
      accountId: endpoint.accountId,
      endpointId: endpoint.id,
      kind,
      input: body.input,
      webhook: body.webhook,
      policy: body.policy,
      s3Config: body.s3Config,
      endpointExecutionTimeoutMs: endpoint.executionTimeoutMs > 0 ? endpoint.executionTimeoutMs : undefined,
      now: this.#clock.now(),
    });
    this.#memory.admit(job.inputText.length);
    this.#book.submit(job);
    return job;
  }

  /**
   * Waits for the new job's write. A job the store could not write is withdrawn and refused
   * (UNAVAILABLE): a client is never told a job was accepted that a restart would lose.
   */
  async #written(job: Job): Promise<void> {
    await this.#store.flushed();
    if (!this.#store.isPending(job.id)) return;
    if (this.exists(job)) this.#book.delete(job);
    throw new ServiceError(
      "UNAVAILABLE",
      `the job store could not write job ${job.id} (${this.#store.lastFailure}); try again`,
      {
        retryAfterMs: 1_000,
      },
    );
  }

  /** The job of this endpoint and account; `ttl` (ms) resets its lifetime. */
  job(accountId: string, endpointId: string, jobId: string, ttlMs?: number): Job {
    this.queueEndpoint(accountId, endpointId);
    const job = this.#book.find(jobId);
    if (!job || job.accountId !== accountId || job.endpointId !== endpointId)
      throw jobNotFound(jobId, endpointId);
    if (ttlMs !== undefined) {
      this.#book.setTtl(job, ttlMs);
      if (!this.#book.find(jobId)) throw jobNotFound(jobId, endpointId);
    }
    return job;
  }

  envelope(job: Job): JobEnvelope {
    return envelopeOf(job, this.#clock.now());
  }

  /** Holds until the job ends (or is deleted) or `ms` pass; false if it is still going. */
  #waitForEnd(job: Job, ms: number, signal?: AbortSignal): Promise<boolean> {
    return this.#book.watchers.waitUntil(job.id, ms, () => this.#endedOrGone(job), signal);
  }

  /** Is the job still there (not expired, purged or deleted by ttl)? */
  exists(job: Job): boolean {
    return this.#book.find(job.id) !== undefined;
  }

  /**
   * /stream: hands out the buffered chunks, holding up to `holdMs` while there are none and it runs.
   * `received` (the reader's stream position, when it says) settles the last reply first: a reply
   * it did not receive is handed out again. A reader gone during the hold is handed nothing.
   * `maxReplyBytes` (the reader's limit, when it says) bounds the whole reply body: its chunks get
   * what the envelope around them leaves.
   */
  async stream(
    job: Job,
    holdMs: number,
    received: number | undefined,
    signal?: AbortSignal,
    maxReplyBytes?: number,
  ): Promise<StreamHandOut> {
    this.#book.settleChunks(job, received);
    await this.#book.watchers.waitUntil(
      job.id,
      holdMs,
      () => this.#book.pendingChunks(job) > 0 || this.#endedOrGone(job),
      signal,
    );
    if (signal?.aborted) {
      const at = job.streamCursor?.at ?? 0;
      return { chunks: [], from: at, position: at, reply: -1 };
    }
    if (maxReplyBytes === undefined) return this.#book.handOutChunks(job);
    // The reply's body less its chunks, as the route writes it (status, error when the job has one).
    const error = this.envelope(job).error;
    const envelopeBytes = Buffer.byteLength(JSON.stringify({ status: job.status, stream: [], error }));
    return this.#book.handOutChunks(job, maxReplyBytes - envelopeBytes);
  }

  /** A /stream reply ended: written whole, or not (its chunks are handed out again). */
  streamReplyEnded(job: Job, handOut: StreamHandOut, written: boolean, readerSays: boolean): void {
    this.#book.replyEnded(job, handOut, written, !readerSays);
  }

  /** /cancel: a queued job is removed before it starts, a running one is stopped. */
  cancel(job: Job): Job {
    if (job.status === "IN_QUEUE" || job.status === "IN_PROGRESS") this.#book.cancel(job);
    return job;
  }

  /**
   * /retry: FAILED or TIMED_OUT jobs only, back in the queue with the same id and input. As /run, a
   * waiting worker may already hold it: the reply reports the state retry put it in.
   */
  retry(job: Job): JobAccepted {
    if (job.status !== "FAILED" && job.status !== "TIMED_OUT") {
      throw new ServiceError(
        "PRECONDITION",
        `job ${job.id} is ${job.status}: only FAILED or TIMED_OUT jobs can be retried`,
        { field: "status" },
      );
    }
    this.#book.retry(job);
    return { id: job.id, status: "IN_QUEUE" };
  }

  /** /purge-queue: removes queued jobs; running ones continue. */
  purgeQueue(accountId: string, endpointId: string): number {
    this.queueEndpoint(accountId, endpointId);
    return this.#book.purgeQueue(endpointId);
  }

  health(accountId: string, endpointId: string): HealthReply {
    const endpoint = this.queueEndpoint(accountId, endpointId);
    const counts = this.#book.counts(endpointId);
    const reply: HealthReply = {
      jobs: {
        completed: counts.completed,
        failed: counts.failed,
        inProgress: counts.inProgress,
        inQueue: counts.inQueue,
        retried: counts.retried,
      },
      workers: this.#workerCounts(endpointId),
    };
    // The local service's own field: a queue that never runs names why beside its counts.
    const issue = this.#workerStartIssue(endpoint);
    return issue ? { ...reply, startIssue: issue } : reply;
  }

  #endedOrGone(job: Job): boolean {
    return isTerminal(job) || this.#book.find(job.id) !== job;
  }
}
