import type { FastifyError, FastifyInstance, FastifyReply } from "fastify";
import JSON5 from "json5";
import { ZodError, type z } from "zod";
import { describeIssues } from "../../../sdk/schemas/common";
import type { JobErrorBody } from "../../../sdk/schemas/job";
import { ServiceError } from "../../domain/errors";
import { STATUS_OF } from "../errors";

/** Validates a wire value with its schema; a failure is VALIDATION naming the first bad field. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown, where: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  const field = first && first.path.length > 0 ? first.path.map(String).join(".") : where;
  throw new ServiceError("VALIDATION", describeIssues(result.error), { field });
}

function errorBody(message: string, code: string, field?: string): JobErrorBody {
  const body: JobErrorBody = { error: message, message, code };
  if (field) body.field = field;
  return body;
}

/** The job API's errors: coded JSON bodies, Retry-After on 429, never the key. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | ServiceError | ZodError, request, reply) => {
    if (error instanceof ServiceError) {
      if (error.retryAfterMs !== undefined) reply.header("retry-after", Math.ceil(error.retryAfterMs / 1000));
      return reply.code(STATUS_OF[error.code]).send(errorBody(error.message, error.code, error.field));
    }
    if (error instanceof ZodError)
      return reply.code(400).send(errorBody(describeIssues(error), "VALIDATION"));
    const status = error.statusCode;
    if (status === 413) {
      return reply.code(413).send(errorBody(`body: ${error.message}`, "PAYLOAD_TOO_LARGE", "body"));
    }
    if (status !== undefined && status >= 400 && status < 500) {
      return reply.code(status).send(errorBody(`body: ${error.message}`, "VALIDATION", "body"));
    }
    request.log.error({ err: { message: error.message, stack: error.stack } }, "job plane error");
    return reply.code(500).send(errorBody("Internal server error", "INTERNAL"));
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0];
    return reply.code(404).send(errorBody(`no route ${request.method} ${path}`, "NOT_FOUND"));
  });
}

/** JSON that Python workers may write: NaN and Infinity tokens are accepted (they become numbers). */
export function parseWorkerJson(text: string): unknown {
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return JSON5.parse(text);
  }
}

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
 * (`J1&isStream=false`): the real library adds `&...` blindly (WORKER-PROTOCOL.md §3.1).
 */
export function pathParam(value: string): { id: string; extra: URLSearchParams } {
  const at = value.indexOf("&");
  if (at < 0) return { id: value, extra: new URLSearchParams() };
  return { id: value.slice(0, at), extra: new URLSearchParams(value.slice(at + 1)) };
}
