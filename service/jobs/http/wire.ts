import type { FastifyReply } from "fastify";

/** Aborts when the client goes away before its reply is written (long-polls stop holding then). */
export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

/**
 * A path parameter of a worker route, with parameters a template without `?` appended to it
 * (`J1&isStream=false`): the real library adds `&...` blindly (docs/worker-protocol.md, section 1).
 */
export function pathParam(value: string): { id: string; extra: URLSearchParams } {
  const at = value.indexOf("&");
  if (at < 0) return { id: value, extra: new URLSearchParams() };
  return { id: value.slice(0, at), extra: new URLSearchParams(value.slice(at + 1)) };
}
