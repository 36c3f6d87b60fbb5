import type { FastifyInstance } from "fastify";
import JSON5 from "json5";
import { ServiceError } from "../errors";

/*
 * How request bodies are read, and how large they may be. Each route sets its own limit below the
 * server's (management bodies: config.managementBodyLimit; /run and /runsync: the job API's limits;
 * worker results: the job plane's workerBodyLimit); Fastify refuses a larger body with 413 before
 * anything parses it. What a body must contain is then checked by its zod schema (parse.ts).
 */

/** The largest any route needs (/runsync: 20 MB, plus JSON framing). */
export const SERVER_BODY_LIMIT = 21 * 1024 * 1024;

/** JSON bodies of a scope may be empty (bodyless POSTs that still say application/json): empty is undefined. */
export function acceptEmptyJson(app: FastifyInstance): void {
  const defaultJson = app.getDefaultJsonParser("error", "ignore");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text === "") done(null, undefined);
    else defaultJson(request, text, done);
  });
}

/**
 * Every body of a scope is read raw and parsed as JSON whatever its content-type says, as workers
 * of the real service send it (form-urlencoded headers on JSON text; NaN and Infinity from Python).
 */
export function parseAnyBodyAsJson(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string", bodyLimit }, (_request, body, done) => {
    try {
      done(null, lenientJson(String(body)));
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      done(new ServiceError("VALIDATION", `body: not JSON: ${reason}`, { field: "body" }), undefined);
    }
  });
}

/** JSON, or JSON5 when it holds NaN or Infinity tokens (they become numbers); empty text is undefined. */
export function lenientJson(text: string): unknown {
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return JSON5.parse(text);
  }
}
