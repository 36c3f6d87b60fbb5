import { redact, ValidationError } from "./errors";
import {
  HttpClient,
  MAX_TIMEOUT_MS,
  type RetryPolicy,
  requireMaxReplyBytes,
  requireRetries,
  requireTimeoutMs,
} from "./http";

/** What every client of the service takes besides its address. */
export interface ClientOptions {
  apiKey: string;
  /**
   * Client-side budget of one call (default 30 s): each attempt (waiting for a connection, sending, the
   * whole reply) ends within it, to a few ms, and no retry is started whose backoff would end past it. From 1 ms
   * to 2^31-1 ms (about 24.8 days); 0 is refused, as there is no "no timeout" (end a call early with
   * an AbortSignal).
   */
  timeoutMs?: number | undefined;
  /** Retries of calls that are safe to repeat (default 3; an integer of 0 or more). */
  retries?: number | undefined;
  /** Backoff tuning beyond `retries`. */
  retry?: Omit<RetryPolicy, "retries"> | undefined;
  /** Max sockets to the service (default 64). */
  connections?: number | undefined;
  /**
   * The largest reply read, in bytes (default 256 MiB, at most 2^29-24): a larger one (an endless or
   * huge body from a wrong baseUrl) is a ProtocolError, never held whole in memory.
   */
  maxReplyBytes?: number | undefined;
}

/** Refuses a missing or blank key before anything else (a ValidationError naming apiKey). */
export function requireApiKey(apiKey: unknown, operation: string): void {
  if (typeof apiKey !== "string" || apiKey.trim() === "") {
    throw new ValidationError({ operation, field: "apiKey", message: `${operation}: apiKey is required` });
  }
}

/**
 * Refuses, when the client is built, a missing key (requireApiKey, first), then a timeoutMs or retries
 * the HTTP layer cannot use (a ValidationError naming the option), instead of a ConnectionError at the
 * first call or a retry loop without bound.
 */
export function requireClientOptions(options: ClientOptions, operation: string): void {
  requireApiKey(options.apiKey, operation);
  if (options.timeoutMs !== undefined) requireTimeoutMs(options.timeoutMs, operation);
  if (options.retries !== undefined) requireRetries(options.retries, operation);
  if (options.retry !== undefined) requireRetryTuning(options.retry, operation);
  if (options.connections !== undefined) requireConnections(options.connections, operation);
  if (options.maxReplyBytes !== undefined) requireMaxReplyBytes(options.maxReplyBytes, operation);
}

/** The backoff's durations, in ms: NaN or a negative would retry at once (a tight loop against a failing service). */
const RETRY_DURATIONS = ["baseDelayMs", "maxDelayMs", "maxRetryAfterMs"] as const;

function requireRetryTuning(retry: unknown, operation: string): void {
  if (typeof retry !== "object" || retry === null) {
    throw new ValidationError({
      operation,
      field: "retry",
      message: `${operation}: retry must be an object, got ${String(retry)}`,
    });
  }
  const tuning = retry as Record<string, unknown>;
  for (const name of RETRY_DURATIONS) {
    const value = tuning[name];
    if (value === undefined || (typeof value === "number" && value >= 0 && value <= MAX_TIMEOUT_MS)) continue;
    throw new ValidationError({
      operation,
      field: `retry.${name}`,
      message: `${operation}: retry.${name} must be a number of milliseconds from 0 to ${MAX_TIMEOUT_MS}, got ${String(value)}`,
    });
  }
  for (const name of ["schedule", "random"] as const) {
    if (tuning[name] === undefined || typeof tuning[name] === "function") continue;
    throw new ValidationError({
      operation,
      field: `retry.${name}`,
      message: `${operation}: retry.${name} must be a function, got ${typeof tuning[name]}`,
    });
  }
}

/** A pool size: 0 or a fraction would leave undici's pool unbounded or unusable. */
function requireConnections(value: unknown, operation: string): void {
  if (Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 65_535) return;
  throw new ValidationError({
    operation,
    field: "connections",
    message: `${operation}: connections must be an integer from 1 to 65535 (sockets to the service), got ${String(value)}`,
  });
}

/**
 * The client's base URL, refused (a ValidationError naming baseUrl) unless it is an absolute http(s)
 * URL: Node's own "Invalid URL" names neither the option nor the fix. `example`: what one looks like.
 */
export function requireBaseUrl(baseUrl: string, operation: string, apiKey: string, example: string): string {
  let protocol = "";
  try {
    protocol = new URL(baseUrl).protocol;
  } catch {
    // Not a URL at all: refused below.
  }
  if (protocol !== "http:" && protocol !== "https:") {
    throw new ValidationError({
      operation,
      field: "baseUrl",
      message: `${operation}: baseUrl must be an absolute http(s) URL such as ${example}, got "${redact(String(baseUrl), [apiKey])}"`,
    });
  }
  return baseUrl;
}

/** The HTTP layer of one client, the key kept out of every error. */
export function clientHttp(
  options: ClientOptions,
  baseUrl: string,
  headers?: Record<string, string>,
): HttpClient {
  return new HttpClient({
    baseUrl,
    headers,
    secrets: [options.apiKey],
    timeoutMs: options.timeoutMs,
    retry: { ...options.retry, retries: options.retries },
    connections: options.connections,
    maxReplyBytes: options.maxReplyBytes,
  });
}
