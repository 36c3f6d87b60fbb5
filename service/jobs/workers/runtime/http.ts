import type { IncomingHttpHeaders } from "node:http";
import type { Dispatcher } from "undici";

/** A reply read whole: its status and its body as UTF-8 text. */
export interface Reply {
  status: number;
  text: string;
}

export interface ExchangeOptions {
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /**
   * The whole exchange must end within this (ms), or it is dropped (rejects). Kept as one native,
   * unref'd timer, armed once: undici's own headersTimeout/bodyTimeout run on its "fast timers",
   * which tick every 499 ms for as long as any of them is armed, so a worker holding a 20 s
   * long-poll open woke twice a second doing nothing (bench/tools/idle-cpu.ts). They are off (0)
   * for an exchange that sets this.
   */
  timeoutMs?: number;
}

/**
 * One HTTP exchange of the worker through `dispatcher`, the reply read whole. It stands in for
 * undici's `request()`, whose per-call objects outlive the call: in a loop of small requests,
 * about 2.5 KB a call survived V8's young-generation collections into the old one (bench/tools/
 * runsync-tail.ts; `--trace-gc` of a worker), so every scavenge copied megabytes (5-15 ms pauses, a
 * full collection every few thousand jobs), each one a /runsync waiting on it. A dispatch with this
 * handler leaves nothing behind. Rejects on a network error, a timeout or `signal`'s abort.
 */
export function exchange(dispatcher: Dispatcher, url: string, options: ExchangeOptions): Promise<Reply> {
  const { origin, pathname, search } = new URL(url);
  return new Promise<Reply>((resolve, reject) => {
    const { signal } = options;
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const limit = options.timeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const reader = new ReplyReader(
      signal,
      (reply) => {
        clearTimeout(timer);
        resolve(reply);
      },
      (error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
    if (limit !== undefined) {
      timer = setTimeout(
        () => reader.abort(new Error(`${options.method} ${pathname}: no reply within ${limit} ms`)),
        limit,
      );
      timer.unref();
    }
    dispatcher.dispatch(
      {
        origin,
        path: `${pathname}${search}`,
        method: options.method,
        headers: options.headers,
        body: options.body,
        ...(limit === undefined ? {} : { headersTimeout: 0, bodyTimeout: 0 }),
      },
      reader,
    );
  });
}

class ReplyReader implements Dispatcher.DispatchHandler {
  readonly #signal: AbortSignal | undefined;
  readonly #resolve: (reply: Reply) => void;
  readonly #reject: (error: unknown) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #status = 0;
  #chunks: Buffer[] = [];
  #length = 0;
  #aborted: Error | undefined;

  constructor(
    signal: AbortSignal | undefined,
    resolve: (reply: Reply) => void,
    reject: (error: unknown) => void,
  ) {
    this.#signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
    signal?.addEventListener("abort", this.#onAbort);
  }

  readonly #onAbort = (): void => {
    this.abort(this.#signal?.reason);
  };

  /** Drops the exchange: rejects with `reason` (the controller's abort reports it as an error). */
  abort(reason: unknown): void {
    this.#aborted = reason instanceof Error ? reason : new Error(String(reason ?? "aborted"));
    this.#controller?.abort(this.#aborted);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#signal?.aborted) controller.abort(this.#signal.reason);
    else if (this.#aborted !== undefined) controller.abort(this.#aborted);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    _headers: IncomingHttpHeaders,
  ): void {
    // 1xx replies are informational: the final reply follows.
    if (statusCode >= 200) this.#status = statusCode;
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#length += chunk.length;
  }

  onResponseEnd(): void {
    this.#signal?.removeEventListener("abort", this.#onAbort);
    const chunks = this.#chunks;
    const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, this.#length);
    // UTF-8, a byte order mark skipped (as undici's body.text()).
    const start = body.length > 2 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0;
    this.#resolve({ status: this.#status, text: body.toString("utf8", start) });
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    this.#signal?.removeEventListener("abort", this.#onAbort);
    this.#reject(error);
  }
}
