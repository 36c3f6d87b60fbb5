import { redact, ValidationError } from "./errors";
import { HttpClient, type RetryPolicy } from "./http";

/** What every client of the service takes besides its address. */
export interface ClientOptions {
  apiKey: string;
  /**
   * Client-side budget of one call (default 30 s): each attempt waits at most this long for the reply's
   * headers and between body chunks, and no retry is started whose backoff would end past it.
   */
  timeoutMs?: number;
  /** Retries of calls that are safe to repeat (default 3). */
  retries?: number;
  /** Backoff tuning beyond `retries`. */
  retry?: Omit<RetryPolicy, "retries">;
  /** Max sockets to the service (default 64). */
  connections?: number;
}

/** Refuses a missing or blank key before anything else (a ValidationError naming apiKey). */
export function requireApiKey(apiKey: unknown, operation: string): void {
  if (typeof apiKey !== "string" || apiKey.trim() === "") {
    throw new ValidationError({ operation, field: "apiKey", message: `${operation}: apiKey is required` });
  }
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
  });
}
