import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import FindMyWay from "find-my-way";
import { clientJson, compressedBodyRefusal, type DefaultJsonParser } from "./body";
import { errorReply, unexpectedLogFields } from "./errors";

/*
 * The fast path: the job API's hottest routes (a job's /run and /runsync, job-take, job-done)
 * answered by plain node:http handlers placed in front of Fastify (edgeServer's serverFactory),
 * without Fastify's per-request objects, hooks and reply pipeline. Wire only: a route here calls the
 * same JobService and Dispatcher methods, and refuses through the same mapping (errors.ts
 * errorReply), as its Fastify twin. A request a fast route does not take on (see FastRoute) goes on
 * to Fastify, which serves it as before: the fast path only ever answers the plain cases.
 */

/** Path parameters (decoded, as Fastify's router gives them) and the query (its querystring parser). */
export type Params = { [name: string]: string | undefined };
export type Query = { [name: string]: string | string[] | undefined };

/**
 * A fast route's handler. Returns false, before touching `res`, for a request it leaves to Fastify
 * (e.g. a body without a content-length); otherwise it answers through `res` (send, sendError).
 * A refusal thrown synchronously is answered with sendError.
 */
export type FastRoute = (req: IncomingMessage, res: ServerResponse, params: Params, query: Query) => boolean;

const JSON_HEADER = "application/json; charset=utf-8";

/** The fast routes of the server, matched with the router Fastify uses (same parameters and query). */
export class FastPath {
  // find-my-way with Fastify's defaults: parameters of at most 100 characters, case-sensitive paths.
  readonly #router = FindMyWay();
  #log: FastifyBaseLogger | null = null;
  #defaultJson: DefaultJsonParser | null = null;
  #closing = false;
  #size = 0;
  #served = 0;

  add(method: "GET" | "POST", path: string, route: FastRoute): void {
    this.#router.on(method, path, () => {}, route);
    this.#size++;
  }

  /** Takes the server's logger (unexpected errors) and its JSON parser (clientJson), once Fastify is built. */
  attach(app: FastifyInstance): void {
    this.#log = app.log;
    this.#defaultJson = app.getDefaultJsonParser("error", "ignore");
  }

  /** A client's application/json body text as the job API's Fastify scope parses it (body.ts clientJson). */
  clientJson(text: string): unknown {
    if (!this.#defaultJson) throw new Error("FastPath.clientJson: not attached to the server");
    return clientJson(text, this.#defaultJson);
  }

  /** From now on every request goes to Fastify (which answers 503 while closing). */
  close(): void {
    this.#closing = true;
  }

  /** True when a fast route took the request on (answered or answering it); false: Fastify serves it. */
  serve(req: IncomingMessage, res: ServerResponse): boolean {
    // A compressed body is Fastify's to refuse (edge/body.ts refuseCompressedBodies).
    if (this.#size === 0 || this.#closing || compressedBodyRefusal(req.headers)) return false;
    const found = this.#router.find(req.method as "GET", req.url ?? "/");
    if (found === null) return false;
    const route = found.store as FastRoute;
    let taken = true;
    try {
      taken = route(req, res, found.params, found.searchParams);
    } catch (error) {
      this.sendError(req, res, error);
    }
    if (taken) this.#served++;
    return taken;
  }

  /** Requests the fast routes took on so far. */
  get served(): number {
    return this.#served;
  }

  /**
   * Answers a refusal as Fastify's error handler does (installErrorHandling): same status, body,
   * headers. `ofBodyParser`: the body's parser refused it, which Fastify answers with Connection: close.
   */
  sendError(req: IncomingMessage, res: ServerResponse, error: unknown, ofBodyParser = false): void {
    if (res.headersSent || res.destroyed) {
      res.destroy();
      return;
    }
    const answer = errorReply(error, req.url ?? "/");
    if (answer.unexpected) this.#log?.error(unexpectedLogFields(error, routePath(req)), "unexpected error");
    const text = JSON.stringify(answer.body);
    const headers: Record<string, string | number> = {
      "content-type": JSON_HEADER,
      "content-length": Buffer.byteLength(text),
    };
    if (answer.retryAfterSeconds !== undefined) headers["retry-after"] = answer.retryAfterSeconds;
    // Refused before its body was read: the connection is not kept for the rest of a body nobody reads.
    if (!req.complete || ofBodyParser) headers.connection = "close";
    res.writeHead(answer.status, headers);
    res.end(text);
  }
}

/** The path of a request without its query (logged: it carries no key; worker keys travel in headers). */
function routePath(req: IncomingMessage): string {
  const url = req.url ?? "/";
  const at = url.indexOf("?");
  return at < 0 ? url : url.slice(0, at);
}

/** Answers 200 with a JSON text, with the content type Fastify gives JSON. */
export function sendJsonText(res: ServerResponse, text: string): void {
  res.writeHead(200, { "content-type": JSON_HEADER, "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Answers 204 with no body. */
export function sendNoContent(res: ServerResponse): void {
  res.writeHead(204);
  res.end();
}

/**
 * The declared size of a body a fast route reads itself: its content-length when there is one, at
 * most `limit`, and no transfer-encoding; null otherwise (the route leaves the request to Fastify,
 * which refuses a larger body with 413 unread and cuts a chunked one off at the limit).
 */
export function plainBodySize(req: IncomingMessage, limit: number): number | null {
  if (req.headers["transfer-encoding"] !== undefined) return null;
  const declared = req.headers["content-length"];
  if (declared === undefined) return null;
  const bytes = Number(declared);
  return Number.isSafeInteger(bytes) && bytes >= 0 && bytes <= limit ? bytes : null;
}

/**
 * Reads a body of a declared size (plainBodySize: Node's parser never delivers more) as UTF-8 text,
 * then calls `onText`; nothing is called when the request is aborted (its response's close then
 * releases what the route holds). A throw from `onText` is answered by the caller's `onError`.
 */
export function readText(
  req: IncomingMessage,
  onText: (text: string) => void,
  onError: (error: unknown) => void,
): void {
  let text = "";
  req.setEncoding("utf8");
  req.on("data", (chunk: string) => {
    text += chunk;
  });
  req.once("end", () => run(onText, text, onError));
}

function run(onText: (text: string) => void, text: string, onError: (error: unknown) => void): void {
  try {
    onText(text);
  } catch (error) {
    onError(error);
  }
}
