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
  headersTimeout?: number;
  bodyTimeout?: number;
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
    dispatcher.dispatch(
      {
        origin,
        path: `${pathname}${search}`,
        method: options.method,
        headers: options.headers,
        body: options.body,
        headersTimeout: options.headersTimeout,
        bodyTimeout: options.bodyTimeout,
      },
      new ReplyReader(signal, resolve, reject),
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
    this.#controller?.abort(this.#signal?.reason);
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#signal?.aborted) controller.abort(this.#signal.reason);
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
