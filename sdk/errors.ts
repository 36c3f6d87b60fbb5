/**
 * Typed SDK errors. Callers branch on `code` (stable), never on message text. Every message, stack and
 * cause is redacted: an API key never leaves the SDK inside an error.
 */

// Defined in the SDK's HTTP leaf, which the worker runtime shares (it imports nothing of the repo).
export { parseRetryAfter } from "./dispatch-reply";

import { REPLY_CUT } from "./dispatch-reply";

import type { JobStatus } from "./schemas/job";

/** The final statuses other than success that a JobFailedError carries. */
export type FailedJobStatus = Extract<JobStatus, "FAILED" | "TIMED_OUT" | "CANCELLED">;

export type RunpodkitErrorCode =
  | "NOT_FOUND"
  | "VALIDATION"
  | "CONFLICT"
  | "UNAUTHORIZED"
  | "PAYLOAD_TOO_LARGE"
  | "RATE_LIMITED"
  | "SERVER_ERROR"
  | "TIMEOUT"
  | "ABORTED"
  | "CONNECTION"
  | "GRAPHQL"
  | "PROTOCOL"
  | "JOB_FAILED"
  | "STREAM_INTERRUPTED";

/** One entry of a GraphQL reply's `errors`, reduced to what is safe and useful to keep. */
export interface GraphQLErrorItem {
  message: string;
  path?: ReadonlyArray<string | number>;
  extensions?: Readonly<Record<string, unknown>>;
}

export interface ErrorDetails {
  operation: string;
  message: string;
  status?: number;
  field?: string;
  retryAfterMs?: number;
  /** The code the service put in its reply (REST body `code`, GraphQL `extensions.code`), if any. */
  serviceCode?: string;
  /** The job concerned, so a client-side timeout or failure never loses it. */
  jobId?: string;
  /** The job's status: its final one (JobFailedError) or the last one seen (a waitFor timeout). */
  jobStatus?: string;
  graphqlErrors?: readonly GraphQLErrorItem[];
  /**
   * Whether the call is safe to send again (default true). False for one that may have taken effect
   * (a create, a job submission, a GraphQL mutation) and whose failure leaves that open: such an
   * error is not `retryable`, except a 429 (nothing was done).
   */
  repeatable?: boolean;
  cause?: unknown;
  /** Extra strings to remove from every text of the error (the API key, passwords). */
  secrets?: readonly string[];
}

const QUERY_SECRET = /([?&](?:api_key|apiKey|api-key|token|password)=)[^&#\s"'<>]*/gi;
const BEARER = /(Bearer\s+)[^\s"',;]+/gi;
const MASK = "***";

/** Removes `api_key=...` (and similar) from URLs, bearer tokens, and every occurrence of each secret. */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(QUERY_SECRET, `$1${MASK}`).replace(BEARER, `$1${MASK}`);
  for (const secret of secrets) {
    // Short strings would blank out ordinary words; a real key is long.
    if (secret.length >= 6) out = out.split(secret).join(MASK);
  }
  return out;
}

/**
 * A redacted copy of a JSON value from a reply (a GraphQL error's `extensions`, `path`): every string
 * in it, keys included, through `redact`. Replies are parsed JSON, so there are no cycles; the depth
 * bound only keeps a hostile reply from costing much.
 */
function redactJson(value: unknown, secrets: readonly string[], depth = 0): unknown {
  if (typeof value === "string") return redact(value, secrets);
  if (value === null || typeof value !== "object") return value;
  if (depth >= 16) return MASK;
  if (Array.isArray(value)) return value.map((item) => redactJson(item, secrets, depth + 1));
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    copy[redact(key, secrets)] = redactJson(item, secrets, depth + 1);
  }
  return copy;
}

/** A detached, redacted copy of a cause: the original may hold URLs, headers or request variables. */
function redactCause(cause: unknown, secrets: readonly string[]): unknown {
  if (cause === undefined || cause === null) return undefined;
  if (cause instanceof RunpodkitError) return cause;
  if (cause instanceof Error) {
    const copy = new Error(redact(cause.message, secrets));
    copy.name = cause.name;
    copy.stack = redact(cause.stack ?? "", secrets);
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string") Object.assign(copy, { code });
    const cutAfter = (cause as unknown as Record<string, unknown>)[REPLY_CUT];
    if (typeof cutAfter === "number") Object.assign(copy, { [REPLY_CUT]: cutAfter });
    return copy;
  }
  return redact(String(cause), secrets);
}

export class RunpodkitError extends Error {
  readonly code: RunpodkitErrorCode;
  readonly operation: string;
  readonly status: number | undefined;
  readonly field: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly serviceCode: string | undefined;
  readonly jobId: string | undefined;
  /** The job's final status (JobFailedError) or the last one seen (a waitFor TimeoutError). */
  readonly jobStatus: string | undefined;
  /**
   * Whether sending the same call again is safe and may succeed: the failure may pass (no connection,
   * no reply in time, a 429 after `retryAfterMs`, a 5xx other than 501) and the call is safe to repeat,
   * or provably did nothing (a 429, a connection refused). A create, `run`, `runSync` or GraphQL
   * mutation cut off after it was sent is not retryable: it may have taken effect.
   */
  readonly retryable: boolean;

  constructor(code: RunpodkitErrorCode, details: ErrorDetails) {
    const secrets = details.secrets ?? [];
    super(redact(details.message, secrets), { cause: redactCause(details.cause, secrets) });
    this.name = new.target.name;
    this.code = code;
    this.operation = details.operation;
    this.status = details.status;
    // Both may come from a reply (REST `field`/`code`, GraphQL `extensions`), which may echo the request.
    this.field = replyText(details.field, secrets);
    this.retryAfterMs = details.retryAfterMs;
    this.serviceCode = replyText(details.serviceCode, secrets);
    this.jobId = details.jobId;
    this.jobStatus = details.jobStatus;
    this.retryable = isRetryable(code, details);
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      operation: this.operation,
      message: this.message,
      status: this.status,
      field: this.field,
      retryAfterMs: this.retryAfterMs,
      serviceCode: this.serviceCode,
      jobId: this.jobId,
      jobStatus: this.jobStatus,
      retryable: this.retryable,
    };
  }
}

/** The longest `field` or `serviceCode` kept: a reply's, bounded like its message. */
const REPLY_TEXT_MAX = 300;

/** A short text an error keeps from a reply: redacted, then bounded. */
function replyText(text: string | undefined, secrets: readonly string[]): string | undefined {
  if (text === undefined) return undefined;
  const redacted = redact(text, secrets);
  return redacted.length <= REPLY_TEXT_MAX ? redacted : `${redacted.slice(0, REPLY_TEXT_MAX)}…`;
}

/** A 429 proves the call did nothing; a connection failure, a timeout or a 5xx (501 aside) may pass. */
function isRetryable(code: RunpodkitErrorCode, details: ErrorDetails): boolean {
  if (code === "RATE_LIMITED") return true;
  if (details.repeatable === false) return false;
  if (code === "SERVER_ERROR") return details.status !== 501 && details.serviceCode !== "NOT_IMPLEMENTED";
  return code === "CONNECTION" || code === "TIMEOUT";
}

type Details = Omit<ErrorDetails, "graphqlErrors">;

export class NotFoundError extends RunpodkitError {
  constructor(details: Details) {
    super("NOT_FOUND", { status: 404, ...details });
  }
}

/** Bad input: rejected by the SDK before sending (no status) or by the service (400). */
export class ValidationError extends RunpodkitError {
  constructor(details: Details) {
    super("VALIDATION", details);
  }
}

/** The service refused because of state: a name taken, a resource in use, workers still running. */
export class ConflictError extends RunpodkitError {
  constructor(details: Details) {
    super("CONFLICT", details);
  }
}

export class UnauthorizedError extends RunpodkitError {
  constructor(details: Details) {
    super("UNAUTHORIZED", { status: 401, ...details });
  }
}

export class PayloadTooLargeError extends RunpodkitError {
  constructor(details: Details) {
    super("PAYLOAD_TOO_LARGE", { status: 413, ...details });
  }
}

/** 429 after the retries were spent (or for a call that is never retried); see `retryAfterMs`. */
export class RateLimitedError extends RunpodkitError {
  constructor(details: Details) {
    super("RATE_LIMITED", { status: 429, ...details });
  }
}

export class ServerError extends RunpodkitError {
  constructor(details: Details) {
    super("SERVER_ERROR", details);
  }
}

/** The client-side time budget of the call ran out (not the job's own timeout). */
export class TimeoutError extends RunpodkitError {
  constructor(details: Details) {
    super("TIMEOUT", details);
  }
}

/** The caller's AbortSignal fired. */
export class AbortedError extends RunpodkitError {
  constructor(details: Details) {
    super("ABORTED", details);
  }
}

/** No usable HTTP exchange: refused, reset, DNS failure, socket closed. */
export class ConnectionError extends RunpodkitError {
  constructor(details: Details) {
    super("CONNECTION", details);
  }
}

/** A reply that does not have the documented shape. */
export class ProtocolError extends RunpodkitError {
  constructor(details: Details) {
    super("PROTOCOL", details);
  }
}

/** A GraphQL reply with `errors` that maps to no more specific class. */
export class GraphQLError extends RunpodkitError {
  readonly errors: readonly GraphQLErrorItem[];

  constructor(details: ErrorDetails) {
    super("GRAPHQL", details);
    const secrets = details.secrets ?? [];
    // Every string of each entry: a service may echo the request (its URL holds the key) anywhere.
    this.errors = (details.graphqlErrors ?? []).map((e) => redactJson(e, secrets) as GraphQLErrorItem);
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), errors: this.errors };
  }
}

/**
 * A job ended FAILED (or TIMED_OUT / CANCELLED where the caller asked for success, as `stream` does):
 * `jobId` names it and `jobStatus` is its final status.
 */
export class JobFailedError extends RunpodkitError {
  // Set by the base class; `declare` keeps a class field from resetting it.
  declare readonly jobId: string;
  declare readonly jobStatus: FailedJobStatus;

  constructor(details: Details & { jobId: string; jobStatus: FailedJobStatus }) {
    super("JOB_FAILED", details);
  }
}

/**
 * A `stream()` poll's reply was cut after the service had begun it (a connection reset, a proxy
 * closing it, the poll's time budget): the service hands each chunk out once, so the chunks in that
 * reply are lost to the stream, and it ends here rather than go on with a gap. `jobId` names the job
 * (it goes on: read its final status and output with `status()` or `waitFor()`); `chunksReceived`
 * counts the chunks the stream yielded before the cut; `cause` is the transport's failure.
 */
export class StreamInterruptedError extends RunpodkitError {
  declare readonly jobId: string;
  readonly chunksReceived: number;

  constructor(details: Details & { jobId: string; chunksReceived: number }) {
    super("STREAM_INTERRUPTED", details);
    this.chunksReceived = details.chunksReceived;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), chunksReceived: this.chunksReceived };
  }
}

/** The service's own codes (REST body `code`, GraphQL `extensions.code`) to SDK classes. */
const BY_SERVICE_CODE: Record<string, new (d: Details) => RunpodkitError> = {
  NOT_FOUND: NotFoundError,
  METHOD_NOT_ALLOWED: ValidationError,
  VALIDATION: ValidationError,
  BAD_USER_INPUT: ValidationError,
  GRAPHQL_VALIDATION: ValidationError,
  GRAPHQL_VALIDATION_FAILED: ValidationError,
  CONFLICT: ConflictError,
  IN_USE: ConflictError,
  PRECONDITION: ConflictError,
  UNSUPPORTED: ValidationError,
  UNAUTHORIZED: UnauthorizedError,
  UNAUTHENTICATED: UnauthorizedError,
  PAYLOAD_TOO_LARGE: PayloadTooLargeError,
  RATE_LIMITED: RateLimitedError,
  INTERNAL: ServerError,
  INTERNAL_SERVER_ERROR: ServerError,
  NOT_IMPLEMENTED: ServerError,
};

export function errorForServiceCode(serviceCode: string, details: Details): RunpodkitError | undefined {
  const ErrorClass = BY_SERVICE_CODE[serviceCode];
  return ErrorClass ? new ErrorClass({ ...details, serviceCode }) : undefined;
}

/** An HTTP error reply to a typed error: by the service's code when it sent one, else by status. */
export function errorForStatus(status: number, details: Details): RunpodkitError {
  const withStatus = { ...details, status };
  if (details.serviceCode) {
    const byCode = errorForServiceCode(details.serviceCode, withStatus);
    if (byCode) return byCode;
  }
  if (status === 404) return new NotFoundError(withStatus);
  if (status === 401 || status === 403) return new UnauthorizedError(withStatus);
  if (status === 413) return new PayloadTooLargeError(withStatus);
  if (status === 429) return new RateLimitedError(withStatus);
  if (status === 409) return new ConflictError(withStatus);
  if (status >= 500) return new ServerError(withStatus);
  return new ValidationError(withStatus);
}
