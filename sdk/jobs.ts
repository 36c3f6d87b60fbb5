import type { IncomingHttpHeaders } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { type ClientOptions, clientHttp, requireBaseUrl, requireClientOptions } from "./client-options";
import { replyCutHeaders, replyCutStatus } from "./dispatch-reply";
import {
  AbortedError,
  JobFailedError,
  RateLimitedError,
  RunpodkitError,
  StreamInterruptedError,
  TimeoutError,
  ValidationError,
} from "./errors";
import {
  type CallOptions,
  type CloseOptions,
  DEFAULT_MAX_REPLY_BYTES,
  type HttpCall,
  type HttpClient,
  type HttpReply,
  MAX_TIMEOUT_MS,
  requireTimeoutMs,
} from "./http";
import {
  HealthReply,
  isTerminalJobStatus,
  JOB_LIMITS,
  JobAccepted,
  JobPolicy,
  type JobResult,
  JobResultReply,
  type JobStatus,
  JobSubmission,
  type JobSubmissionInput,
  PurgeReply,
  S3Config,
  STREAM_POSITION_HEADER,
  type StreamChunk,
  StreamPosition,
  StreamReply,
} from "./schemas/job";
import { idSegment, parseReply, validateInput } from "./validate";

export const DEFAULT_JOBS_URL = "https://api.runpod.ai/v2";

/**
 * What run() and runSync() send: the shared schema, strict at every level. The service's parse drops
 * keys it does not know, so a misspelt `policy.executionTimeOut` ran the job with the default timeout;
 * here it is a ValidationError naming it, as a misspelt field of a REST input is.
 */
const SubmissionToSend = z.strictObject({
  ...JobSubmission.shape,
  policy: z.strictObject(JobPolicy.shape).optional(),
  s3Config: z.strictObject(S3Config.shape).optional(),
});

export interface JobClientOptions extends ClientOptions {
  endpointId: string;
  /** Default https://api.runpod.ai/v2; the endpoint id is appended (one ending with it is refused). */
  baseUrl?: string | undefined;
  /**
   * Client-side HTTP budget of one call, retries included (default 30 s). It is NOT the job's wait:
   * runSync adds its `wait` on top, each stream poll the service's 10 s hold, and waitFor has its own
   * `timeoutMs`.
   */
  timeoutMs?: number | undefined;
  /** Retries of idempotent calls and of 429 on submissions (default 3). */
  retries?: number | undefined;
  /**
   * The time of the client's own waits (waitFor's `timeoutMs`, `maxOutageMs`, pauses between polls, a
   * call's wait for a hold slot); default the system's. For tests that move time by hand; each HTTP
   * attempt's budget keeps a native timer.
   */
  clock?: JobClock | undefined;
  /**
   * How many calls the service holds (runSync, statusSync, waitFor's holds, stream polls) the client
   * sends at once, an integer from 1 to 1024; past it they wait for a slot. Default half of
   * `connections` (32 with a `dispatcher`, whose limit the client cannot read): with a dispatcher, set
   * it to under its connections per origin. Without one it must be below `connections` (64 by
   * default), so run(), status() or cancel() always find a socket.
   */
  maxHeldCalls?: number | undefined;
}

/** Time as the job client reads it: the system's by default, a manual one in tests. */
export interface JobClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` once, `ms` from now, unless cancelled; it must not keep the process alive. */
  setTimer(ms: number, fn: () => void): { cancel(): void };
  /** Resolves after `ms`; rejects once `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The system's time, as the client read it before a clock could be given. */
const SYSTEM_CLOCK: JobClock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const timer = setTimeout(fn, ms);
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
  sleep: (ms, signal) => sleep(ms, undefined, { signal }),
};

/** A clock the client can read, else a ValidationError naming `clock` when the client is built. */
function requireClock(clock: unknown): JobClock {
  if (clock === undefined) return SYSTEM_CLOCK;
  const given = clock as Partial<JobClock> | null;
  if (
    typeof given?.now === "function" &&
    typeof given.setTimer === "function" &&
    typeof given.sleep === "function"
  ) {
    return given as JobClock;
  }
  throw new ValidationError({
    operation: "jobs",
    field: "clock",
    message:
      "jobs: clock must have now(), setTimer(ms, fn) and sleep(ms, signal) (or be left out for the system's)",
  });
}

/** What run() and runSync() take: the submission as written, before the shared schema's defaults. */
export type JobInput = JobSubmissionInput;

export interface RunSyncOptions extends CallOptions {
  /** How long the service holds the call for the result, ms (1000..300000, default 90000). */
  wait?: number | undefined;
}

export interface WaitOptions {
  /** How long to wait for a terminal status (default 10 min). Then a TimeoutError with the job id. */
  timeoutMs?: number | undefined;
  /**
   * Pause between /status polls (default 1000 ms): polled where the service does not hold
   * /status-sync, in the last two seconds of the wait, and after a failed call.
   */
  pollIntervalMs?: number | undefined;
  /**
   * How long polls may keep failing for a reason that passes (the service restarting or out of
   * reach, a 5xx, a 429, a poll timed out) before the last failure is thrown (default 60 s; never
   * past `timeoutMs`). The job lives on in the service meanwhile; 0 throws the first such failure.
   */
  maxOutageMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

export interface StreamOptions {
  /** Pause after a /stream reply with no chunks (default 250 ms; the service long-polls anyway). */
  pollIntervalMs?: number | undefined;
  /**
   * HTTP budget of each /stream poll beyond the service's hold of an empty poll (10 s), so a poll the
   * service legitimately holds is never timed out (default: the client's timeoutMs). It counts from
   * when the poll is sent: the time it waited for a hold slot is not taken from it.
   */
  timeoutMs?: number | undefined;
  /**
   * How long polls may keep failing for a reason that passes (the service restarting or out of
   * reach, a 5xx, a 429, a poll timed out) before the last failure is thrown (default 60 s); the
   * stream then goes on where it was. 0 throws the first such failure. A poll waiting for one of the
   * client's hold slots is no failure and does not count.
   */
  maxOutageMs?: number | undefined;
  /** Ends the stream, a poll waiting for a hold slot included (the only bound of that wait). */
  signal?: AbortSignal | undefined;
}

/** The client's own pool size when `connections` is not given (HttpClient's default). */
const DEFAULT_CONNECTIONS = 64;

/** The most hold slots `maxHeldCalls` may give (a bound on the input; far past any pool's use). */
const MAX_HELD_CALLS = 1_024;

/**
 * The shared client options checked; `connections` beside a dispatcher is refused there with advice
 * for the dispatcher alone, so the job client adds the option that sizes its hold slots then.
 */
function requireJobClientOptions(given: JobClientOptions): JobClientOptions {
  try {
    return requireClientOptions(given, "jobs");
  } catch (error) {
    if (
      error instanceof ValidationError &&
      error.field === "connections" &&
      given?.dispatcher !== undefined
    ) {
      error.message +=
        "; and pass maxHeldCalls, below that limit, for the calls the service holds at once (default 32)";
    }
    throw error;
  }
}

/** How the hold slots were sized, for the advice when they are all taken. */
type SlotSizing =
  | { kind: "connections"; connections: number }
  | { kind: "dispatcher" }
  | { kind: "maxHeldCalls"; maxHeldCalls: number };

/**
 * `maxHeldCalls` checked when the client is built: an integer from 1 to MAX_HELD_CALLS, and below
 * `connections` when given, else a ValidationError naming it.
 */
function requireMaxHeldCalls(value: unknown, connections: number | undefined): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > MAX_HELD_CALLS) {
    throw new ValidationError({
      operation: "jobs",
      field: "maxHeldCalls",
      message: `jobs: maxHeldCalls must be an integer from 1 to ${MAX_HELD_CALLS}, got ${String(value)}`,
    });
  }
  if (connections !== undefined && value >= connections) {
    throw new ValidationError({
      operation: "jobs",
      field: "maxHeldCalls",
      message: `jobs: maxHeldCalls (${value}) must be below connections (${connections}; 64 when not given), so run(), status() and cancel() always find a socket; raise connections or leave maxHeldCalls out (half of connections)`,
    });
  }
  return value;
}

/** Jobs whose stream position a client keeps after a stream() left early (the oldest are forgotten). */
const KEPT_STREAM_POSITIONS = 1_000;

/** A call queued for a hold slot: admitted, or ended (its signal, its timer, close({ force: true })). */
interface SlotWaiter {
  admit(): void;
  forceClosed(): void;
}

/**
 * The one rule for calls the service holds open (runSync, statusSync and waitFor's holds, each up to
 * its `wait`, 90 s by default; stream's polls, up to 10 s each): at most half the client's sockets
 * hold them, so run(), status() or cancel() made meanwhile always finds one. Before, 64 such calls
 * (or a few streams on a small pool) took the whole pool and a plain call timed out unsent. runSync,
 * statusSync and stream polls past the limit wait here, in order: runSync and statusSync within their
 * own budget (as they waited for a socket in the pool), a stream poll for as long as its stream goes
 * on (the wait is the client's own, not the service's); waitFor polls /status instead.
 */
class HoldSlots {
  /** Slots a waitFor may hold (it polls /status without one): none with `connections: 1`, as before. */
  readonly #limit: number;
  /** Slots runSync, statusSync and stream polls may hold: one at least, as they cannot be sent otherwise. */
  readonly #sendLimit: number;
  #taken = 0;
  /** Calls waiting for a slot, first come first served. */
  readonly #waiting: SlotWaiter[] = [];
  /** Woken when no call waits any more (close() lets the queued calls be sent first). */
  #drained: Array<() => void> = [];
  /** close() began: no call takes a slot or joins the queue any more, so the queue only drains. */
  #closed = false;
  readonly #clock: JobClock;
  readonly #sizing: SlotSizing;
  /** A stream poll waited for a slot already: the warning is said once per client. */
  #streamWaitSaid = false;

  constructor(sizing: SlotSizing, clock: JobClock) {
    this.#clock = clock;
    this.#sizing = sizing;
    this.#limit =
      sizing.kind === "maxHeldCalls"
        ? sizing.maxHeldCalls
        : Math.floor((sizing.kind === "connections" ? sizing.connections : DEFAULT_CONNECTIONS) / 2);
    this.#sendLimit = Math.max(1, this.#limit);
  }

  /**
   * Whether a held call has the client's one socket (`connections: 1`, where plain calls share the
   * socket the held ones take): a run() or status() then waits behind it, up to a whole hold.
   */
  get holdsOnlySocket(): boolean {
    return this.#limit === 0 && this.#taken > 0;
  }

  /** Whether no call waits for a slot. */
  get idle(): boolean {
    return this.#waiting.length === 0;
  }

  /**
   * Takes a slot when one is free and no call waits for one before this one (no allocation): for a
   * runSync, statusSync or stream poll (`toSend`), else for a waitFor's hold.
   */
  tryTake(toSend: boolean): boolean {
    if (this.#taken >= (toSend ? this.#sendLimit : this.#limit) || this.#waiting.length > 0 || this.#closed) {
      return false;
    }
    this.#taken++;
    return true;
  }

  /** Gives the slot back: to the first call waiting for one, else to the pool of free slots. */
  release(): void {
    const next = this.#waiting.shift();
    if (next === undefined) this.#taken--;
    else next.admit();
    if (this.#waiting.length === 0) this.#wakeDrained();
  }

  /**
   * Waits for a slot within `budgetMs` (undefined: no bound but `signal` and close): resolves with what
   * is left of it (undefined when unbounded); rejects with a TimeoutError (never sent, so repeatable)
   * or, when `signal` fires or the client is closed with force (`forced`; forceClosed() then), an
   * AbortedError naming `operation`.
   */
  wait(
    operation: string,
    budgetMs: number | undefined,
    signal: AbortSignal | undefined,
    forced: AbortSignal,
  ): Promise<number | undefined> {
    if (this.#closed) {
      // Made after close(): refused as the closed client refuses it. Queued, a stream's next poll
      // rejoined the queue behind the others for as long as its job ran, and close() never resolved.
      return Promise.reject(
        new ValidationError({
          operation,
          message: `${operation}: the client was closed (close()); make a new client for further calls`,
        }),
      );
    }
    const since = this.#clock.now();
    return new Promise<number | undefined>((resolve, reject) => {
      const end = (error: RunpodkitError | undefined) => {
        timer?.cancel();
        signal?.removeEventListener("abort", onAbort);
        if (error === undefined) {
          resolve(budgetMs === undefined ? undefined : Math.max(1, budgetMs - (this.#clock.now() - since)));
          return;
        }
        const at = this.#waiting.indexOf(waiter);
        if (at >= 0) this.#waiting.splice(at, 1);
        if (this.#waiting.length === 0) this.#wakeDrained();
        reject(error);
      };
      // One listener per waiter on the caller's signal only: the client's force-close signal, shared by
      // every waiter, would warn (MaxListenersExceededWarning) past 10; forceClosed() ends them instead.
      const waiter: SlotWaiter = { admit: () => end(undefined), forceClosed: () => onAbort() };
      const onAbort = () =>
        end(
          new AbortedError({
            operation,
            message:
              forced.aborted && !signal?.aborted
                ? `${operation}: the client was closed with close({ force: true }) while the call waited to be sent`
                : `${operation}: aborted by the caller while the call waited to be sent (${this.#busy()})`,
            cause: signal?.aborted ? signal.reason : forced.reason,
          }),
        );
      // Unbounded (a stream poll): no timer; the caller's signal or close ends the wait.
      const timer =
        budgetMs === undefined
          ? undefined
          : this.#clock.setTimer(budgetMs, () =>
              end(
                new TimeoutError({
                  operation,
                  message: `${operation}: no reply within ${budgetMs} ms: not sent (${this.#busy()})`,
                }),
              ),
            );
      if (signal?.aborted || forced.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  /** close() began: the calls waiting keep their turn; no other takes a slot or waits for one. */
  close(): void {
    this.#closed = true;
  }

  /** Ends every call waiting for a slot with an AbortedError: the client was closed with force. */
  forceClosed(): void {
    for (const waiter of this.#waiting.slice()) waiter.forceClosed();
  }

  /** Once no call waits for a slot (at once when none does). */
  drained(): Promise<void> {
    if (this.#waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  /**
   * Said once per client when a stream poll first waits for a slot. That wait has no bound and fails
   * nothing, so without it a stream whose chunks were ready sat silent behind other streams' held
   * polls (up to the service's 10 s hold a turn) or long runSync calls, with nothing naming why.
   */
  warnStreamWaits(operation: string): void {
    if (this.#streamWaitSaid) return;
    this.#streamWaitSaid = true;
    process.emitWarning(
      `${operation}: a stream poll waits for a socket: ${this.#busy()}. It is sent when a held call ends (a stream poll within the service's 10 s hold, a runSync or statusSync within its wait), so its chunks arrive late; nothing fails. Said once per client`,
      { type: "RunpodkitWarning", code: "RUNPODKIT_HOLD_SLOTS_FULL" },
    );
  }

  /**
   * Why a call waits: every hold slot is taken, and what to raise for more. With a dispatcher it named
   * `connections`, which the client refuses beside one; it names `maxHeldCalls` there.
   */
  #busy(): string {
    const taken = `${this.#sendLimit} call(s) the service holds (runSync, statusSync, waitFor, stream polls) held every socket this client gives them`;
    switch (this.#sizing.kind) {
      case "connections":
        return `${taken}, half its connections (${this.#sizing.connections}); raise \`connections\` for more at once`;
      case "dispatcher":
        return `${taken}, by default 32 with a dispatcher (whose own limit the client cannot read); pass \`maxHeldCalls\`, below the dispatcher's connections per origin, for more at once`;
      case "maxHeldCalls":
        return `${taken} (maxHeldCalls: ${this.#sizing.maxHeldCalls}); raise \`maxHeldCalls\` (and the sockets under it) for more at once`;
    }
  }

  #wakeDrained(): void {
    if (this.#drained.length === 0) return;
    const wake = this.#drained;
    this.#drained = [];
    for (const resolve of wake) resolve();
  }
}

/** What a long wait rides out by default: a service restart takes longer than a call's retries. */
const DEFAULT_MAX_OUTAGE_MS = 60_000;

/** The longest one waitFor call is held by the service (GET /status-sync's `wait`; its default). */
const WAIT_HOLD_MS = JOB_LIMITS.runsyncWait.default;

/** What a held waitFor call leaves of the wait for the service's answer to arrive in. */
const HOLD_REPLY_MS = 1_000;

/** The shortest pause between polls that failed, so an outage is not polled in a tight loop. */
const OUTAGE_PAUSE_MS = 250;

/** The pause after a poll that failed: a 429's Retry-After when it has one, else at least OUTAGE_PAUSE_MS. */
function outagePause(pollIntervalMs: number, failure: RunpodkitError): number {
  return Math.min(MAX_TIMEOUT_MS, Math.max(pollIntervalMs, OUTAGE_PAUSE_MS, failure.retryAfterMs ?? 0));
}

/**
 * A failure that may pass while the job goes on in the service (the error's `retryable`: no
 * connection, a 5xx but 501, a 429, a poll that got no reply in time). The HTTP layer's retries are
 * spent by then; a long wait (waitFor, stream) polls on through it.
 */
function isPassing(error: unknown): error is RunpodkitError {
  return error instanceof RunpodkitError && error.retryable;
}

/** A poll interval or outage bound: 0 or more ms (NaN or a negative would poll without pause). */
function requirePause(value: unknown, operation: string, field = "pollIntervalMs"): void {
  if (typeof value === "number" && value >= 0 && value <= MAX_TIMEOUT_MS) return;
  throw new ValidationError({
    operation,
    field,
    message: `${operation}: ${field} must be a number of milliseconds from 0 to ${MAX_TIMEOUT_MS}, got ${String(value)}`,
  });
}

/** A call's `wait` (the service's hold, ms) and `timeoutMs`, refused before sending when unusable. */
function requireWait(options: RunSyncOptions, operation: string): number {
  const wait = options.wait ?? JOB_LIMITS.runsyncWait.default;
  if (!Number.isInteger(wait) || wait < JOB_LIMITS.runsyncWait.min || wait > JOB_LIMITS.runsyncWait.max) {
    throw new ValidationError({
      operation,
      field: "wait",
      message: `${operation}: wait must be an integer from ${JOB_LIMITS.runsyncWait.min} to ${JOB_LIMITS.runsyncWait.max} ms`,
    });
  }
  if (options.timeoutMs !== undefined) requireTimeoutMs(options.timeoutMs, operation);
  return wait;
}

/**
 * A status call's `ttl` (ms), refused before sending unless it is within the bounds the shared
 * schemas (StatusQuery, policy.ttl) give the service: NaN or 1.5 went out as `?ttl=NaN`, and a
 * statusSync waited for a hold slot before the service refused it.
 */
function requireTtl(ttl: unknown, operation: string): void {
  if (
    Number.isInteger(ttl) &&
    (ttl as number) >= JOB_LIMITS.ttl.min &&
    (ttl as number) <= JOB_LIMITS.ttl.max
  ) {
    return;
  }
  throw new ValidationError({
    operation,
    field: "ttl",
    message: `${operation}: ttl must be an integer from ${JOB_LIMITS.ttl.min} to ${JOB_LIMITS.ttl.max} ms (10 s to 7 days), got ${String(ttl)}`,
  });
}

/** The stream position a /stream reply names (STREAM_POSITION_HEADER), undefined when it names none. */
function streamPosition(headers: IncomingHttpHeaders): number | undefined {
  const parsed = StreamPosition.safeParse(headers[STREAM_POSITION_HEADER]);
  return parsed.success ? parsed.data : undefined;
}

/** Sets the job id on an SDK error that lacks it, so no failure of a job call loses the id. */
function withJobId(error: unknown, jobId: string): unknown {
  if (error instanceof RunpodkitError && error.jobId === undefined) {
    Object.defineProperty(error, "jobId", { value: jobId, enumerable: true });
  }
  return error;
}

/**
 * Client of the job API of one queue-based endpoint (/v2/{endpoint_id}). The key goes in
 * `authorization: Bearer`. One pool and one set of headers for every call.
 */
export class JobClient {
  readonly endpointId: string;
  readonly #http: HttpClient;
  readonly #timeoutMs: number;
  /** The largest reply this client reads: each stream poll says it, so the reply fits (local service). */
  readonly #maxReplyBytes: number;
  /** Whether the service holds /status-sync (false once it answered 404/405 for a job /status knows). */
  #holds = true;
  /** Which calls may hold a socket long: half the pool, shared by runSync, statusSync, waitFor and stream. */
  readonly #slots: HoldSlots;
  /**
   * Where this client's stream() of a job left off, for jobs whose stream() ended before the job did
   * (a `break`): the next stream() of the job goes on from there. Only with a service that names
   * stream positions (the local one).
   */
  readonly #streamPositions = new Map<string, number>();
  readonly #clock: JobClock;

  constructor(given: JobClientOptions) {
    const options = requireJobClientOptions(given);
    const base = new URL(
      requireBaseUrl(options.baseUrl ?? DEFAULT_JOBS_URL, "jobs", options.apiKey, "http://127.0.0.1:8080/v2"),
    );
    // Trimmed as the key is: one read from a CRLF .env kept its line break, and every call was a 404.
    const endpointId =
      typeof options.endpointId === "string" ? options.endpointId.trim() : options.endpointId;
    // The id goes on the path: appended to the whole URL, it landed after a `?query` or `#fragment`.
    const prefix = base.pathname.replace(/\/+$/, "");
    const segment = idSegment(endpointId, "jobs", "endpointId");
    // The endpoint's own URL pasted as baseUrl: every call went to /v2/{id}/{id}/..., a bare 404.
    if (prefix.endsWith(segment)) {
      throw new ValidationError({
        operation: "jobs",
        field: "baseUrl",
        message: `jobs: baseUrl ends with the endpoint id ${endpointId}, which the client appends itself: pass the job API's base, such as ${DEFAULT_JOBS_URL}, and the id as endpointId`,
      });
    }
    base.pathname = prefix + segment;
    base.hash = "";
    this.endpointId = endpointId;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#maxReplyBytes = options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;
    this.#clock = requireClock(options.clock);
    this.#slots = new HoldSlots(
      options.maxHeldCalls !== undefined
        ? {
            kind: "maxHeldCalls",
            maxHeldCalls: requireMaxHeldCalls(
              options.maxHeldCalls,
              // The client's own pool (64 by default); a dispatcher's size is the caller's to match.
              options.dispatcher === undefined ? (options.connections ?? DEFAULT_CONNECTIONS) : undefined,
            ),
          }
        : options.dispatcher !== undefined
          ? { kind: "dispatcher" }
          : { kind: "connections", connections: options.connections ?? DEFAULT_CONNECTIONS },
      this.#clock,
    );
    this.#http = clientHttp({ ...options, timeoutMs: this.#timeoutMs }, base.toString(), {
      authorization: `Bearer ${options.apiKey}`,
    });
    const slots = this.#slots;
    this.#http.forceClosed.addEventListener("abort", () => slots.forceClosed(), { once: true });
  }

  /**
   * A call the service answers at once (run, status, cancel, retry, purgeQueue, health). With
   * `connections: 1` it waits for the socket a held call has; timed out there, it said only "no reply
   * within ... ms", naming neither the held call nor the option to raise.
   */
  async #plain(call: HttpCall): Promise<unknown> {
    const heldBefore = this.#slots.holdsOnlySocket;
    try {
      return await this.#http.request(call);
    } catch (error) {
      if (error instanceof TimeoutError && (heldBefore || this.#slots.holdsOnlySocket)) {
        error.message += `; this client's one socket (\`connections: 1\`) was held meanwhile by a call the service holds (a stream poll up to 10 s, a runSync or statusSync up to its wait): give it \`connections: 2\` or more so such calls always find a socket`;
      }
      throw error;
    }
  }

  /** Submits a job (POST /run); answers at once with its id and IN_QUEUE. Retried only on 429. */
  async run(submission: JobInput, options: CallOptions = {}): Promise<JobAccepted> {
    const operation = "jobs.run";
    const body = validateInput(SubmissionToSend, submission, operation);
    const reply = await this.#plain({
      ...options,
      operation,
      method: "POST",
      path: "/run",
      body,
      retry: "rejected-only",
    });
    return parseReply(JobAccepted, reply, operation);
  }

  /**
   * Submits a job and waits for it (POST /runsync). The service holds the call up to `wait`, then
   * answers the result or, if the job is not done, `{id, status}` to poll with waitFor: the HTTP
   * budget is `wait` plus the client's timeoutMs, so the service's answer (and the id) comes first.
   * Calls the service holds (runSync, statusSync, waitFor's) use at most half the client's
   * `connections`; one past that waits for a slot, in order, within the same budget (a TimeoutError,
   * never sent, when it runs out), so run(), status() or cancel() meanwhile always find a socket.
   */
  async runSync(submission: JobInput, options: RunSyncOptions = {}): Promise<JobResult> {
    const operation = "jobs.runSync";
    const body = validateInput(SubmissionToSend, submission, operation);
    const wait = requireWait(options, operation);
    const budgetMs = Math.min(MAX_TIMEOUT_MS, wait + (options.timeoutMs ?? this.#timeoutMs));
    // Held up to `wait`: sent once a hold slot is free, the time waiting for it taken from the budget.
    const timeoutMs = this.#slots.tryTake(true)
      ? budgetMs
      : ((await this.#slots.wait(operation, budgetMs, options.signal, this.#http.forceClosed)) ?? budgetMs);
    let reply: unknown;
    try {
      reply = await this.#http.request({
        operation,
        method: "POST",
        path: "/runsync",
        query: { wait },
        body,
        retry: "rejected-only",
        signal: options.signal,
        timeoutMs,
      });
    } finally {
      this.#slots.release();
    }
    return parseReply(JobResultReply, reply, operation);
  }

  /**
   * GET /status-sync/{id}, runpod-sdk's `statusSync`: the service holds the call until the job is
   * terminal or `wait` passes, then answers its status (still IN_QUEUE or IN_PROGRESS after `wait`).
   * The HTTP budget is `wait` plus the client's timeoutMs, as runSync's, and it shares runSync's hold
   * slots (half the client's `connections`). `ttl` (ms) resets its lifetime.
   */
  async statusSync(jobId: string, options: RunSyncOptions & { ttl?: number } = {}): Promise<JobResult> {
    const operation = "jobs.statusSync";
    const wait = requireWait(options, operation);
    if (options.ttl !== undefined) requireTtl(options.ttl, operation);
    // Refused before it waits for a hold slot: a caller's mistake is no timeout.
    const path = `/status-sync${idSegment(jobId, operation, "jobId")}`;
    const budgetMs = Math.min(MAX_TIMEOUT_MS, wait + (options.timeoutMs ?? this.#timeoutMs));
    let timeoutMs = budgetMs;
    if (!this.#slots.tryTake(true)) {
      try {
        timeoutMs =
          (await this.#slots.wait(operation, budgetMs, options.signal, this.#http.forceClosed)) ?? budgetMs;
      } catch (error) {
        throw withJobId(error, jobId);
      }
    }
    try {
      return await this.#statusSync(operation, jobId, path, wait, { ...options, timeoutMs });
    } finally {
      this.#slots.release();
    }
  }

  /**
   * GET /status-sync/{id} held up to `wait` on behalf of `operation` (statusSync, waitFor's holds),
   * its hold slot taken by the caller.
   */
  async #statusSync(
    operation: string,
    jobId: string,
    path: string,
    wait: number,
    options: CallOptions & { ttl?: number },
  ): Promise<JobResult> {
    try {
      const reply = await this.#http.request({
        operation,
        method: "GET",
        path,
        query: { wait, ttl: options.ttl },
        signal: options.signal,
        timeoutMs: options.timeoutMs,
      });
      return parseReply(JobResultReply, reply, operation);
    } catch (error) {
      throw withJobId(error, jobId);
    }
  }

  /** GET /status/{id}. A job whose TTL passed is a NotFoundError. `ttl` (ms) resets its lifetime. */
  status(jobId: string, options: CallOptions & { ttl?: number } = {}): Promise<JobResult> {
    return this.#status("jobs.status", jobId, options);
  }

  /** GET /status/{id} on behalf of `operation` (status itself, or waitFor's polls), named in errors. */
  async #status(
    operation: string,
    jobId: string,
    options: CallOptions & { ttl?: number },
  ): Promise<JobResult> {
    // Checked only when given: a plain status() pays one comparison.
    if (options.ttl !== undefined) requireTtl(options.ttl, operation);
    const path = `/status${idSegment(jobId, operation, "jobId")}`;
    try {
      const reply = await this.#plain({
        operation,
        method: "GET",
        path,
        query: options.ttl === undefined ? undefined : { ttl: options.ttl },
        signal: options.signal,
        timeoutMs: options.timeoutMs,
      });
      return parseReply(JobResultReply, reply, operation);
    } catch (error) {
      throw withJobId(error, jobId);
    }
  }

  /** POST /cancel/{id}: CANCELLED. Cancelling twice leaves the same state, so it may be retried. */
  cancel(jobId: string, options: CallOptions = {}): Promise<JobAccepted> {
    return this.#jobCall("jobs.cancel", "/cancel", jobId, options, "idempotent");
  }

  /** POST /retry/{id}: a FAILED or TIMED_OUT job goes back to IN_QUEUE with the same id. */
  retry(jobId: string, options: CallOptions = {}): Promise<JobAccepted> {
    return this.#jobCall("jobs.retry", "/retry", jobId, options, "rejected-only");
  }

  /** POST /purge-queue: removes every queued job (running ones continue). */
  async purgeQueue(options: CallOptions = {}): Promise<PurgeReply> {
    const operation = "jobs.purgeQueue";
    const reply = await this.#plain({
      ...options,
      operation,
      method: "POST",
      path: "/purge-queue",
      retry: "idempotent",
    });
    return parseReply(PurgeReply, reply, operation);
  }

  /** GET /health: job counts and worker states. */
  async health(options: CallOptions = {}): Promise<HealthReply> {
    const operation = "jobs.health";
    const reply = await this.#plain({ ...options, operation, method: "GET", path: "/health" });
    return parseReply(HealthReply, reply, operation);
  }

  /**
   * Waits for the job to be terminal (COMPLETED, FAILED, CANCELLED or TIMED_OUT) and returns that
   * envelope. Each wait is one call the service holds until the job ends (GET /status-sync, up to
   * 90 s a call; at most half the client's sockets are held at once, and the waits past that poll
   * /status), so the result comes as soon as the job ends; a service without /status-sync (it
   * answers 404 or 405 for a job /status knows) is polled on /status every `pollIntervalMs` instead,
   * as are the last two seconds of the wait and, for a hold's length, a wait whose held call the service
   * refused with a 429 (its held calls full). Gives up after `timeoutMs` with a TimeoutError that carries
   * the job id (`jobId`) and the last status seen (`jobStatus`, undefined when no call answered); the
   * job itself keeps running. Calls that fail for a reason that passes (a service restart, a 5xx, a
   * 429) are made again for up to `maxOutageMs`; any other failure (an unknown job, ...) is thrown at
   * once, as this operation's. close() ends a held call at once (the wait then fails as a closed
   * client's call).
   */
  async waitFor(jobId: string, options: WaitOptions = {}): Promise<JobResult> {
    const operation = "jobs.waitFor";
    const timeoutMs = options.timeoutMs ?? 600_000;
    const pollIntervalMs = options.pollIntervalMs ?? 1_000;
    const maxOutageMs = options.maxOutageMs ?? DEFAULT_MAX_OUTAGE_MS;
    requireTimeoutMs(timeoutMs, operation);
    requirePause(pollIntervalMs, operation);
    requirePause(maxOutageMs, operation, "maxOutageMs");
    const deadline = this.#clock.now() + timeoutMs;
    let last: JobStatus | undefined;
    // The failure of the calls since the last answer, and since when they fail.
    let outage: RunpodkitError | undefined;
    let outageSince = 0;
    // When this wait may hold a call again after the service refused one (429: its held calls are full).
    let holdsFrom = 0;
    for (;;) {
      const remaining = deadline - this.#clock.now();
      if (remaining <= 0) {
        throw new TimeoutError({
          operation,
          jobId,
          jobStatus: last,
          message:
            `${operation}: job ${jobId} not finished within ${timeoutMs} ms (last status ${last ?? "unknown"})` +
            (outage ? `; the last polls failed: ${outage.message}` : ""),
          cause: outage,
        });
      }
      // The service's hold of this call, when it is held: not below the service's least `wait`, not
      // once close() began (the closed client then refuses the plain call), and only in a free hold
      // slot (taken last, released by #held): else this call is a /status poll.
      const hold =
        this.#holds &&
        remaining - HOLD_REPLY_MS >= JOB_LIMITS.runsyncWait.min &&
        this.#clock.now() >= holdsFrom &&
        !this.#http.closeBegun.aborted &&
        this.#slots.tryTake(false)
          ? Math.min(remaining - HOLD_REPLY_MS, WAIT_HOLD_MS)
          : undefined;
      const sent = this.#clock.now();
      let envelope: JobResult | undefined;
      try {
        envelope =
          hold === undefined
            ? await this.#status(operation, jobId, {
                signal: options.signal,
                timeoutMs: Math.min(remaining, this.#timeoutMs),
              })
            : await this.#held(operation, jobId, hold, remaining, options.signal);
        outage = undefined;
      } catch (error) {
        if (error instanceof AbortedError && !options.signal?.aborted && this.#http.closeBegun.aborted) {
          // close() ended the held call. Forced: say so; plain: the next call is refused as a closed client's.
          if (this.#http.forceClosed.aborted) throw this.#closedWithForce(operation, jobId, error);
          continue;
        }
        // No room for another held call (a 429): poll /status after its Retry-After, holding again a
        // hold's length later. Not an outage by itself: the poll may well be answered.
        const holdRefused = hold !== undefined && error instanceof RateLimitedError;
        if (holdRefused) holdsFrom = this.#clock.now() + WAIT_HOLD_MS;
        // The per-call budget was cut to the wait's remainder: report the wait's timeout.
        const waitOver = error instanceof TimeoutError && deadline - this.#clock.now() <= 0;
        if (!waitOver) {
          if (!isPassing(error)) throw error;
          if (outage === undefined) outageSince = this.#clock.now();
          outage = error;
          if (!holdRefused && this.#clock.now() - outageSince >= maxOutageMs) throw error;
        }
      }
      if (envelope) {
        if (isTerminalJobStatus(envelope.status)) return envelope;
        last = envelope.status;
        // A held call has waited already; one answered early (a service that does not hold) has not.
        if (hold !== undefined && this.#clock.now() - sent >= hold / 2) continue;
      }
      const pause = outage ? outagePause(pollIntervalMs, outage) : pollIntervalMs;
      await this.#pause(
        operation,
        jobId,
        Math.min(pause, Math.max(0, deadline - this.#clock.now())),
        options.signal,
      );
    }
  }

  /**
   * One waitFor call held by the service up to `hold` (GET /status-sync) in the hold slot the caller
   * took; close() ends it. A 404 or 405 is a service without /status-sync or an unknown job: /status
   * tells which, and in the first case this client polls /status from then on.
   */
  async #held(
    operation: string,
    jobId: string,
    hold: number,
    remaining: number,
    signal: AbortSignal | undefined,
  ): Promise<JobResult> {
    const closing = this.#http.closeBegun;
    try {
      const path = `/status-sync${idSegment(jobId, operation, "jobId")}`;
      return await this.#statusSync(operation, jobId, path, hold, {
        signal: signal ? AbortSignal.any([signal, closing]) : closing,
        // The hold plus the client's budget, within the wait: the hold ends HOLD_REPLY_MS before it.
        timeoutMs: Math.min(remaining, hold + this.#timeoutMs),
      });
    } catch (error) {
      if (!(error instanceof RunpodkitError && (error.status === 404 || error.status === 405))) throw error;
      const envelope = await this.#status(operation, jobId, {
        signal,
        timeoutMs: Math.min(remaining, this.#timeoutMs),
      });
      this.#holds = false;
      return envelope;
    } finally {
      this.#slots.release();
    }
  }

  #closedWithForce(operation: string, jobId: string, cause: unknown): AbortedError {
    return new AbortedError({
      operation,
      jobId,
      message: `${operation}: the client was closed with close({ force: true }) while waiting for job ${jobId}`,
      cause,
    });
  }

  /**
   * Streams a job's output chunks (GET /stream/{id}, which drains what was buffered since the last
   * call; the local service hands out at most 4 MiB a reply, the rest on the next poll). A terminal
   * status ends the stream once a reply carries no chunk: COMPLETED ends the iteration (its return value);
   * FAILED, CANCELLED and TIMED_OUT throw a JobFailedError carrying the job id, the final status
   * (`jobStatus`) and the job's error when it has one, so a for-await loop never mistakes them for
   * success. Polls that fail for a reason that passes (a service restart, a 5xx, a 429) are polled
   * through for up to `maxOutageMs`, and the stream goes on where it was: a service that names
   * stream positions (the local one) hands a reply that did not arrive whole out again; with one
   * that does not, a reply cut after it began is a StreamInterruptedError. Each poll (held by the
   * service up to 10 s when no chunk is ready) takes one of the hold slots runSync takes (half the
   * client's `connections`, or `maxHeldCalls`). When they are all taken (by long runSync calls,
   * say) the poll waits its turn, in order, for as long as it takes: that wait is the client's own,
   * not an outage, so it neither counts toward `maxOutageMs` nor shortens the poll's `timeoutMs`,
   * which starts once the poll is sent. Only `signal` (an AbortedError saying every slot was busy
   * and naming the option to raise, `connections` or `maxHeldCalls`) or close({ force: true }) ends
   * it; the client's first such wait emits one process warning (code RUNPODKIT_HOLD_SLOTS_FULL)
   * naming it too. A stream() left before the job ended (a `break`) goes on, on this client, after
   * the last chunk it yielded.
   */
  async *stream(
    jobId: string,
    options: StreamOptions = {},
  ): AsyncGenerator<StreamChunk, JobStatus, undefined> {
    const operation = "jobs.stream";
    const path = `/stream${idSegment(jobId, operation, "jobId")}`;
    const pollIntervalMs = options.pollIntervalMs ?? 250;
    const maxOutageMs = options.maxOutageMs ?? DEFAULT_MAX_OUTAGE_MS;
    requirePause(pollIntervalMs, operation);
    requirePause(maxOutageMs, operation, "maxOutageMs");
    if (options.timeoutMs !== undefined) requireTimeoutMs(options.timeoutMs, operation);
    // The service holds an empty poll up to its hold: each poll gets that on top of the call's
    // budget (as runSync gets its wait), so a short client budget does not cut a held poll.
    const pollBudgetMs = Math.min(
      MAX_TIMEOUT_MS,
      JOB_LIMITS.streamHold.max + (options.timeoutMs ?? this.#timeoutMs),
    );
    // When the polls started failing (undefined: the last one answered).
    let outageSince: number | undefined;
    let chunksReceived = 0;
    // The stream position after the last reply received whole, when the service names it (the local
    // service; STREAM_POSITION_HEADER): sent with each poll, so a reply that never arrived whole is
    // handed out again. Undefined while no reply named it (the real service hands each chunk once).
    // A stream() of this job left early on this client goes on where it left.
    let position: number | undefined = this.#streamPositions.get(jobId);
    this.#streamPositions.delete(jobId);
    // The position after the last chunk yielded: what a stream() left early has taken.
    let yielded = position;
    let ended = false;
    try {
      for (;;) {
        let reply: StreamReply;
        try {
          // The service holds an empty poll: it takes a hold slot as runSync does, else a few streams
          // took every socket and a run() went unsent. Waiting for one (in order) is the client's own
          // contention, not an outage: unbounded but by the signal and close, not in maxOutageMs, and
          // the poll then gets its whole budget. Bounded by the poll's budget, a stream behind long
          // runSync calls failed as an outage, and a poll admitted late was cut during its hold.
          if (!this.#slots.tryTake(true)) {
            this.#slots.warnStreamWaits(operation);
            const queued = this.#clock.now();
            await this.#slots.wait(operation, undefined, options.signal, this.#http.forceClosed);
            if (outageSince !== undefined) outageSince += this.#clock.now() - queued;
          }
          let answer: HttpReply;
          try {
            answer = await this.#http.exchange({
              operation,
              method: "GET",
              path,
              // The limit too: the local service's 4 MiB reply passes a smaller one (the real one
              // ignores both).
              query: { received: position ?? 0, maxReplyBytes: this.#maxReplyBytes },
              signal: options.signal,
              timeoutMs: pollBudgetMs,
              // Sent again here only when it never reached the service: a poll it answered handed chunks
              // out, and a resend the service cannot match to the lost reply would skip them.
              retry: "rejected-only",
              // This loop sends a failed poll again (one cut mid-reply is handled below): its failures pass.
              repeatable: true,
            });
          } finally {
            // Given back before the chunks are yielded: a slow consumer holds no socket.
            this.#slots.release();
          }
          if (answer.status < 200 || answer.status >= 300) throw this.#http.errorFor(operation, answer);
          reply = parseReply(StreamReply, this.#http.parseJson(operation, answer.text), operation);
          position = streamPosition(answer.headers);
          outageSince = undefined;
        } catch (error) {
          const cut = error instanceof RunpodkitError ? error.cause : undefined;
          const cutAfter = replyCutStatus(cut);
          // A service that names stream positions hands a reply its reader did not receive whole out
          // again on the next poll (the cut reply's own header says so for a first poll).
          const handsOutAgain =
            position !== undefined || streamPosition(replyCutHeaders(cut) ?? {}) !== undefined;
          if (cutAfter !== undefined && cutAfter < 300 && !handsOutAgain) {
            // The service had answered: the chunks in that reply were handed out and are gone. Going
            // on would yield the stream with a hole in it; say so instead.
            throw new StreamInterruptedError({
              operation,
              jobId,
              chunksReceived,
              message: `${operation}: job ${jobId}: a /stream reply was cut after the service had begun it (${error instanceof Error ? error.message : String(error)}); the service hands each chunk out once, so the chunks in that reply are lost to this stream (${chunksReceived} chunk(s) were received before it). The job goes on: read its final status and output with status() or waitFor()`,
              cause: error,
            });
          }
          outageSince ??= this.#clock.now();
          if (!isPassing(error) || this.#clock.now() - outageSince >= maxOutageMs)
            throw withJobId(error, jobId);
          await this.#pause(operation, jobId, outagePause(pollIntervalMs, error), options.signal);
          continue;
        }
        // This reply's chunks begin at its position less their count.
        yielded = position === undefined ? undefined : position - reply.stream.length;
        for (const chunk of reply.stream) {
          chunksReceived++;
          // Counted before the yield: a consumer that breaks out there has taken this chunk.
          if (yielded !== undefined) yielded++;
          yield chunk;
        }
        // A reply bounds its chunks (the local service: 4 MiB): a job that ended may have more
        // buffered, so an end is taken from a reply with none left, as the Python library does.
        if (isTerminalJobStatus(reply.status) && reply.stream.length > 0) continue;
        // The job's stream is over: no position to keep.
        if (isTerminalJobStatus(reply.status)) ended = true;
        if (reply.status === "COMPLETED") return reply.status;
        // Any other end throws: a for-await loop drops the return value, so an end without an error
        // would read as success.
        if (isTerminalJobStatus(reply.status)) {
          const detail =
            reply.error ??
            (reply.status === "FAILED" ? await this.#failureOf(jobId, options.signal) : undefined);
          throw new JobFailedError({
            operation,
            jobId,
            jobStatus: reply.status,
            message: `${operation}: job ${jobId} ${reply.status}${detail ? `: ${detail}` : ""}`,
          });
        }
        if (reply.stream.length === 0) await this.#pause(operation, jobId, pollIntervalMs, options.signal);
      }
    } finally {
      if (!ended && yielded !== undefined) this.#keepStreamPosition(jobId, yielded);
    }
  }

  #keepStreamPosition(jobId: string, position: number): void {
    const positions = this.#streamPositions;
    if (positions.size >= KEPT_STREAM_POSITIONS) {
      const oldest = positions.keys().next().value;
      if (oldest !== undefined) positions.delete(oldest);
    }
    positions.set(jobId, position);
  }

  /**
   * Closes the client once its calls in flight have ended (a `/runsync` or `/stream` poll the service
   * holds ends when its hold does; a runSync, statusSync or stream poll waiting for a hold slot is
   * sent first, and one made after close() is refused). `{ force: true }` ends them at once instead:
   * each call in flight (and a `waitFor` or `stream` between polls) rejects with an AbortedError
   * naming its operation.
   */
  close(options?: CloseOptions): Promise<void> {
    // runSync, statusSync and stream polls still waiting for a hold slot were made before close():
    // they are sent first, as a call in the pool's queue was. A call right after close() is refused.
    this.#slots.close();
    if (options?.force === true || this.#slots.idle) return this.#http.close(options);
    return this.#slots.drained().then(() => this.#http.close(options));
  }

  async #jobCall(
    operation: string,
    prefix: string,
    jobId: string,
    options: CallOptions,
    retry: "idempotent" | "rejected-only",
  ): Promise<JobAccepted> {
    const path = prefix + idSegment(jobId, operation, "jobId");
    try {
      const reply = await this.#plain({ ...options, operation, method: "POST", path, retry });
      return parseReply(JobAccepted, reply, operation);
    } catch (error) {
      throw withJobId(error, jobId);
    }
  }

  /** The `error` of a failed job, when /stream did not carry it. */
  async #failureOf(jobId: string, signal: AbortSignal | undefined): Promise<string | undefined> {
    try {
      return (await this.status(jobId, { signal })).error;
    } catch {
      return undefined;
    }
  }

  async #pause(operation: string, jobId: string, ms: number, signal: AbortSignal | undefined): Promise<void> {
    const forced = this.#http.forceClosed;
    try {
      await this.#clock.sleep(ms, signal ? AbortSignal.any([signal, forced]) : forced);
    } catch (error) {
      if (forced.aborted && !signal?.aborted) throw this.#closedWithForce(operation, jobId, error);
      throw new AbortedError({
        operation,
        jobId,
        message: `${operation}: aborted by the caller`,
        cause: error,
      });
    }
  }
}
