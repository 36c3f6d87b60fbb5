import type { ServerResponse } from "node:http";

/** The content type Fastify gives a serialised object; replies sent as ready JSON text say the same. */
export const JSON_TYPE = "application/json; charset=utf-8";

/**
 * Aborts when the client goes away before its reply is written (long-polls stop holding then);
 * `alsoWhenGone` runs then too (one close listener for both).
 */
export function clientGone(res: ServerResponse, alsoWhenGone?: () => void): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => {
    if (res.writableFinished) return;
    controller.abort();
    alsoWhenGone?.();
  });
  return controller.signal;
}

/**
 * A held reply answered because the service is stopping (its holds released) ends its connection:
 * left open for keep-alive, it would keep the service's close waiting until the client hangs up.
 */
export function closeIfReleased(res: ServerResponse, released: () => boolean): void {
  if (released()) res.shouldKeepAlive = false;
}

/**
 * A path parameter of a worker route, with parameters a template without `?` appended to it
 * (`J1&isStream=false`): the real library adds `&...` blindly (docs/worker-protocol.md, section 1).
 */
export function pathParam(value: string): { id: string; extra: URLSearchParams | null } {
  const at = value.indexOf("&");
  // The usual case (no parameters appended) allocates nothing.
  if (at < 0) return { id: value, extra: null };
  return { id: value.slice(0, at), extra: new URLSearchParams(value.slice(at + 1)) };
}

/** The id part of a worker route's path parameter (see pathParam). */
export function pathId(value: string): string {
  const at = value.indexOf("&");
  return at < 0 ? value : value.slice(0, at);
}
