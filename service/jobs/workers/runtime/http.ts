import type { Dispatcher } from "undici";
import { dispatchWhole, type HttpReply } from "../../../../sdk/dispatch-reply";

export interface ExchangeOptions {
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /**
   * The whole exchange must end within this (ms), or it is dropped (rejects), on one native timer:
   * undici's headersTimeout/bodyTimeout tick every 499 ms while armed, which woke an idle worker
   * holding a 20 s long-poll twice a second (sdk/dispatch-reply.ts).
   */
  timeoutMs?: number;
}

/**
 * One HTTP exchange of the worker through `dispatcher`, the reply read whole (sdk/dispatch-reply.ts,
 * shared with the SDK). Not undici's `request()`: in the worker's loop of small requests about 2.5 KB
 * a call of its objects survived V8's young-generation collections into the old one (bench/tools/
 * runsync-tail.ts; `--trace-gc` of a worker), so every scavenge copied megabytes (5-15 ms pauses, a
 * full collection every few thousand jobs), each one a /runsync waiting on it. Rejects on a network
 * error, a timeout or `signal`'s abort.
 */
export function exchange(dispatcher: Dispatcher, url: string, options: ExchangeOptions): Promise<HttpReply> {
  const { origin, pathname, search } = new URL(url);
  return dispatchWhole(
    dispatcher,
    {
      origin,
      path: `${pathname}${search}`,
      method: options.method,
      headers: options.headers,
      body: options.body,
    },
    options.signal,
    options.timeoutMs,
  );
}
