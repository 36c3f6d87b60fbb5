import Fastify, { type FastifyError, type FastifyInstance } from "fastify";
import { ZodError } from "zod";
import { describeIssues } from "../sdk/schemas/common";
import type { ServiceDeps } from "./deps";
import { ServiceError } from "./domain/errors";
import { STATUS_OF } from "./http/errors";
import { graphqlPlugin } from "./http/graphql/index";
import { restPlugin } from "./http/rest/index";
import type { JobPlane } from "./job-plane";

/**
 * The server-wide body limit is the largest any route needs (/runsync: 20 MB, plus JSON framing);
 * the management routes set their own, smaller limit (config.managementBodyLimit) and the job plane
 * may set per-route limits below this one.
 */
export const SERVER_BODY_LIMIT = 21 * 1024 * 1024;

/** Removes `api_key=...` from a URL so it can be logged or echoed. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]api_key=)[^&#]*/gi, "$1[redacted]");
}

function isGraphql(url: string): boolean {
  return url === "/graphql" || url.startsWith("/graphql?");
}

/** One error body per wire: REST and jobs answer {message}; GraphQL answers {errors: [{message}]}. */
function errorBody(url: string, message: string, code: string, field?: string) {
  if (isGraphql(url))
    return { errors: [{ message, extensions: { code, ...(field ? { field } : {}) } }], data: null };
  // `code` is an addition to the real service's {"message"}: clients branch on it, never on the text.
  return { message, code, ...(field ? { field } : {}) };
}

function fastifyCode(error: FastifyError): string {
  if (error.statusCode === 413) return "PAYLOAD_TOO_LARGE";
  return error.statusCode === 401 ? "UNAUTHORIZED" : "VALIDATION";
}

/**
 * Builds the whole service as a Fastify app: REST v1 under /v1, GraphQL at /graphql, the job plane
 * under /v2. Never listens (tests may use inject()); see service/index.ts for that.
 */
export function buildApp(deps: ServiceDeps, jobPlane: JobPlane): FastifyInstance {
  const app = Fastify({
    bodyLimit: SERVER_BODY_LIMIT,
    logger: {
      level: "warn",
      // Never log headers (Authorization) or a key in the query string.
      serializers: { req: (req) => ({ method: req.method, url: redactUrl(req.url) }) },
    },
  });

  app.setErrorHandler((error: FastifyError | ServiceError | ZodError, request, reply) => {
    if (error instanceof ServiceError) {
      if (error.retryAfterMs !== undefined) reply.header("retry-after", Math.ceil(error.retryAfterMs / 1000));
      return reply
        .code(STATUS_OF[error.code])
        .send(errorBody(request.url, error.message, error.code, error.field));
    }
    if (error instanceof ZodError) {
      return reply.code(400).send(errorBody(request.url, describeIssues(error), "VALIDATION"));
    }
    const status = error.statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      // Fastify's own refusals: malformed JSON, empty JSON body, body too large, bad content type.
      return reply.code(status).send(errorBody(request.url, `body: ${error.message}`, fastifyCode(error)));
    }
    request.log.error(
      { err: { message: error.message, stack: error.stack }, route: request.routeOptions.url },
      "unexpected error",
    );
    return reply.code(500).send(errorBody(request.url, "Internal server error", "INTERNAL"));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0];
    return reply.code(404).send(errorBody(request.url, `no route ${request.method} ${path}`, "NOT_FOUND"));
  });

  app.register(restPlugin(deps), { prefix: "/v1" });
  app.register(graphqlPlugin(deps));
  app.register(jobPlane.routes, { prefix: "/v2" });
  app.addHook("onClose", async () => {
    await jobPlane.stop();
  });
  return app;
}
