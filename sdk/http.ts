import type { IncomingHttpHeaders } from "node:http";
import type { Duplex } from "node:stream";
import { type Dispatcher, Pool, RetryHandler } from "undici";
import {
  dispatchWhole,
  EXCHANGE_TIMEOUT_CODE,
  exchangeTimeout,
  type HttpReply,
  NEVER_SENT_CODES,
  REPLY_TOO_LARGE_CODE,
} from "./dispatch-reply";
import {
  AbortedError,
  ConnectionError,
  errorForStatus,
  ProtocolError,
  parseRetryAfter,
  type RunpodkitError,
  TimeoutError,
  ValidationError,
} from "./errors";

/**
 * The one HTTP layer of the SDK: one keep-alive undici Pool per client (per origin). A call's first
 * attempt goes to the pool as it is; a failure the call's retry mode allows takes the retry path
 * (the policy's backoff, then undici's RetryHandler, composed once as an interceptor on the same
 * pool). Calls only say whether they may be retried.
 */

/**
 * - "idempotent": retried on 429, 5xx (except 501) and connection errors (GET, PUT, DELETE, PATCH-like
 *   replaces, GraphQL queries, POSTs that are safe to repeat).
 * - "rejected-only": retried on 429, which the service sends before doing anything, and when no
 *   connection could be set up (refused, connect timeout): the request was never sent (job submit).
 * - "never": sent once (non-idempotent POSTs, GraphQL mutations).
 */
export type { HttpReply } from "./dispatch-reply";

export type RetryMode = "idempotent" | "rejected-only" | "never";

export interface RetryPolicy {
  /** Retries after the first attempt (default 3, so at most 4 attempts). */
  retries?: number | undefined;
  /** First backoff step (default 250 ms); doubles each retry, with jitter. */
  baseDelayMs?: number | undefined;
  /** Cap of one backoff step (default 8 s). */
  maxDelayMs?: number | undefined;
  /** A longer Retry-After is not waited for: the 429 goes back to the caller (default 60 s). */
  maxRetryAfterMs?: number | undefined;
  /** Runs the retry after the delay; injectable so tests need not wait (default setTimeout). */
  schedule?: ((run: () => void, delayMs: number) => unknown) | undefined;
  /** Source of jitter in [0, 1) (default Math.random). */
  random?: (() => number) | undefined;
}

export interface HttpClientOptions {
  /** Origin plus path prefix and optional fixed query, e.g. "https://rest.runpod.io/v1". */
  baseUrl: string;
  /** Sent with every call (auth). Built once. */
  headers?: Record<string, string> | undefined;
  /**
   * Client-side budget of one call (default 30 s): each attempt (waiting for a connection, sending, the
   * whole reply) ends within it, on a native timer; no retry starts whose backoff would end past it.
   */
  timeoutMs?: number | undefined;
  retry?: RetryPolicy | undefined;
  /** Removed from every error text. */
  secrets?: readonly string[] | undefined;
  /** Max sockets to the origin (default 64). */
  connections?: number | undefined;
  /**
   * Sends every call through this undici Dispatcher (a ProxyAgent or EnvHttpProxyAgent behind a proxy,
   * an Agent with TLS options) instead of the client's own pool. It stays the caller's: close() waits
   * for the client's calls on it (or, with force, aborts them) but leaves it open.
   */
  dispatcher?: Dispatcher | undefined;
  /** The largest reply body read, in bytes (default 256 MiB); a larger one is a ProtocolError. */
  maxReplyBytes?: number | undefined;
}

/** Default bound of a reply: above the service's largest (a 100 MB job result, JSON-escaped). */
export const DEFAULT_MAX_REPLY_BYTES = 256 * 1024 * 1024;

/** The most a reply may be: V8's longest string (a reply is read whole into one). */
export const MAX_REPLY_BYTES = 0x1fffffe8;

/** A reply bound, refused unless it is an integer of bytes in 1..MAX_REPLY_BYTES. */
export function requireMaxReplyBytes(value: unknown, operation: string): void {
  if (Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_REPLY_BYTES) return;
  throw new ValidationError({
    operation,
    field: "maxReplyBytes",
    message: `${operation}: maxReplyBytes must be an integer of bytes from 1 to ${MAX_REPLY_BYTES}, got ${String(value)}`,
  });
}

export interface CallOptions {
  /** Aborts the call at once (AbortedError). */
  signal?: AbortSignal | undefined;
  /** Overrides the client's time budget for this call (TimeoutError). */
  timeoutMs?: number | undefined;
}

/** How `close()` ends: see HttpClient.close. */
export interface CloseOptions {
  /**
   * End the calls in flight at once (each rejects with an AbortedError) instead of waiting for them:
   * a `/runsync` or `/stream` poll the service holds, a backoff between retries, a `waitFor` pause.
   */
  force?: boolean | undefined;
}

/** Arrays repeat the parameter (`a=1&a=2`). */
export type QueryValue = string | number | boolean | undefined | null | readonly string[];

export interface HttpCall extends CallOptions {
  /** Names the call in errors, e.g. "rest.templates.create". */
  operation: string;
  method: Dispatcher.HttpMethod;
  /** Appended to the base path. */
  path: string;
  query?: Record<string, QueryValue>;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as is, with `content-type: application/json` (for an already serialized body). */
  rawBody?: string;
  /** Default: "idempotent" for GET/HEAD/PUT/DELETE, "never" otherwise. */
  retry?: RetryMode;
  /**
   * Whether the call is safe for its caller to send again, for its errors' `retryable` (default: its
   * retry mode is "idempotent"). A /stream poll is, though the HTTP layer resends it only unsent.
   */
  repeatable?: boolean;
}

const CONNECTION_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENETDOWN",
  "ENETUNREACH",
  "EHOSTDOWN",
  "EHOSTUNREACH",
  "EPIPE",
  "ETIMEDOUT",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** An attempt's own timer ran out (undici's timeouts are off, but a caller's dispatcher may set them). */
const TIMEOUT_CODES = new Set([EXCHANGE_TIMEOUT_CODE, "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/** The longest budget a timer can hold: Node fires a longer setTimeout after 1 ms. */
export const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * A time budget, refused before anything is sent (a ValidationError naming the option) unless it is
 * a number of milliseconds in 1..MAX_TIMEOUT_MS. 0 is refused too: undici reads it as "no timeout",
 * which the SDK does not offer (a call always ends; an AbortSignal ends it sooner).
 */
export function requireTimeoutMs(value: unknown, operation: string, field = "timeoutMs"): void {
  if (typeof value === "number" && value >= 1 && value <= MAX_TIMEOUT_MS) return;
  throw new ValidationError({
    operation,
    field,
    message:
      `${operation}: ${field} must be a number of milliseconds from 1 to ${MAX_TIMEOUT_MS} (about 24.8 days), ` +
      `got ${String(value)}; there is no "no timeout": for a very long call pass a large ${field}, and an AbortSignal to end it yourself`,
  });
}

/** A retry count, refused unless it is a non-negative integer (NaN would retry without a bound). */
export function requireRetries(value: unknown, operation: string, field = "retries"): void {
  if (Number.isInteger(value) && (value as number) >= 0) return;
  throw new ValidationError({
    operation,
    field,
    message: `${operation}: ${field} must be an integer of 0 or more, got ${String(value)}`,
  });
}

/**
 * A call's JSON body, or a ValidationError (before anything is sent) naming the operation and the
 * top-level field JSON cannot encode (a BigInt, a cycle, a throwing toJSON): a caller's mistake is no
 * connection error to be retried.
 */
function jsonBody(call: HttpCall, secrets: readonly string[]): string {
  try {
    return JSON.stringify(call.body);
  } catch (error) {
    const body = call.body;
    let field: string | undefined;
    if (body !== null && typeof body === "object" && !Array.isArray(body)) {
      // Only on failure: the first field that does not encode on its own.
      field = Object.keys(body).find((key) => {
        try {
          JSON.stringify((body as Record<string, unknown>)[key]);
          return false;
        } catch {
          return true;
        }
      });
    }
    throw new ValidationError({
      operation: call.operation,
      field,
      message: `${call.operation}: ${field ?? "the body"} cannot be sent as JSON: ${error instanceof Error ? error.message : String(error)}`,
      secrets,
    });
  }
}

/**
 * undici's retry interceptor, without its per-call copies: each call already carries its
 * `retryOptions` (one shared object per mode), so nothing is merged; RetryHandler does the rest.
 */
const retryInterceptor: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) =>
  dispatch(opts, new RetryHandler(opts, { dispatch, handler }));

/**
 * One attempt of the retry path, bounded by a native timer of its own (`attemptTimeoutMs`), as the
 * first attempt is by dispatchWhole's: undici's headers/body timeouts run on its coarse timers (a
 * 100 ms budget fired after about 1 s). Composed below the retry interceptor, so each attempt
 * RetryHandler makes gets its timer; a failure path only, so the hot path pays nothing for it.
 */
const attemptTimeoutInterceptor: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) => {
  const timeoutMs = (opts as Partial<RetryingRequest>).attemptTimeoutMs;
  if (timeoutMs === undefined) return dispatch(opts, handler);
  return dispatch(opts, new TimedAttempt(handler, exchangeTimeout(opts, timeoutMs), timeoutMs));
};

class TimedAttempt implements Dispatcher.DispatchHandler {
  readonly #handler: Dispatcher.DispatchHandler;
  readonly #timer: NodeJS.Timeout;
  #controller: Dispatcher.DispatchController | undefined;
  /** The timeout, once it fired. */
  #expired: Error | undefined;
  /** The attempt's outcome went to the handler: nothing more is forwarded. */
  #settled = false;

  constructor(handler: Dispatcher.DispatchHandler, timeout: Error, timeoutMs: number) {
    this.#handler = handler;
    this.#timer = setTimeout(() => this.#expire(timeout), timeoutMs);
    this.#timer.unref();
  }

  #expire(timeout: Error): void {
    this.#expired = timeout;
    if (this.#controller !== undefined) {
      this.#controller.abort(timeout);
      return;
    }
    // Still queued or connecting: the attempt fails now; the request is dropped when it starts.
    this.#settled = true;
    this.#handler.onResponseError?.(null as unknown as Dispatcher.DispatchController, timeout);
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.#controller = controller;
    if (this.#expired !== undefined) {
      controller.abort(this.#expired);
      return;
    }
    this.#handler.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    socket: Duplex,
  ): void {
    this.#handler.onRequestUpgrade?.(controller, statusCode, headers, socket);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
    statusMessage?: string,
  ): void {
    if (!this.#settled) this.#handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.#settled) this.#handler.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    clearTimeout(this.#timer);
    if (this.#settled) return;
    this.#settled = true;
    this.#handler.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    clearTimeout(this.#timer);
    if (this.#settled) return;
    this.#settled = true;
    this.#handler.onResponseError?.(controller, error);
  }
}

/** What the policy looks at after a failed attempt: the reply's status and Retry-After, or the error's code. */
interface Failure {
  statusCode?: number;
  code?: string;
  retryAfter?: string | string[];
}

const NEVER_SENT = new Set(NEVER_SENT_CODES);

/** A call's retry mode: its own, else by method. */
function modeOf(call: HttpCall): RetryMode {
  return call.retry ?? (SAFE_METHODS.has(call.method) ? "idempotent" : "never");
}

function isRetryable(mode: RetryMode, failure: Failure): boolean {
  if (mode === "never") return false;
  if (failure.statusCode !== undefined) {
    if (failure.statusCode === 429) return true;
    return mode === "idempotent" && failure.statusCode >= 500 && failure.statusCode !== 501;
  }
  if (failure.code === undefined) return false;
  return mode === "idempotent" ? CONNECTION_CODES.has(failure.code) : NEVER_SENT.has(failure.code);
}

/** A reply the policy may retry (429, 5xx): looked at once per call, before anything else. */
const mayRetryStatus = (status: number): boolean => status === 429 || status >= 500;

/**
 * The one retry policy: after `failed` failed attempts (1 after the first), the backoff before the
 * next attempt, or undefined when the failure goes back to the caller.
 */
function backoffAfter(
  mode: RetryMode,
  policy: Required<RetryPolicy>,
  failure: Failure,
  failed: number,
  deadline: number,
): number | undefined {
  if (!isRetryable(mode, failure) || failed > policy.retries) return undefined;
  const retryAfter = parseRetryAfter(failure.retryAfter);
  if (retryAfter !== undefined && retryAfter > policy.maxRetryAfterMs) return undefined;
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (failed - 1));
  // Equal jitter: never zero, never in lockstep with other clients.
  const delay = retryAfter ?? step / 2 + (policy.random() * step) / 2;
  // The budget covers the retries: one that would start past the deadline is not made.
  return Date.now() + delay >= deadline ? undefined : delay;
}

/**
 * The decision undici's RetryHandler asks for after each failed attempt of the retry path. That path
 * starts after the first attempt (sent plainly) failed, so its counter is one behind the call's.
 */
function retryDecider(mode: RetryMode, policy: Required<RetryPolicy>): RetryHandler.RetryCallback {
  return (error, { state, opts }, done) => {
    const shape = error as {
      statusCode?: number;
      code?: string;
      headers?: Record<string, string | string[]>;
    };
    // RetryHandler reports a reply it may retry as UND_ERR_REQ_RETRY with the reply's status.
    const failure: Failure =
      shape.code === "UND_ERR_REQ_RETRY" && shape.statusCode !== undefined
        ? { statusCode: shape.statusCode, retryAfter: shape.headers?.["retry-after"] }
        : { code: shape.code };
    const { deadline } = opts as unknown as { deadline: number };
    const delay = backoffAfter(mode, policy, failure, state.counter + 1, deadline);
    if (delay === undefined) return done(error);
    // undici clears the returned timer when the caller aborts during the backoff.
    return policy.schedule(() => done(null), delay) as undefined;
  };
}

function defaultPolicy(policy: RetryPolicy = {}): Required<RetryPolicy> {
  return {
    retries: policy.retries ?? 3,
    baseDelayMs: policy.baseDelayMs ?? 250,
    maxDelayMs: policy.maxDelayMs ?? 8_000,
    maxRetryAfterMs: policy.maxRetryAfterMs ?? 60_000,
    schedule: policy.schedule ?? ((run, ms) => setTimeout(run, ms)),
    random: policy.random ?? Math.random,
  };
}

type RetryingRequest = Dispatcher.DispatchOptions & {
  retryOptions: RetryHandler.RetryOptions;
  /** Epoch ms the call's budget ends; read back by the retry decider. */
  deadline: number;
  /** Each attempt's budget; read back by the attempt-timeout interceptor. */
  attemptTimeoutMs: number;
};

export class HttpClient {
  /** The client's own pool; undefined when calls go through the caller's dispatcher. */
  readonly #pool: Pool | undefined;
  readonly #dispatcher: Dispatcher;
  readonly #origin: string;
  /**
   * Calls under way, which close() waits for: a pool knows only of its attempts, not of a call
   * between them (in a retry's backoff), nor of anything on a caller's dispatcher.
   */
  #active = 0;
  /** What waits for #active to come to 0 (close()). */
  #idleWaiters: Array<() => void> = [];
  readonly #retrying: Dispatcher;
  readonly #basePath: string;
  readonly #baseQuery: string;
  readonly #headers: Record<string, string>;
  readonly #jsonHeaders: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #maxReplyBytes: number;
  readonly #secrets: readonly string[];
  readonly #policy: Required<RetryPolicy>;
  readonly #retryOptions: Record<Exclude<RetryMode, "never">, RetryHandler.RetryOptions>;
  #closed = false;
  /** The graceful close under way (a second close() waits for the same). */
  #closing: Promise<void> | null = null;
  /** Aborted by close({ force: true }): what waits between calls (a pause, a backoff) listens to it. */
  readonly #forced = new AbortController();
  /** Aborted when close() begins (plain or forced): ends the calls a wait holds open (waitFor's long-polls). */
  readonly #closeBegun = new AbortController();

  constructor(options: HttpClientOptions) {
    const url = new URL(options.baseUrl);
    this.#basePath = url.pathname.replace(/\/+$/, "");
    this.#baseQuery = url.search.slice(1);
    this.#headers = { accept: "application/json", ...options.headers };
    this.#jsonHeaders = { ...this.#headers, "content-type": "application/json" };
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    requireTimeoutMs(this.#timeoutMs, "http");
    if (options.retry?.retries !== undefined) requireRetries(options.retry.retries, "http");
    this.#maxReplyBytes = options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;
    requireMaxReplyBytes(this.#maxReplyBytes, "http");
    this.#secrets = options.secrets ?? [];
    this.#origin = url.origin;
    this.#pool = options.dispatcher
      ? undefined
      : new Pool(url.origin, { connections: options.connections ?? 64 });
    this.#dispatcher = options.dispatcher ?? (this.#pool as Pool);
    this.#policy = defaultPolicy(options.retry);
    // throwOnError false: RetryHandler asks the decider about every reply >= 300 and forwards the one
    // the decider gives up on, as a reply.
    this.#retryOptions = {
      idempotent: { throwOnError: false, retry: retryDecider("idempotent", this.#policy) },
      "rejected-only": { throwOnError: false, retry: retryDecider("rejected-only", this.#policy) },
    };
    // Innermost first: each attempt RetryHandler dispatches goes through the attempt's timer.
    this.#retrying = this.#dispatcher.compose(attemptTimeoutInterceptor, retryInterceptor);
  }

  /**
   * One HTTP exchange (with its retries). Throws only transport errors: timeout, abort, connection.
   *
   * The first attempt goes through the plain pool, so a call that succeeds pays nothing for retries.
   * Only a failure the policy may retry (429, 5xx, a connection error) takes the retry path: the
   * policy's backoff, then undici's RetryHandler for the remaining attempts.
   */
  exchange(call: HttpCall): Promise<HttpReply> {
    // A closed client refuses the call (a ValidationError) before the force-close signal is looked at.
    if (this.#pool || this.#closed) return this.#exchange(call, call.signal);
    // The caller's dispatcher is not ours to destroy: close({ force }) ends its calls through their signal.
    const forced = this.#forced.signal;
    return this.#exchange(call, call.signal ? AbortSignal.any([call.signal, forced]) : forced);
  }

  /** exchange(), `signal` also ending it at close({ force: true }) when the pool is not ours. */
  async #exchange(call: HttpCall, signal: AbortSignal | undefined): Promise<HttpReply> {
    if (signal?.aborted) throw this.#aborted(call);
    // Not undici's "client is destroyed" ConnectionError: callers (and waitFor) retry those as transient.
    if (this.#closed) {
      throw new ValidationError({
        operation: call.operation,
        message: `${call.operation}: the client was closed (close()); make a new client for further calls`,
      });
    }
    // No AbortController: the caller's signal aborts the dispatch through its controller. The budget
    // is one native timer per attempt (dispatchWhole's), undici's own timeouts off: those run on its
    // coarse "fast timers", which fired a 100 ms budget after about 1 s.
    // The caller's mistakes (a budget or a body that cannot be used) are refused before anything is
    // sent, as ValidationErrors: out of the try below, which maps what is left to transport errors.
    if (call.timeoutMs !== undefined) requireTimeoutMs(call.timeoutMs, call.operation);
    const budgetMs = call.timeoutMs ?? this.#timeoutMs;
    const body = call.rawBody ?? (call.body === undefined ? undefined : jsonBody(call, this.#secrets));
    this.#active++;
    try {
      const mode = modeOf(call);
      const request: Dispatcher.DispatchOptions = {
        // Our pool has its origin; an Agent-like dispatcher of the caller's needs it on each request.
        origin: this.#origin,
        method: call.method,
        path: this.#pathOf(call),
        headers: body !== undefined ? this.#jsonHeaders : this.#headers,
        body,
        headersTimeout: 0,
        bodyTimeout: 0,
      };
      const deadline = mode === "never" ? 0 : Date.now() + budgetMs;
      let reply: HttpReply;
      try {
        reply = await dispatchWhole(this.#dispatcher, request, signal, budgetMs, this.#maxReplyBytes);
      } catch (error) {
        if (mode === "never" || signal?.aborted || this.#forced.signal.aborted) throw error;
        const code = (error as { code?: unknown } | null)?.code;
        const failure = { code: typeof code === "string" ? code : undefined };
        return await this.#retry(request, signal, mode, deadline, budgetMs, failure, error);
      }
      if (mode === "never" || !mayRetryStatus(reply.status)) return reply;
      const failure = { statusCode: reply.status, retryAfter: reply.headers["retry-after"] };
      return await this.#retry(request, signal, mode, deadline, budgetMs, failure, reply);
    } catch (error) {
      throw this.#transportError(call, budgetMs, error);
    } finally {
      if (--this.#active === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
    }
  }

  /**
   * After a first attempt that failed: the failure back to the caller when the policy does not retry
   * it (a reply as a reply, an error thrown), else the policy's backoff and the remaining attempts.
   */
  async #retry(
    request: Dispatcher.DispatchOptions,
    signal: AbortSignal | undefined,
    mode: Exclude<RetryMode, "never">,
    deadline: number,
    attemptTimeoutMs: number,
    failure: Failure,
    first: HttpReply | unknown,
  ): Promise<HttpReply> {
    const delay = backoffAfter(mode, this.#policy, failure, 1, deadline);
    if (delay === undefined) {
      if (failure.statusCode !== undefined) return first as HttpReply;
      throw first;
    }
    // The retry path (rare: after a failure) also ends at close({ force: true }): its backoffs are
    // timers the pool does not know of.
    const forced = this.#forced.signal;
    if (forced.aborted) throw forced.reason;
    const until = signal ? AbortSignal.any([signal, forced]) : forced;
    await this.#backoff(delay, until);
    const retrying: RetryingRequest = {
      ...request,
      retryOptions: this.#retryOptions[mode],
      deadline,
      attemptTimeoutMs,
    };
    // No timer for the whole: each attempt has its own (attemptTimeoutInterceptor).
    return await dispatchWhole(this.#retrying, retrying, until, undefined, this.#maxReplyBytes);
  }

  /** The first backoff, on the policy's scheduler; the caller's signal ends it at once. */
  #backoff(delayMs: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let timer: unknown;
      const onAbort = () => {
        clearTimeout(timer as NodeJS.Timeout | undefined);
        reject(signal?.reason);
      };
      // Listening before scheduling: a scheduler may run (or abort) at once.
      signal?.addEventListener("abort", onAbort, { once: true });
      timer = this.#policy.schedule(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, delayMs);
      if (signal?.aborted) clearTimeout(timer as NodeJS.Timeout | undefined);
    });
  }

  /**
   * A failed exchange as the SDK's error: aborted by the caller, out of time, or the connection. One
   * that is not safe to repeat is not `retryable` unless it was never sent (a connection refused).
   */
  #transportError(call: HttpCall, budgetMs: number, error: unknown): RunpodkitError {
    if (call.signal?.aborted || this.#forced.signal.aborted) return this.#aborted(call, error);
    const code = (error as { code?: unknown } | null)?.code;
    const repeatable =
      (call.repeatable ?? modeOf(call) === "idempotent") ||
      (typeof code === "string" && NEVER_SENT.has(code));
    if (typeof code === "string" && TIMEOUT_CODES.has(code)) {
      return new TimeoutError({
        operation: call.operation,
        message: `${call.operation}: no reply within ${budgetMs} ms`,
        repeatable,
        // Kept: whether the reply had begun (dispatch-reply.ts, REPLY_CUT) matters to stream().
        cause: error,
        secrets: this.#secrets,
      });
    }
    if (code === REPLY_TOO_LARGE_CODE) {
      // Not retried: the same call would bring the same reply.
      return new ProtocolError({
        operation: call.operation,
        message: `${call.operation}: the reply is larger than maxReplyBytes (${this.#maxReplyBytes} bytes); it was not read. Check the client's baseUrl, or raise maxReplyBytes if the service really answers that much`,
        secrets: this.#secrets,
      });
    }
    return new ConnectionError({
      operation: call.operation,
      message: `${call.operation}: ${error instanceof Error ? error.message : String(error)}`,
      repeatable,
      cause: error,
      secrets: this.#secrets,
    });
  }

  /**
   * An exchange whose reply must be a success: non-2xx replies become typed errors (by the service's
   * `code` when the body has one, else by status). Returns the parsed JSON body, undefined when empty.
   */
  async request(call: HttpCall): Promise<unknown> {
    const reply = await this.exchange(call);
    if (reply.status < 200 || reply.status >= 300) throw this.errorFor(call.operation, reply, modeOf(call));
    return this.parseJson(call.operation, reply.text);
  }

  parseJson(operation: string, text: string): unknown {
    if (text === "") return undefined;
    try {
      return JSON.parse(text);
    } catch {
      throw new ProtocolError({
        operation,
        message: `${operation}: the reply is not JSON: ${text.slice(0, 200)}`,
        secrets: this.#secrets,
      });
    }
  }

  /** The typed error for a non-2xx reply to a call of retry `mode` (a 5xx of one not safe to repeat is not `retryable`). */
  errorFor(operation: string, reply: HttpReply, mode: RetryMode = "idempotent"): RunpodkitError {
    const body = safeJson(reply.text);
    // REST says `message`; the job API says `error`; a 429 may be plain text.
    const serverMessage =
      typeof body?.message === "string"
        ? body.message
        : typeof body?.error === "string"
          ? body.error
          : reply.text.slice(0, 300);
    return errorForStatus(reply.status, {
      operation,
      message: `${operation}: ${serverMessage || "no message"} (HTTP ${reply.status})`,
      field: typeof body?.field === "string" ? body.field : undefined,
      serviceCode: typeof body?.code === "string" ? body.code : undefined,
      retryAfterMs: parseRetryAfter(reply.headers["retry-after"]),
      repeatable: mode === "idempotent",
      secrets: this.#secrets,
    });
  }

  /**
   * Closes the pool once the calls in flight have ended; any later call is refused. With `force`, the
   * calls in flight end at once with an AbortedError (the pool's sockets are destroyed, pending retry
   * backoffs run now and find the pool gone), so no socket or timer of the client is left.
   */
  async close(options: CloseOptions = {}): Promise<void> {
    this.#closeBegun.abort(new Error("the client was closed (close())"));
    if (options.force === true) {
      if (this.#forced.signal.aborted) return;
      this.#closed = true;
      // Destroying the pool fails the attempts in flight; the abort ends the retry path's backoffs
      // (each listens to it) and JobClient's pauses.
      const destroyed = this.#pool?.destroy();
      this.#forced.abort(new Error("the client was closed with close({ force: true })"));
      await destroyed;
      await this.#idle();
      return;
    }
    // Already closed with force: nothing is left to wait for.
    if (this.#forced.signal.aborted) return;
    this.#closed = true;
    // The calls first: a pool closed under a call in its retry backoff failed the retry ("The client
    // is destroyed"), though close() had resolved as if the call were done.
    // A close({ force: true }) meanwhile has destroyed the pool: nothing is left to close.
    this.#closing ??= this.#idle().then(() =>
      this.#forced.signal.aborted ? undefined : this.#pool?.close(),
    );
    await this.#closing;
  }

  /** Once no call is under way (at once when none is). */
  #idle(): Promise<void> {
    if (this.#active === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Aborted once close() begins: a call held only to wait (waitFor's /status-sync) ends then, so a
   * plain close() does not wait out its hold.
   */
  get closeBegun(): AbortSignal {
    return this.#closeBegun.signal;
  }

  /** Aborted once the client is closed with `force`: for waits between calls (JobClient's pauses). */
  get forceClosed(): AbortSignal {
    return this.#forced.signal;
  }

  #pathOf(call: HttpCall): string {
    let query = this.#baseQuery;
    if (call.query) {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(call.query)) {
        if (Array.isArray(value)) for (const item of value) params.append(key, item);
        else if (value !== undefined && value !== null) params.append(key, String(value));
      }
      const extra = params.toString();
      if (extra) query = query ? `${query}&${extra}` : extra;
    }
    const path = `${this.#basePath}${call.path}` || "/";
    return query ? `${path}?${query}` : path;
  }

  #aborted(call: HttpCall, cause?: unknown): AbortedError {
    if (this.#forced.signal.aborted && !call.signal?.aborted) {
      return new AbortedError({
        operation: call.operation,
        message: `${call.operation}: the client was closed with close({ force: true }) while the call was in flight`,
        cause,
        secrets: this.#secrets,
      });
    }
    return new AbortedError({
      operation: call.operation,
      message: `${call.operation}: aborted by the caller`,
      cause: cause ?? call.signal?.reason,
      secrets: this.#secrets,
    });
  }
}

function safeJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
