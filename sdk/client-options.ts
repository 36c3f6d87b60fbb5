import type { Dispatcher } from "undici";
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
  /** Max sockets to the service (default 64); not with `dispatcher`, whose own settings apply. */
  connections?: number | undefined;
  /**
   * An undici Dispatcher to send every call through instead of the client's own keep-alive pool:
   * `new EnvHttpProxyAgent()` or `new ProxyAgent(url)` behind an HTTP proxy, an `Agent` with TLS
   * options. It stays yours: `close()` waits for (or, with force, aborts) the client's calls on it but
   * leaves it open.
   */
  dispatcher?: Dispatcher | undefined;
  /**
   * The largest reply read, in bytes (default 256 MiB, at most 2^29-24): a larger one (an endless or
   * huge body from a wrong baseUrl) is a ProtocolError, never held whole in memory.
   */
  maxReplyBytes?: number | undefined;
}

/** No API key holds a control character, and a header with a C0 one or DEL is refused whole by undici. */
const CONTROL_CHARACTER = /\p{Cc}/u;

/**
 * Refuses a missing or blank key before anything else (a ValidationError naming apiKey), and one
 * with a control character (a line break, a tab) or one past Latin-1 inside it: it cannot go in a
 * header, and undici's "invalid authorization header" read as a connection error, retried and
 * waited through as one.
 */
export function requireApiKey(apiKey: unknown, operation: string): void {
  if (typeof apiKey !== "string" || apiKey.trim() === "") {
    throw new ValidationError({
      operation,
      field: "apiKey",
      message: `${operation}: apiKey is required: pass the account's API key, e.g. { apiKey: process.env.RUNPOD_API_KEY }`,
    });
  }
  if (CONTROL_CHARACTER.test(apiKey.trim())) {
    throw new ValidationError({
      operation,
      field: "apiKey",
      message: `${operation}: apiKey holds a control character (a line break, a tab) inside it; an API key is one line: check where it was read from`,
    });
  }
  // Past Latin-1 no header can carry it: undici refused each call ("invalid authorization header"),
  // a retryable ConnectionError that waitFor and stream polled through as an outage for a minute.
  let position = 0;
  for (const character of apiKey.trim()) {
    position++;
    const code = character.codePointAt(0) ?? 0;
    if (code <= 0xff) continue;
    throw new ValidationError({
      operation,
      field: "apiKey",
      message: `${operation}: apiKey holds U+${code.toString(16).toUpperCase().padStart(4, "0")} at position ${position}, a character no HTTP header can carry (a typographic quote, an invisible zero-width character copied with the key); an API key is plain ASCII: check where it was read from`,
    });
  }
}

/**
 * Refuses, when the client is built, a missing key (requireApiKey, first), then a timeoutMs or retries
 * the HTTP layer cannot use (a ValidationError naming the option), instead of a ConnectionError at the
 * first call or a retry loop without bound. Returns the options with the key trimmed: one read from a
 * file or a CRLF .env keeps its line break, which no header may carry.
 */
export function requireClientOptions<T extends ClientOptions>(options: T, operation: string): T {
  requireApiKey(options.apiKey, operation);
  if (options.timeoutMs !== undefined) requireTimeoutMs(options.timeoutMs, operation);
  if (options.retries !== undefined) requireRetries(options.retries, operation);
  if (options.retry !== undefined) requireRetryTuning(options.retry, operation);
  if (options.connections !== undefined) requireConnections(options.connections, operation);
  if (options.maxReplyBytes !== undefined) requireMaxReplyBytes(options.maxReplyBytes, operation);
  if (options.dispatcher !== undefined) requireDispatcher(options, operation);
  return { ...options, apiKey: options.apiKey.trim() };
}

/** A dispatcher the HTTP layer can use: dispatch() for calls, compose() for its retry path. */
function requireDispatcher(options: ClientOptions, operation: string): void {
  const dispatcher = options.dispatcher as Partial<Dispatcher> | null;
  if (typeof dispatcher?.dispatch !== "function" || typeof dispatcher.compose !== "function") {
    throw new ValidationError({
      operation,
      field: "dispatcher",
      message: `${operation}: dispatcher must be an undici Dispatcher (an Agent, a ProxyAgent, an EnvHttpProxyAgent, of undici 7 or later), got ${dispatcher === null ? "null" : typeof dispatcher}`,
    });
  }
  if (options.connections !== undefined) {
    throw new ValidationError({
      operation,
      field: "connections",
      message: `${operation}: connections sizes the client's own pool, which a dispatcher replaces: set the limit on the dispatcher (e.g. new Agent({ connections }))`,
    });
  }
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
  if (protocol === "http:") warnCleartextKey(new URL(baseUrl), operation);
  return baseUrl;
}

/** Origins already warned about: one line per origin and process, not one per client built. */
const warnedOrigins = new Set<string>();

/** This machine: localhost and *.localhost (RFC 6761), 127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z). */
function isLoopback(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (host === "[::1]" || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(host)) return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * The key goes with every call (a header; GraphQL's in the URL): over plain http:// to another
 * machine, anyone on the path reads it. Not refused (a private network may be trusted), but said once.
 */
function warnCleartextKey(url: URL, operation: string): void {
  if (isLoopback(url.hostname) || warnedOrigins.has(url.origin)) return;
  warnedOrigins.add(url.origin);
  process.emitWarning(
    `${operation}: baseUrl ${url.origin} is plain http: to another machine, so the API key crosses the network unencrypted with every call; use https:// (the local service has no TLS: put a TLS proxy in front of it, see SECURITY.md)`,
    { type: "SecurityWarning", code: "RUNPODKIT_CLEARTEXT_API_KEY" },
  );
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
    dispatcher: options.dispatcher,
    maxReplyBytes: options.maxReplyBytes,
  });
}
