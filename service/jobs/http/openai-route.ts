import type { ServerResponse } from "node:http";
import type {
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
} from "fastify";
import { z } from "zod";
import {
  JOB_LIMITS,
  type JobEnvelope,
  type JobErrorBody,
  type JobSubmission,
  type StreamChunk,
} from "../../../sdk/schemas/job";
import { JSON_LIMITS } from "../../edge/body";
import { errorReply, unexpectedLogFields } from "../../edge/errors";
import { parseInput } from "../../edge/parse";
import { ServiceError } from "../../errors";
import type { StreamHandOut } from "../book/book";
import type { Reservation } from "../book/memory";
import { jsonTextPiece } from "../dispatch/chunks";
import { isTerminal, type Job } from "../model/job";
import { JOB_POLICY } from "../policy";
import type { Admission, ClientRouteDeps } from "./client-deps";
import { clientGone, closeIfReleased } from "./wire";

/**
 * /v2/{endpoint_id}/openai/<path>: an OpenAI-style request made a job of the endpoint, as RunPod's
 * vLLM worker (runpod-workers/worker-vllm) takes it: input `{openai_route: "/<path>", openai_input:
 * <the JSON body>}`. The reply waits for the job as /runsync does (JobService.runSync, and /stream's
 * hand-out for `"stream": true`), so an OpenAI client pointed at `<service>/v2/<id>/openai/v1` talks
 * to a local handler. The contract is in docs/src/installation-configuration.md ("OpenAI-compatible requests").
 */

/** Most characters of the path after /openai (OpenAI's routes are a few short segments). */
const ROUTE_MAX_CHARS = 256;
/** Most characters of a job's error quoted in an error reply (a traceback may be long). */
const MESSAGE_MAX_CHARS = 8_192;
/** How long a reply waits for its job (and, streamed, for each next chunk): /runsync's default. */
export const OPENAI_WAIT_MS = JOB_LIMITS.runsyncWait.default;

/**
 * The path after /openai, as the router decoded it: `/`-separated segments of letters, digits, `-`,
 * `_` and inner dots. A `.` or `..` segment, an empty one or any other byte is refused: the route
 * is handed to the handler, which may use it to pick a file or an upstream URL.
 */
const OpenAiRoute = z
  .string()
  .max(ROUTE_MAX_CHARS)
  .regex(/^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/, {
    message:
      "a path of segments of letters, digits, '-', '_' and '.' (not leading), such as v1/chat/completions",
  });

/** An OpenAI request body: a JSON object (its own fields are the handler's to check). */
const OpenAiBody = z.record(z.string(), z.unknown());

/**
 * Most levels of objects and arrays in a body, itself one: the job input holds it one level down, so
 * the input is at most /run's `input` (JSON_LIMITS.depth). The server's parser lets a body's members
 * be JSON_LIMITS.depth deep, two levels more: a handler that returns what it got (runpodkit/echo)
 * then reports a result too deep for job-done, refused, and the job hangs until its timeout.
 */
const BODY_MAX_DEPTH = JSON_LIMITS.depth - 1;

type OpenAiErrorReply = {
  status: number;
  type: string;
  code: string;
  message: string;
  /** The request field it is about (the service's `field`), as OpenAI's `param`; null for none. */
  param?: string | null;
};

/**
 * Registers POST (and GET, which OpenAI clients use for `/v1/models`) on /:endpointId/openai/*,
 * with /run's admission (`admit`: key, endpoint, the `openai` rate-limit row, queue room, the body's
 * memory) and its body limit.
 */
export function registerOpenAiRoute(
  app: FastifyInstance,
  deps: ClientRouteDeps,
  admit: onRequestHookHandler,
  admitted: (request: FastifyRequest) => Admission,
): void {
  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const { accountId, endpointId, reservation } = admitted(request);
    const route = routeOf(request);
    // A GET (the model list) has no body: an empty object, so handlers can read fields off it alike.
    const body = request.method === "GET" ? {} : parseInput(OpenAiBody, request.body, "body");
    if (depthOf(body) > BODY_MAX_DEPTH) {
      throw new ServiceError(
        "VALIDATION",
        `body nested deeper than ${BODY_MAX_DEPTH} levels (the job input holds it one level down; /run's input takes ${JSON_LIMITS.depth})`,
        { field: "body" },
      );
    }
    const submission: JobSubmission = { input: { openai_route: route, openai_input: body } };
    const signal = clientGone(reply.raw);
    if (body.stream !== true) {
      const envelope = await deps.jobs.runSync(
        accountId,
        endpointId,
        submission,
        OPENAI_WAIT_MS,
        signal,
        reservation,
      );
      // Its chunks (a generator's yields) were the output answered here: nothing reads them after.
      if (envelope.status === "COMPLETED") deps.jobs.answeredWhole(envelope.id);
      closeIfReleased(reply.raw, deps.released);
      return answer(reply, envelope, deps.released());
    }
    return streamJob(
      deps,
      reply,
      deps.jobs.submit(accountId, endpointId, submission, "sync", reservation),
      signal,
    );
  };
  const options = { bodyLimit: JOB_POLICY.runBodyBytes, onRequest: admit, errorHandler: routeRefusal };
  app.post("/:endpointId/openai/*", options, handle);
  // No HEAD twin: a HEAD would make a job whose reply has no body.
  app.get("/:endpointId/openai/*", { ...options, exposeHeadRoute: false }, handle);
}

/**
 * The route's own refusals (admission: key, endpoint, rate limit, queue room, memory; the body's size,
 * content type and validation) as OpenAI errors, as the job outcomes are: an OpenAI client reads
 * `error.message`, `.type`, `.code` and `.param` off `{error: {...}}`, and the service's string `error`
 * showed as `400 "<message>"` with `code` undefined. Status, message, Retry-After and the connection's
 * close are the service's (edge/errors.ts errorReply); `code` is the service's code (what /run's body
 * says), `param` its `field`. Only 429 and 503 (refused before any job, nothing done) are worth a retry.
 */
function routeRefusal(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const answer = errorReply(error, request.url, request.routeOptions.bodyLimit);
  // The job API's body of that refusal: {error, message, code, field?}.
  const { error: message, code, field } = answer.body as JobErrorBody;
  // Refused before its body was read: the connection is not kept for the rest of it (as elsewhere).
  if (!request.raw.complete) reply.header("connection", "close");
  if (answer.retryAfterSeconds !== undefined) reply.header("retry-after", answer.retryAfterSeconds);
  if (answer.unexpected) {
    request.log.error(unexpectedLogFields(error, request.routeOptions.url), "unexpected error");
  }
  const { status } = answer;
  const openAiError = {
    status,
    type: OPENAI_TYPE[status] ?? (status < 500 ? "invalid_request_error" : "server_error"),
    code: code ?? "INTERNAL",
    message,
    param: field ?? null,
  };
  return sendError(reply, openAiError, RETRIED.has(status));
}

/** The `type` of a refusal by status, in OpenAI's words (its client raises a class per status too). */
const OPENAI_TYPE: Record<number, string> = {
  401: "authentication_error",
  429: "rate_limit_error",
  503: "service_unavailable",
};

/** Statuses an OpenAI client should retry: a rate limit and a full memory budget, refused before any job. */
const RETRIED = new Set([429, 503]);

/** Levels of objects and arrays in a parsed value (the parser bounded it: recursion is safe). */
function depthOf(value: unknown): number {
  if (typeof value !== "object" || value === null) return 0;
  let deepest = 0;
  for (const item of Array.isArray(value) ? value : Object.values(value)) {
    deepest = Math.max(deepest, depthOf(item));
  }
  return deepest + 1;
}

/** The path after /openai as the handler gets it (`/v1/chat/completions`), or VALIDATION (400). */
function routeOf(request: FastifyRequest): string {
  const path = request.url.split("?", 1)[0] ?? "";
  // Encoded bytes are refused before decoding: `%2e%2e` is `..`, `%2f` a separator the router kept.
  if (path.includes("%")) {
    throw new ServiceError("VALIDATION", "path: an /openai route has no percent-encoded bytes", {
      field: "path",
    });
  }
  const wildcard = (request.params as Record<string, string | undefined>)["*"] ?? "";
  return `/${parseInput(OpenAiRoute, wildcard, "path")}`;
}

/**
 * The job's end as an OpenAI reply: COMPLETED answers its output (see bodyOf); anything else is an
 * OpenAI-shaped error (errorOf).
 */
function answer(reply: FastifyReply, envelope: JobEnvelope, stopping: boolean): FastifyReply {
  if (envelope.status === "COMPLETED") {
    const body = bodyOf(envelope.output);
    const refusal = handlerRefusal(body);
    if (refusal) return sendError(reply, refusal);
    return reply.code(200).send(body ?? null);
  }
  return sendError(reply, errorOf(envelope, { stopping }));
}

/**
 * A completed job's output as one reply body. worker-vllm is a generator handler started with
 * `return_aggregate_stream`: a non-streamed request makes it yield once (the whole completion), and
 * the job's output is the list of its yields, `[completion]`. A list of one item is that item (no
 * OpenAI reply is a bare array, so a handler returning one object is never mistaken); any other
 * output (a plain handler's object) is the body as it is.
 */
function bodyOf(output: unknown): unknown {
  return Array.isArray(output) && output.length === 1 ? output[0] : output;
}

/**
 * worker-vllm answers a request vLLM refuses (a bad model name, an unknown route) as a completed
 * job whose output is vLLM's error object (`{object: "error", message, type, code}`, code an HTTP
 * status): answered with that status (a 4xx; anything else 400: the request is what vLLM refused),
 * as vLLM's own server does, so OpenAI clients raise it instead of reading it as a completion.
 */
function handlerRefusal(body: unknown): OpenAiErrorReply | null {
  if (typeof body !== "object" || body === null || (body as { object?: unknown }).object !== "error") {
    return null;
  }
  const { message, type, code, param } = body as {
    message?: unknown;
    type?: unknown;
    code?: unknown;
    param?: unknown;
  };
  const status = typeof code === "number" && Number.isInteger(code) && code >= 400 && code < 500 ? code : 400;
  return {
    status,
    type: typeof type === "string" ? type : "invalid_request_error",
    code: typeof code === "string" ? code : String(status),
    param: typeof param === "string" ? cut(param) : null,
    message: cut(
      typeof message === "string" ? message : JSON.stringify(message ?? "the handler refused the request"),
    ),
  };
}

/**
 * A job that did not complete, as an OpenAI error. No 5xx (the project's rule): the handler or the
 * caller caused each of these, and OpenAI clients retry 5xx, 408 and 409 (a new job each time), so
 * the replies also say `x-should-retry: false`.
 * - FAILED: 422, the request was taken but the handler could not do it.
 * - TIMED_OUT: 408, the endpoint's execution timeout ended it.
 * - CANCELLED (or removed, a purge): 409, someone else ended the job.
 * - still going when the wait ends: 408, naming the job: it goes on and /status/{id} reads its end.
 *   The wait also ends when the service stops (`stopping`, its holds released): said so, not as
 *   the 90 s run out.
 */
function errorOf(
  envelope: Pick<JobEnvelope, "id" | "status" | "error">,
  { gone = false, stopping = false }: { gone?: boolean; stopping?: boolean } = {},
): OpenAiErrorReply {
  const { id, status } = envelope;
  if (gone) {
    return {
      status: 409,
      type: "job_cancelled",
      code: "job_removed",
      message: `job ${id} was removed before it ended`,
    };
  }
  switch (status) {
    case "FAILED":
      return {
        status: 422,
        type: "handler_error",
        code: "job_failed",
        message: cut(`job ${id} failed: ${envelope.error ?? "the handler gave no error"}`),
      };
    case "TIMED_OUT":
      return {
        status: 408,
        type: "timeout_error",
        code: "job_timed_out",
        message: `job ${id} reached its execution timeout`,
      };
    case "CANCELLED":
      return {
        status: 409,
        type: "job_cancelled",
        code: "job_cancelled",
        message: `job ${id} was cancelled`,
      };
    default:
      if (stopping) {
        return {
          status: 408,
          type: "timeout_error",
          code: "service_stopping",
          message: `job ${id} is still ${status}: the service is stopping, so this route stopped waiting for it`,
        };
      }
      return {
        status: 408,
        type: "timeout_error",
        code: "wait_timeout",
        message: `job ${id} is still ${status} after the ${OPENAI_WAIT_MS / 1000} s this route waits; it goes on: read its end at /status/${id}`,
      };
  }
}

const cut = (text: string): string =>
  text.length <= MESSAGE_MAX_CHARS
    ? text
    : `${text.slice(0, MESSAGE_MAX_CHARS)}… (${text.length} characters)`;

const errorBody = ({ message, type, code, param }: OpenAiErrorReply) => ({
  error: { message, type, code, param: param ?? null },
});

/**
 * An OpenAI error reply. `x-should-retry` is the openai client's retry rule (without it, it retries
 * 408, 409, 429 and 5xx): true only for a refusal before any job (`retry`); a retry after a job's end
 * would make another job.
 */
function sendError(reply: FastifyReply, error: OpenAiErrorReply, retry = false): FastifyReply {
  return reply.code(error.status).header("x-should-retry", String(retry)).send(errorBody(error));
}

/**
 * `"stream": true`: the job's stream chunks written as server-sent events as /stream hands them out
 * (JobService.stream, held up to OPENAI_WAIT_MS for each next chunk; a chunk is taken once its
 * event is written, one not written goes back). The status line waits for the first chunk, so a job
 * that fails before streaming still answers its error status; after it, an error is an event. Only
 * the wait is the client's: a client gone ends it, never the job.
 */
async function streamJob(
  deps: ClientRouteDeps,
  reply: FastifyReply,
  job: Job,
  signal: AbortSignal,
): Promise<FastifyReply | undefined> {
  const { jobs } = deps;
  const res = reply.raw;
  let handOut = await jobs.stream(job, OPENAI_WAIT_MS, undefined, signal);
  if (signal.aborted) return left(deps, job, handOut);
  const gone = !jobs.exists(job);
  if (handOut.chunks.length === 0 && (gone || job.status !== "COMPLETED")) {
    // Nothing streamed, and it failed, ended otherwise, or the wait ran out: a plain error reply.
    await jobs.syncHoldEnded(job, isTerminal(job));
    closeIfReleased(res, deps.released);
    return sendError(reply, errorOf(jobs.envelope(job), { gone, stopping: deps.released() }));
  }
  reply.hijack();
  closeIfReleased(res, deps.released);
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
  });
  const events = new EventWriter(res, (bytes) => jobs.holdMemory(bytes));
  // Every way out (the end, a client gone, a throw) frees what the writer holds against the budget.
  try {
    let streamed = false;
    for (;;) {
      for (const chunk of handOut.chunks) events.chunk(chunk);
      streamed ||= handOut.chunks.length > 0;
      jobs.streamReplyEnded(job, handOut, !res.destroyed, false);
      // Those chunks just left the budget: what the writer keeps of them takes their place.
      const refused = events.holdMemory();
      if (refused) {
        events.json(errorBody(refused));
        await jobs.syncHoldEnded(job, false);
        res.end();
        return undefined;
      }
      await drained(res);
      events.sent();
      if (signal.aborted) return left(deps, job);
      // A hold that ends with nothing: the job ended (its last chunks were handed out before), or the
      // wait for a next chunk ran out, or the service is stopping.
      if (handOut.chunks.length === 0) break;
      handOut = await jobs.stream(job, OPENAI_WAIT_MS, undefined, signal);
    }
    const ended = isTerminal(job);
    if (job.status === "COMPLETED") {
      // A plain (non-generator) handler streams nothing: its output is the one event.
      if (!streamed) events.output(bodyOf(jobs.envelope(job).output));
      events.done();
    } else {
      events.json(
        errorBody(errorOf(jobs.envelope(job), { gone: !jobs.exists(job), stopping: deps.released() })),
      );
    }
    await jobs.syncHoldEnded(job, ended);
    res.end();
    return undefined;
  } finally {
    events.release();
  }
}

/** The client went away during the wait: its chunks go back, the job goes on. */
async function left(deps: ClientRouteDeps, job: Job, handOut?: StreamHandOut): Promise<undefined> {
  if (handOut && handOut.chunks.length > 0) deps.jobs.streamReplyEnded(job, handOut, false, false);
  await deps.jobs.syncHoldEnded(job, false);
  return undefined;
}

/**
 * Writes a job's stream as SSE. worker-vllm with RAW_OPENAI_OUTPUT (its default) yields the SSE text
 * of vLLM's server (`data: {...}\n\n` events, `data: [DONE]` last): a string is passed through as it
 * is. Without it, it yields lists of chunk objects (and drops `[DONE]`): an array is its items, each
 * by these rules; any other value is one `data: <json>` event. `[DONE]` ends the stream once. A
 * chunk over /stream's 1 MB bound that is not a string or a list reaches /stream as pieces of its
 * JSON text (splitChunk): they are rejoined into that value, so it is one event as any other.
 *
 * The pieces leave the job's buffer, and the budget, as they are handed out; the writer holds what
 * it keeps of them against the memory budget instead (holdMemory): the pieces until their last one,
 * then the event written from them until the connection took it (sent). A slow reader of a 100 MB
 * output thus holds it counted, as the chunks were, and new jobs and chunks are refused past the
 * budget instead of the service holding more than it.
 */
class EventWriter {
  readonly #res: ServerResponse;
  /** The end of the text written so far, to find a `[DONE]` a handler sent (it may span chunks). */
  #tail = "";
  /**
   * The JSON text pieces of one output received so far (jsonTextPiece), until its last. At most that
   * output's JSON: one job-stream body, which the worker routes bound.
   */
  #pieces: string[] = [];
  #piecesOf: object | null = null;
  /** Holds bytes against the memory budget (JobService.holdMemory): UNAVAILABLE when they do not fit. */
  readonly #hold: (bytes: number) => Reservation;
  /** UTF-16 units (the budget's measure) of the kept pieces, and of rejoined events written, not yet held. */
  #unheldPieces = 0;
  #unheldWritten = 0;
  /** What holds the kept pieces, and the rejoined events written but maybe not yet sent. */
  #piecesHeld: Reservation[] = [];
  #writtenHeld: Reservation[] = [];

  constructor(res: ServerResponse, hold: (bytes: number) => Reservation) {
    this.#res = res;
    this.#hold = hold;
  }

  /**
   * Holds against the budget what this writer took since the last call (the hand-out's chunks were
   * just released, so they fit but for a budget used up meanwhile). A refusal drops what is held and
   * is answered as the stream's last event: the pieces are gone from the buffer, the job goes on.
   */
  holdMemory(): OpenAiErrorReply | null {
    try {
      if (this.#unheldPieces > 0) this.#piecesHeld.push(this.#hold(this.#unheldPieces));
      this.#unheldPieces = 0;
      if (this.#unheldWritten > 0) this.#writtenHeld.push(this.#hold(this.#unheldWritten));
      this.#unheldWritten = 0;
      return null;
    } catch (error) {
      this.release();
      this.#pieces = [];
      this.#piecesOf = null;
      if (!(error instanceof ServiceError)) throw error;
      return { status: 503, type: "service_unavailable", code: "memory_budget", message: error.message };
    }
  }

  /** The connection took what was written (it drained, or closed): rejoined events no longer held. */
  sent(): void {
    for (const held of this.#writtenHeld.splice(0)) held.release();
  }

  /** Frees everything held (the reply ended, however). */
  release(): void {
    for (const held of [...this.#piecesHeld.splice(0), ...this.#writtenHeld.splice(0)]) held.release();
    this.#unheldPieces = 0;
    this.#unheldWritten = 0;
  }

  /** One chunk /stream handed out: its output, once whole. */
  chunk(chunk: StreamChunk): void {
    const piece = jsonTextPiece(chunk);
    if (!piece) {
      this.output(chunk.output);
      return;
    }
    // A piece out of order (another /stream reader of the job took the ones between) drops its
    // output: only part of it could be written.
    if (piece.of !== this.#piecesOf || piece.index !== this.#pieces.length) {
      this.#dropPieces();
      this.#piecesOf = piece.index === 0 ? piece.of : null;
      if (piece.index !== 0) return;
    }
    const text = String(chunk.output);
    this.#pieces.push(text);
    this.#unheldPieces += text.length;
    if (piece.index < piece.count - 1) return;
    const whole = this.#pieces.join("");
    this.#pieces = [];
    this.#piecesOf = null;
    // The pieces' hold passes to the event written from them, until it is sent.
    this.#writtenHeld.push(...this.#piecesHeld.splice(0));
    this.#unheldWritten += this.#unheldPieces;
    this.#unheldPieces = 0;
    this.output(JSON.parse(whole));
  }

  #dropPieces(): void {
    this.#pieces = [];
    this.#piecesOf = null;
    for (const held of this.#piecesHeld.splice(0)) held.release();
    this.#unheldPieces = 0;
  }

  output(value: unknown): void {
    if (typeof value === "string") this.#write(value);
    else if (Array.isArray(value)) for (const item of value) this.output(item);
    else this.json(value);
  }

  json(value: unknown): void {
    this.#write(`data: ${JSON.stringify(value ?? null)}\n\n`);
  }

  done(): void {
    if (!/data: \[DONE\]\s*$/.test(this.#tail)) this.#write("data: [DONE]\n\n");
  }

  #write(text: string): void {
    if (text.length === 0 || this.#res.destroyed) return;
    this.#res.write(text);
    this.#tail = (this.#tail + text).slice(-32);
  }
}

/** Resolves once the connection's buffer has room again (a slow reader holds the next hand-out), or it closed. */
function drained(res: ServerResponse): Promise<void> {
  if (!res.writableNeedDrain || res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
