import type { IncomingHttpHeaders } from "node:http";
import type { Dispatcher } from "undici";

/** A reply read whole: its status, headers and body as UTF-8 text. */
export interface HttpReply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/**
 * One dispatch through `dispatcher`, its reply read whole. It stands in for undici's `request()`,
 * whose per-call async resource, body stream and promise a small JSON reply does not need, and whose
 * per-call objects outlive the call: in a loop of small requests they are promoted out of V8's young
 * generation, so every scavenge copies them (the worker runtime's and the SDK's hot loops both go
 * through here). The caller's signal aborts the exchange through the dispatch's controller, at once
 * or as soon as it starts; `timeoutMs`, when given, bounds the whole exchange (queueing and connect
 * included) instead of undici's headersTimeout/bodyTimeout, rejecting with EXCHANGE_TIMEOUT_CODE when
 * it runs out; `maxReplyBytes`, when given, bounds the reply's body (REPLY_TOO_LARGE_CODE past it).
 * Rejects on a network error, a timeout, a reply too large or the signal's abort.
 *
 * A leaf module (undici's types only): the SDK's HTTP client and the standalone worker runtime share it.
 */
export function dispatchWhole(
  dispatcher: Dispatcher,
  request: Dispatcher.DispatchOptions,
  signal?: AbortSignal,
  timeoutMs?: number,
  maxReplyBytes?: number,
): Promise<HttpReply> {
  return new Promise<HttpReply>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    if (timeoutMs === undefined) {
      dispatcher.dispatch(request, new ReplyCollector(signal, resolve, reject, maxReplyBytes));
      return;
    }
    // One native, unref'd timer armed once for the whole exchange, undici's own timeouts off: those
    // run on undici's "fast timers", which tick every 499 ms while any is armed, so a process holding
    // a 20 s long-poll open woke twice a second doing nothing (bench/tools/idle-cpu.ts).
    let timer: NodeJS.Timeout | undefined;
    const collector = new ReplyCollector(
      signal,
      (reply) => {
        clearTimeout(timer);
        resolve(reply);
      },
      (error) => {
        clearTimeout(timer);
        reject(error);
      },
      maxReplyBytes,
    );
    timer = setTimeout(() => collector.abort(exchangeTimeout(request, timeoutMs)), timeoutMs);
    timer.unref();
    // A caller that already turned undici's timeouts off pays for no copy.
    const untimed =
      request.headersTimeout === 0 && request.bodyTimeout === 0
        ? request
        : { ...request, headersTimeout: 0, bodyTimeout: 0 };
    dispatcher.dispatch(untimed, collector);
  });
}

/** The `code` of the error an exchange's own timer (dispatchWhole's `timeoutMs`) ends it with. */
export const EXCHANGE_TIMEOUT_CODE = "RUNPODKIT_EXCHANGE_TIMEOUT";

/** The error of an exchange whose `timeoutMs` ran out (its path without the query, which may hold a key). */
export function exchangeTimeout(request: Dispatcher.DispatchOptions, timeoutMs: number): Error {
  const path = request.path.split("?", 1)[0];
  return Object.assign(new Error(`${request.method} ${path}: no reply within ${timeoutMs} ms`), {
    code: EXCHANGE_TIMEOUT_CODE,
  });
}

/**
 * The property an exchange's error carries (the reply's status) when it failed after the reply had
 * begun: the service acted on the request and part of its answer was lost.
 */
export const REPLY_CUT = "replyCutAfterStatus";

/** The status of the reply an exchange's error was cut from, or undefined when no reply had begun. */
export function replyCutStatus(error: unknown): number | undefined {
  const status = (error as Record<string, unknown> | null)?.[REPLY_CUT];
  return typeof status === "number" ? status : undefined;
}

/** Where a cut reply's headers are kept on its error (not enumerable: dumps of the error leave them out). */
const REPLY_CUT_HEADERS = Symbol("replyCutHeaders");

/** The headers of the reply an exchange's error was cut from, or undefined when no reply had begun. */
export function replyCutHeaders(error: unknown): IncomingHttpHeaders | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  return (error as { [REPLY_CUT_HEADERS]?: IncomingHttpHeaders })[REPLY_CUT_HEADERS];
}

/** The `code` of the error an exchange ends with when its reply passes `maxReplyBytes`. */
export const REPLY_TOO_LARGE_CODE = "RUNPODKIT_REPLY_TOO_LARGE";

/** The error of a reply past `maxReplyBytes`. */
function replyTooLarge(maxReplyBytes: number, seen: number): Error {
  return Object.assign(new Error(`the reply is larger than ${maxReplyBytes} bytes (at least ${seen})`), {
    code: REPLY_TOO_LARGE_CODE,
  });
}

class ReplyCollector implements Dispatcher.DispatchHandler {
  readonly #signal: AbortSignal | undefined;
  readonly #resolve: (reply: HttpReply) => void;
  readonly #reject: (error: unknown) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #status = 0;
  #headers: IncomingHttpHeaders = {};
  #chunks: Buffer[] = [];
  #length = 0;
  #aborted: Error | undefined;
  /** The most a reply may hold, read whole into memory (undefined: no bound). */
  readonly #maxBytes: number | undefined;

  constructor(
    signal: AbortSignal | undefined,
    resolve: (reply: HttpReply) => void,
    reject: (error: unknown) => void,
    maxBytes?: number,
  ) {
    this.#signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#maxBytes = maxBytes;
    signal?.addEventListener("abort", this.#onAbort);
  }

  readonly #onAbort = (): void => {
    this.#controller?.abort(this.#signal?.reason);
  };

  /**
   * Drops the exchange: it rejects with `reason` now (not only once a queued or connecting request
   * starts, so a timer ends the wait on time), and the request is aborted as soon as it starts.
   */
  abort(reason: Error): void {
    this.#aborted = reason;
    if (this.#controller !== undefined) {
      this.#controller.abort(reason);
      return;
    }
    this.#signal?.removeEventListener("abort", this.#onAbort);
    this.#reject(reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#signal?.aborted) controller.abort(this.#signal.reason);
    else if (this.#aborted !== undefined) controller.abort(this.#aborted);
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: IncomingHttpHeaders,
  ): void {
    // 1xx replies are informational: the final reply follows.
    if (statusCode < 200) return;
    this.#status = statusCode;
    this.#headers = headers;
    // A declared length past the bound is refused before any of it is read.
    const declared = Number(headers["content-length"]);
    if (this.#maxBytes !== undefined && declared > this.#maxBytes) {
      controller.abort(replyTooLarge(this.#maxBytes, declared));
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#length += chunk.length;
    // An endless or huge reply (a wrong baseUrl, a hostile server) would otherwise be held whole.
    if (this.#maxBytes !== undefined && this.#length > this.#maxBytes) {
      this.#chunks = [];
      controller.abort(replyTooLarge(this.#maxBytes, this.#length));
      return;
    }
    this.#chunks.push(chunk);
  }

  onResponseEnd(): void {
    this.#signal?.removeEventListener("abort", this.#onAbort);
    const chunks = this.#chunks;
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, this.#length);
    // UTF-8, a byte order mark skipped (as undici's body.text()).
    const start = body.length > 2 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
    this.#resolve({ status: this.#status, headers: this.#headers, text: body.toString("utf8", start) });
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.#signal?.removeEventListener("abort", this.#onAbort);
    // The reply had begun: what the service sent may be lost (a /stream poll's chunks are handed out
    // once). Marked on the error (never on the caller's own abort reason) for callers that must know.
    if (this.#status >= 200 && error instanceof Error && error !== this.#signal?.reason) {
      Object.assign(error, { [REPLY_CUT]: this.#status });
      Object.defineProperty(error, REPLY_CUT_HEADERS, { value: this.#headers });
    }
    this.#reject(error);
  }
}

/**
 * Error codes of a request that was never sent (no connection could be set up: refused, or the
 * connect timed out). Sending it again cannot repeat anything, whatever the method: the SDK's job
 * submission and the worker runtime's result posts are retried on these.
 */
export const NEVER_SENT_CODES: readonly string[] = ["ECONNREFUSED", "UND_ERR_CONNECT_TIMEOUT"];

/** Parses Retry-After (seconds or an HTTP date) into milliseconds from `now`. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw.trim() === "") return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, Math.round(seconds * 1000));
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
