import { maxHeaderSize, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance } from "fastify";
import FindMyWay from "find-my-way";
import { ZodError } from "zod";
import { describeIssues } from "../../sdk/schemas/issues";
import type { JobErrorBody } from "../../sdk/schemas/job";
import { type ErrorCode, ServiceError } from "../errors";

/*
 * The one error handler of the service. Rules throw coded ServiceErrors; here each code gets its HTTP
 * status, and each wire its body:
 *   REST v1     {message, code, field?}                                 (the real service: {message})
 *   job API     {error, message, code, field?}                          (the real service: {error})
 *   GraphQL     {errors: [{message, path?, extensions: {code, field?}}], data}
 *               (errors raised while a document executes: management/graphql/engine.ts)
 * `code` is an addition to the real service's bodies: clients branch on it, never on the text.
 */

/** The one mapping from error codes to HTTP statuses. */
export const STATUS_OF: Record<ErrorCode, number> = {
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  VALIDATION: 400,
  CONFLICT: 400,
  IN_USE: 400,
  PRECONDITION: 400,
  UNAUTHORIZED: 401,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  UNSUPPORTED: 400,
  NOT_IMPLEMENTED: 501,
  HOST_NOT_ALLOWED: 421,
  UNAVAILABLE: 503,
};

type Wire = "rest" | "jobs" | "graphql";

/** Which wire a request came in on, from its path. */
export function wireOf(url: string): Wire {
  if (url === "/graphql" || url.startsWith("/graphql?")) return "graphql";
  if (url === "/v2" || url.startsWith("/v2/") || url.startsWith("/v2?")) return "jobs";
  return "rest";
}

/** A refusal, before it is written in a wire's words. */
interface Refusal {
  code: ErrorCode | "INTERNAL";
  message: string;
  field?: string | undefined;
}

export interface GraphqlErrorBody {
  message: string;
  path?: readonly (string | number)[];
  extensions: { code: string; field?: string };
}

function body(wire: Wire, { code, message, field }: Refusal) {
  if (wire === "graphql") {
    const error: GraphqlErrorBody = { message, extensions: { code, ...(field ? { field } : {}) } };
    return { errors: [error], data: null };
  }
  if (wire === "jobs") {
    const reply: JobErrorBody = { error: message, message, code };
    if (field) reply.field = field;
    return reply;
  }
  return { message, code, ...(field ? { field } : {}) };
}

/**
 * Fastify's own refusals (malformed JSON, empty JSON body, body too large, bad content type) are about
 * the body. A body past the route's limit names the limit: Fastify says only "Request body is too large".
 */
function fastifyRefusal(
  error: FastifyError,
  status: number,
  wire: Wire,
  bodyLimit: number | undefined,
): Refusal {
  if (status === 401) return { code: "UNAUTHORIZED", message: `body: ${error.message}` };
  if (status === 413 && bodyLimit !== undefined) {
    const byUrl = wire === "jobs" ? "; pass larger inputs by URL, for the handler to fetch" : "";
    return {
      code: "PAYLOAD_TOO_LARGE",
      message: `body: the request body is larger than the ${sizeText(bodyLimit)} this request may carry${byUrl}`,
      field: "body",
    };
  }
  if (error.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    // Fastify says only "Unsupported Media Type": say what to send (text/plain is refused so too: body.ts).
    return {
      code: "VALIDATION",
      message:
        "body: a JSON object is required, sent with content-type: application/json (no other content-type is accepted)",
      field: "body",
    };
  }
  return {
    code: status === 413 ? "PAYLOAD_TOO_LARGE" : "VALIDATION",
    message: `body: ${error.message}`,
    field: "body",
  };
}

/** 10485760 as `10 MB`, 4096 as `4 KB`, else bytes (the spec's MB are 1024 * 1024 bytes). */
function sizeText(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KB`;
  return `${bytes} bytes`;
}

/** How a refusal is answered: its status, body, Retry-After seconds, and whether it is unexpected (logged). */
export interface ErrorReply {
  status: number;
  body: object;
  retryAfterSeconds: number | undefined;
  unexpected: boolean;
}

/**
 * The one mapping from an error thrown while serving `url` to its reply: a ServiceError by its code, a
 * ZodError as VALIDATION, Fastify's own 4xx refusals as about the body, anything else 500 (unexpected).
 * Fastify's error handler and the job API's fast path (fast-path.ts) both answer through it.
 */
export function errorReply(error: unknown, url: string, bodyLimit?: number): ErrorReply {
  const wire = wireOf(url);
  if (error instanceof ServiceError) {
    const { code, message, field } = error;
    const retryAfterSeconds =
      error.retryAfterMs === undefined ? undefined : Math.ceil(error.retryAfterMs / 1000);
    return {
      status: STATUS_OF[code],
      body: body(wire, { code, message, field }),
      retryAfterSeconds,
      unexpected: false,
    };
  }
  if (error instanceof ZodError) {
    const refusal: Refusal = { code: "VALIDATION", message: describeIssues(error) };
    return { status: 400, body: body(wire, refusal), retryAfterSeconds: undefined, unexpected: false };
  }
  const status = (error as Partial<FastifyError> | null)?.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    const refusal = fastifyRefusal(error as FastifyError, status, wire, bodyLimit);
    return { status, body: body(wire, refusal), retryAfterSeconds: undefined, unexpected: false };
  }
  const refusal: Refusal = { code: "INTERNAL", message: "Internal server error" };
  return { status: 500, body: body(wire, refusal), retryAfterSeconds: undefined, unexpected: true };
}

/** The fields of an unexpected error's log line (never the request's headers: no key). */
export function unexpectedLogFields(error: unknown, route: string | undefined): object {
  const { message, stack } = error instanceof Error ? error : { message: String(error), stack: undefined };
  return { err: { message, stack }, route };
}

/** The methods routes are declared with (HEAD: Fastify's own, for every GET). */
const ROUTE_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] as const;

const API_PREFIX = /^\/(v1|v2|graphql|console)(\/|$)/;
const API_MAP =
  "this service answers REST under /v1, the job API under /v2/{endpoint id}, GraphQL at /graphql, the console at /console/";

/** The longest path a not-found or method-not-allowed message repeats whole; a longer one is cut. */
const MAX_SHOWN_PATH_CHARS = 200;

/** Fastify's limit of one path parameter (find-my-way's maxParamLength): no id comes near it. */
const MAX_PATH_PARAMETER_CHARS = 100;

/**
 * Fastify's refusals of a URL before any route (`frameworkErrors`): a path parameter past its length,
 * a malformed percent-encoding. Answered in the wire's own error shape, naming `path`, without echoing
 * the path (Fastify's own reply repeats it whole, 5 KB for a 5 KB segment).
 */
export function frameworkErrorReply(error: FastifyError, url: string): { status: number; body: object } {
  const tooLong = error.code === "FST_ERR_MAX_PARAM_LENGTH";
  const message = tooLong
    ? `path: a path segment is longer than ${MAX_PATH_PARAMETER_CHARS} characters; no id is that long`
    : "path: not a valid URL (a malformed percent-encoding)";
  const answer = errorReply(new ServiceError("VALIDATION", message, { field: "path" }), url);
  return { status: tooLong ? 414 : answer.status, body: answer.body };
}

/** Installs the error and not-found handlers on the root instance: every route of every wire answers through them. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | ServiceError | ZodError, request, reply) => {
    const answer = errorReply(error, request.url, request.routeOptions.bodyLimit);
    // Refused before its body was read (a bad key, a rate limit): the connection is not kept for the
    // rest of a body nobody will read.
    if (!request.raw.complete) reply.header("connection", "close");
    if (answer.retryAfterSeconds !== undefined) reply.header("retry-after", answer.retryAfterSeconds);
    if (answer.unexpected) {
      request.log.error(unexpectedLogFields(error, request.routeOptions.url), "unexpected error");
    }
    return reply.code(answer.status).send(answer.body);
  });
  // Every route's method and URL, to tell a path that exists with other methods (405) from none (404).
  const routes = FindMyWay();
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) {
      if (!routes.hasRoute(method as "GET", route.url)) routes.on(method as "GET", route.url, () => {});
    }
  });
  app.setNotFoundHandler((request, reply) => {
    // Shown in the reply cut to MAX_SHOWN_PATH_CHARS: a URL may be as long as Node's 16 KB header
    // limit, and a refusal costs no more than the request.
    const fullPath = request.url.split("?")[0] ?? "";
    const path =
      fullPath.length <= MAX_SHOWN_PATH_CHARS
        ? fullPath
        : `${fullPath.slice(0, MAX_SHOWN_PATH_CHARS)}… (${fullPath.length} characters)`;
    // A route of this very method matched and its handler found nothing there (a wildcard route's
    // `callNotFound`, e.g. /v1/docs/<no such file>): 404, not 405 naming the HEAD or GET twin.
    const routed = routes.find(request.method as "GET", request.url) !== null;
    const allowed = routed
      ? []
      : ROUTE_METHODS.filter(
          (method) => method !== request.method && routes.find(method, request.url) !== null,
        );
    if (allowed.length > 0) {
      const refusal: Refusal = {
        code: "METHOD_NOT_ALLOWED",
        message: `${request.method} is not a method of ${path}; it takes ${allowed.join(", ")}`,
      };
      return reply
        .code(405)
        .header("allow", allowed.join(", "))
        .send(body(wireOf(request.url), refusal));
    }
    // A path under none of the APIs is most often a client's base URL without its /v1 or /v2.
    const where = API_PREFIX.test(fullPath) ? "" : ` (${API_MAP})`;
    const message = routed
      ? `nothing at ${request.method} ${path}`
      : `no route ${request.method} ${path}${where}`;
    const refusal: Refusal = { code: "NOT_FOUND", message };
    return reply.code(404).send(body(wireOf(request.url), refusal));
  });
}

/** What a clientError handler needs of the server's bounds, to name them in a 408. */
export interface RequestBounds {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
}

/**
 * Node's refusals of a connection before Fastify sees a request (`clientError`): a request line or
 * headers that are not HTTP (400), headers past Node's size limit (431), a request not received within
 * the bounds (408). Answered in the wire's error shape ({message, code} like every other refusal, not
 * Fastify's {error, message, statusCode}); null when nothing is to be written (a reset connection).
 */
export function clientErrorReply(
  error: { code?: string | undefined },
  url: string | undefined,
  bounds: RequestBounds,
): { status: number; body: object } | null {
  if (error.code === "ECONNRESET") return null;
  const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;
  const [status, refusal]: [number, Refusal] =
    error.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? [
          408,
          {
            code: "VALIDATION",
            message: `request: not received in time (headers within ${seconds(bounds.headersTimeoutMs)}, the whole request within ${seconds(bounds.requestTimeoutMs)}); the connection is closed`,
            field: "request",
          },
        ]
      : error.code === "HPE_HEADER_OVERFLOW"
        ? [
            431,
            {
              code: "PAYLOAD_TOO_LARGE",
              message: `headers: larger than the ${maxHeaderSize} bytes this server takes (Node's --max-http-header-size); the connection is closed`,
              field: "headers",
            },
          ]
        : [
            400,
            {
              // Node's parser code (e.g. HPE_INVALID_METHOD) names the fault without echoing the bytes.
              code: "VALIDATION",
              message: `request: not valid HTTP/1.1 (${/^[A-Z_]{1,40}$/.test(error.code ?? "") ? error.code : "unreadable"}); the connection is closed`,
              field: "request",
            },
          ];
  // The request's URL is known once its headers were read (a 408 on a trickled body): its wire's shape.
  return { status, body: body(url === undefined ? "rest" : wireOf(url), refusal) };
}

/**
 * The server's `clientError` handler (Fastify's clientErrorHandler): writes clientErrorReply's answer
 * unless the socket is gone or a reply of its own was already started on it (a half-written reply
 * must not get a second status line), then closes the connection. Never throws: it runs on the
 * socket's error path, where a throw would take the process down.
 */
export function handleClientError(bounds: RequestBounds) {
  return (error: Error & { code?: string }, socket: Socket): void => {
    try {
      if (socket.destroyed) return;
      // Node keeps the in-flight response on the socket; its request says which wire this was.
      const inFlight = (
        socket as Socket & { _httpMessage?: { headersSent?: boolean; req?: { url?: string } } }
      )._httpMessage;
      const answer = clientErrorReply(error, inFlight?.req?.url, bounds);
      if (answer !== null && socket.writable && !inFlight?.headersSent) {
        const json = JSON.stringify(answer.body);
        socket.write(
          `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(json)}\r\nconnection: close\r\n\r\n${json}`,
        );
      }
      socket.destroy();
    } catch {
      // Nothing more can be said on this connection.
      if (!socket.destroyed) socket.destroy();
    }
  };
}

/** Removes `api_key=...` from a URL so it can be logged or echoed. */
export function redactUrl(url: string): string {
  return url.replace(/([?&]api_key=)[^&#]*/gi, "$1[redacted]");
}
