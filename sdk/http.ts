import type { IncomingHttpHeaders } from "node:http";
import { type Dispatcher, Pool, RetryHandler } from "undici";
import {
  AbortedError,
  ConnectionError,
  errorForStatus,
  ProtocolError,
  parseRetryAfter,
  type RunpodkitError,
  TimeoutError,
} from "./errors";

/**
 * The one HTTP layer of the SDK: one keep-alive undici Pool per client (per origin), with retry and
 * backoff composed once as an undici interceptor. Calls only say whether they may be retried.
 */

/**
 * - "idempotent": retried on 429, 5xx (except 501) and connection errors (GET, PUT, DELETE, PATCH-like
 *   replaces, GraphQL queries, POSTs that are safe to repeat).
 * - "rejected-only": retried on 429 alone, which the service sends before doing anything (job submit).
 * - "never": sent once (non-idempotent POSTs, GraphQL mutations).
 */
export type RetryMode = "idempotent" | "rejected-only" | "never";

export interface RetryPolicy {
  /** Retries after the first attempt (default 3, so at most 4 attempts). */
  retries?: number;
  /** First backoff step (default 250 ms); doubles each retry, with jitter. */
  baseDelayMs?: number;
  /** Cap of one backoff step (default 8 s). */
  maxDelayMs?: number;
  /** A longer Retry-After is not waited for: the 429 goes back to the caller (default 60 s). */
  maxRetryAfterMs?: number;
  /** Runs the retry after the delay; injectable so tests need not wait (default setTimeout). */
  schedule?: (run: () => void, delayMs: number) => unknown;
  /** Source of jitter in [0, 1) (default Math.random). */
  random?: () => number;
}

export interface HttpClientOptions {
  /** Origin plus path prefix and optional fixed query, e.g. "https://rest.runpod.io/v1". */
  baseUrl: string;
  /** Sent with every call (auth). Built once. */
  headers?: Record<string, string>;
  /**
   * Client-side budget of one call (default 30 s): bounds each attempt's wait for headers and between
   * body chunks; no retry starts whose backoff would end past it.
   */
  timeoutMs?: number;
  retry?: RetryPolicy;
  /** Removed from every error text. */
  secrets?: readonly string[];
  /** Max sockets to the origin (default 64). */
  connections?: number;
}

export interface CallOptions {
  /** Aborts the call at once (AbortedError). */
  signal?: AbortSignal;
  /** Overrides the client's time budget for this call (TimeoutError). */
  timeoutMs?: number;
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
}

export interface HttpReply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
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

/** undici's own timers carry the call's budget: these codes mean the budget ran out. */
const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

/**
 * The statuses undici's RetryHandler turns into a retry decision (its defaults, given once so no call
 * allocates them); which of them are retried is the decider's choice (isRetryable).
 */
const RETRY_STATUS_CODES = [500, 502, 503, 504, 429];

/**
 * undici's retry interceptor, without its per-call copies: each call already carries its
 * `retryOptions` (one shared object per mode), so nothing is merged; RetryHandler does the rest.
 */
const retryInterceptor: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (opts, handler) =>
  dispatch(opts, new RetryHandler(opts, { dispatch, handler }));

interface RetryErrorShape {
  statusCode?: number;
  code?: string;
  headers?: Record<string, string | string[] | undefined>;
}

function isRetryable(mode: RetryMode, error: RetryErrorShape): boolean {
  if (mode === "never") return false;
  if (error.code === "UND_ERR_REQ_RETRY" && error.statusCode !== undefined) {
    if (error.statusCode === 429) return true;
    return mode === "idempotent" && error.statusCode >= 500 && error.statusCode !== 501;
  }
  return mode === "idempotent" && error.code !== undefined && CONNECTION_CODES.has(error.code);
}

/** The decision undici's RetryHandler asks for after each failed attempt. */
function retryDecider(mode: RetryMode, policy: Required<RetryPolicy>): RetryHandler.RetryCallback {
  return (error, { state, opts }, done) => {
    const shape = error as RetryErrorShape;
    if (!isRetryable(mode, shape) || state.counter > policy.retries) return done(error);
    const { deadline } = opts as unknown as { deadline: number };
    const retryAfter = parseRetryAfter(shape.headers?.["retry-after"]);
    if (retryAfter !== undefined && retryAfter > policy.maxRetryAfterMs) return done(error);
    const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (state.counter - 1));
    // Equal jitter: never zero, never in lockstep with other clients.
    const delay = retryAfter ?? step / 2 + (policy.random() * step) / 2;
    // The budget covers the retries: one that would start past the deadline is not made.
    if (Date.now() + delay >= deadline) return done(error);
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

type RetryingRequest = Dispatcher.RequestOptions & {
  retryOptions: RetryHandler.RetryOptions;
  /** Epoch ms the call's budget ends; read back by the retry decider. */
  deadline: number;
};

export class HttpClient {
  readonly #pool: Pool;
  readonly #retrying: Dispatcher;
  readonly #origin: string;
  readonly #basePath: string;
  readonly #baseQuery: string;
  readonly #headers: Record<string, string>;
  readonly #jsonHeaders: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #secrets: readonly string[];
  readonly #retryOptions: Record<Exclude<RetryMode, "never">, RetryHandler.RetryOptions>;

  constructor(options: HttpClientOptions) {
    const url = new URL(options.baseUrl);
    this.#origin = url.origin;
    this.#basePath = url.pathname.replace(/\/+$/, "");
    this.#baseQuery = url.search.slice(1);
    this.#headers = { accept: "application/json", ...options.headers };
    this.#jsonHeaders = { ...this.#headers, "content-type": "application/json" };
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#secrets = options.secrets ?? [];
    this.#pool = new Pool(this.#origin, { connections: options.connections ?? 64 });
    const policy = defaultPolicy(options.retry);
    const base = { throwOnError: false, maxRetries: policy.retries, statusCodes: RETRY_STATUS_CODES };
    this.#retryOptions = {
      idempotent: { ...base, retry: retryDecider("idempotent", policy) },
      "rejected-only": { ...base, retry: retryDecider("rejected-only", policy) },
    };
    this.#retrying = this.#pool.compose(retryInterceptor);
  }

  /** One HTTP exchange (with its retries). Throws only transport errors: timeout, abort, connection. */
  async exchange(call: HttpCall): Promise<HttpReply> {
    if (call.signal?.aborted) throw this.#aborted(call);
    // No per-call timer or AbortController: undici's headers/body timeouts carry the budget and the
    // caller's signal goes to undici as is.
    const budgetMs = call.timeoutMs ?? this.#timeoutMs;
    try {
      const reply = await this.#dispatch(call, budgetMs);
      const text = await reply.body.text();
      return { status: reply.statusCode, headers: reply.headers, text };
    } catch (error) {
      if (call.signal?.aborted) throw this.#aborted(call, error);
      const code = (error as { code?: unknown } | null)?.code;
      if (typeof code === "string" && TIMEOUT_CODES.has(code)) {
        throw new TimeoutError({
          operation: call.operation,
          message: `${call.operation}: no reply within ${budgetMs} ms`,
          secrets: this.#secrets,
        });
      }
      throw new ConnectionError({
        operation: call.operation,
        message: `${call.operation}: ${error instanceof Error ? error.message : String(error)}`,
        cause: error,
        secrets: this.#secrets,
      });
    }
  }

  /**
   * An exchange whose reply must be a success: non-2xx replies become typed errors (by the service's
   * `code` when the body has one, else by status). Returns the parsed JSON body, undefined when empty.
   */
  async request(call: HttpCall): Promise<unknown> {
    const reply = await this.exchange(call);
    if (reply.status < 200 || reply.status >= 300) throw this.errorFor(call.operation, reply);
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

  /** The typed error for a non-2xx reply. */
  errorFor(operation: string, reply: HttpReply): RunpodkitError {
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
      secrets: this.#secrets,
    });
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }

  #dispatch(call: HttpCall, budgetMs: number): Promise<Dispatcher.ResponseData> {
    const hasBody = call.body !== undefined || call.rawBody !== undefined;
    const headers = hasBody ? this.#jsonHeaders : this.#headers;
    const body = call.rawBody ?? (call.body === undefined ? undefined : JSON.stringify(call.body));
    const mode = call.retry ?? (SAFE_METHODS.has(call.method) ? "idempotent" : "never");
    // One options object per call, built whole for the path it takes (no copy for the retrying one).
    if (mode === "never") {
      return this.#pool.request({
        origin: this.#origin,
        method: call.method,
        path: this.#pathOf(call),
        headers,
        body,
        signal: call.signal,
        headersTimeout: budgetMs,
        bodyTimeout: budgetMs,
      });
    }
    const retrying: RetryingRequest = {
      origin: this.#origin,
      method: call.method,
      path: this.#pathOf(call),
      headers,
      body,
      signal: call.signal,
      headersTimeout: budgetMs,
      bodyTimeout: budgetMs,
      retryOptions: this.#retryOptions[mode],
      deadline: Date.now() + budgetMs,
    };
    return this.#retrying.request(retrying);
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
