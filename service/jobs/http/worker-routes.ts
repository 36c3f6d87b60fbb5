import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import {
  JobDoneBody,
  JobStreamBody,
  JobTakeQuery,
  PingQuery,
  type StreamChunk,
} from "../../../sdk/schemas/job";
import { parseAnyBodyAsJson, refusedText, topLevelString } from "../../edge/body";
import { parseInput, parseQuery } from "../../edge/parse";
import { ServiceError } from "../../errors";
import type { JobMemory, Reservation } from "../book/memory";
import type { Dispatcher, WorkerSession } from "../dispatch/dispatcher";
import type { WorkerAccess } from "../dispatch/worker-access";
import { type Job, workerJobOf } from "../model/job";
import { clientGone, JSON_TYPE, pathId, pathParam } from "./wire";

export interface WorkerRouteDeps {
  dispatcher: Dispatcher;
  access: WorkerAccess;
  /** Largest job-done / job-stream body, bytes. */
  bodyLimit: number;
  /** The service's memory budget: a job-done or job-stream body holds its size against it while read. */
  memory: JobMemory;
  /**
   * Resolves once every change made so far is in the store (JobStore.flushed). job-done answers after
   * it (see afterWrite).
   */
  written: () => Promise<void>;
}

interface WorkerParams {
  endpointId: string;
  workerId: string;
}
interface WorkerJobParams extends WorkerParams {
  jobId: string;
}

/** Who a worker request is from, set by the scope's onRequest hook (a request decoration, see below). */
export interface Identified {
  session: WorkerSession;
  extra: URLSearchParams | null;
  /** The memory a job-done or job-stream body holds while it is read (see reserveBody); null when none. */
  reservation: Reservation | null;
}
const WORKER = "runpodkitWorker";
type WorkerRequest = FastifyRequest & { [WORKER]: Identified | null };

/** The reply of job-done, job-stream and ping: always the same text. */
export const EMPTY_REPLY = "{}";

/**
 * The worker protocol (docs/worker-protocol.md), exactly as workers of the real service speak it:
 * job-take (long-poll) and job-take-batch, job-stop, job-done (results and progress), job-stream,
 * ping. Bodies are read raw and parsed as JSON whatever their content-type says, once the worker is
 * identified (an onRequest hook of the scope: a refused request's body is never parsed).
 */
export function registerWorkerRoutes(app: FastifyInstance, deps: WorkerRouteDeps): void {
  const { dispatcher } = deps;
  parseAnyBodyAsJson(app, deps.bodyLimit);
  // A field of every request of this scope (declared once, so requests keep one shape) rather than
  // a WeakMap entry per request.
  app.decorateRequest(WORKER, null);

  /**
   * The worker's session (see WorkerAccess), and parameters appended to its id by a template without
   * `?`. A callback hook, not an async one: no promise and no extra turn per worker request (a
   * thrown refusal reaches the error handler all the same).
   */
  app.addHook("onRequest", (request, _reply, done) => {
    const params = request.params as Partial<WorkerParams>;
    if (params.endpointId !== undefined && params.workerId !== undefined) {
      (request as WorkerRequest)[WORKER] = identify(
        deps.access,
        params.endpointId,
        params.workerId,
        request.headers.authorization,
      );
    }
    done();
  });

  const sessionOf = (request: FastifyRequest): Identified => {
    const identified = (request as WorkerRequest)[WORKER];
    if (!identified) throw new Error(`${request.url}: the worker was not identified`);
    return identified;
  };

  const take = (batch: boolean) => async (request: FastifyRequest, reply: FastifyReply) => {
    const text = await takeJobs(dispatcher, sessionOf(request), request.query, batch, reply.raw);
    if (text === null) return reply.code(204).send();
    return reply.type("application/json").send(text);
  };

  // No HEAD twins (Fastify's default for a GET): a HEAD would run the GET and drop its body, handing
  // jobs or stop signals to a worker that never sees them. HEAD answers 405.
  const noHead = { exposeHeadRoute: false };
  app.get("/:endpointId/job-take/:workerId", noHead, take(false));
  app.get("/:endpointId/job-take-batch/:workerId", noHead, take(true));

  app.get("/:endpointId/job-stop/:workerId", noHead, async (request, reply) => {
    const { session } = sessionOf(request);
    const ids = await dispatcher.stopSignals(session, clientGone(reply.raw));
    if (ids.length === 0) return reply.code(204).send();
    return { jobsToStop: ids };
  });

  /** The onRequest hook of job-done and job-stream, once the worker is identified: reserveBody. */
  const reserve = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
    reserveBody(deps, request.raw, reply.raw, sessionOf(request));
    done();
  };

  // Plain handlers answering a fixed text: no serialisation per request. A refusal thrown here
  // reaches the error handler as from an async one.
  const failRefused = (request: FastifyRequest, _reply: FastifyReply, error: Error, done: () => void) => {
    const identified = (request as WorkerRequest)[WORKER];
    if (identified) {
      failRefusedResult(deps, identified, (request.params as WorkerJobParams).jobId, error, request.body);
    }
    done();
  };

  app.post(
    "/:endpointId/job-done/:workerId/:jobId",
    { onRequest: reserve, onError: failRefused },
    (request, reply) => {
      jobDone(dispatcher, sessionOf(request), (request.params as WorkerJobParams).jobId, request.body);
      return afterWrite(deps).then(() => reply.type(JSON_TYPE).send(EMPTY_REPLY));
    },
  );

  app.post("/:endpointId/job-stream/:workerId/:jobId", { onRequest: reserve }, (request, reply) => {
    const identified = sessionOf(request);
    const jobId = pathId((request.params as WorkerJobParams).jobId);
    const body = parseInput(JobStreamBody, request.body, "body");
    dispatcher.stream(identified.session, jobId, streamChunkOf(body), identified.reservation);
    // Kept chunks took the bytes over; dropped ones (a job no longer this worker's) free them here.
    identified.reservation?.release();
    reply.type(JSON_TYPE).send(EMPTY_REPLY);
  });

  app.get("/:endpointId/ping/:workerId", noHead, (request, reply) => {
    const { session } = sessionOf(request);
    const query = parseQuery(PingQuery, request.query, "query");
    dispatcher.ping(session, {
      jobIds: query.job_id ? query.job_id.split(",").filter(Boolean) : [],
      version: query.runpod_version,
      unhealthy: query.status === "unhealthy",
    });
    reply.type(JSON_TYPE).send(EMPTY_REPLY);
  });
}

/** A job-stream body as the chunk /stream shows: its output, and its metrics when they are an object. */
function streamChunkOf(body: { output?: unknown; metrics?: unknown }): StreamChunk {
  const { metrics } = body;
  return metrics !== null && typeof metrics === "object" && !Array.isArray(metrics)
    ? { output: body.output, metrics: metrics as Record<string, unknown> }
    : { output: body.output };
}

/**
 * Identifies a worker request (see WorkerAccess): its session, and parameters appended to its id by
 * a template without `?`. Shared by the scope's onRequest hook and the fast path (fast-routes.ts).
 */
export function identify(
  access: WorkerAccess,
  endpointId: string,
  workerIdParam: string,
  authorization: string | undefined,
): Identified {
  const { id: workerId, extra } = pathParam(workerIdParam);
  return { session: access.session(endpointId, workerId, authorization), extra, reservation: null };
}

/**
 * job-take and job-take-batch: the jobs handed to the worker as the JSON text of its reply, or null
 * when none (204). A job counts as taken once its reply is written; if the worker is gone before
 * (`res` closes unfinished), it is requeued. One close listener: the poll stops holding, or the jobs
 * it was answered with go back.
 */
export async function takeJobs(
  dispatcher: Dispatcher,
  { session, extra }: Identified,
  rawQuery: unknown,
  batch: boolean,
  res: ServerResponse,
): Promise<string | null> {
  const query = parseQuery(
    JobTakeQuery,
    extra === null ? rawQuery : { ...Object.fromEntries(extra), ...(rawQuery as object) },
    "query",
  );
  const max = batch ? (query.batch_size ?? 1) : 1;
  const holds = query.job_in_progress === undefined ? undefined : query.job_in_progress === "1";
  let handed: Job[] | null = null;
  const gone = clientGone(res, () => {
    if (handed !== null) dispatcher.undelivered(session, handed);
  });
  const jobs = await dispatcher.take(session, max, holds, gone);
  if (jobs.length === 0) return null;
  handed = jobs;
  return JSON.stringify(batch ? jobs.map(workerJobOf) : workerJobOf(jobs[0] as Job));
}

/**
 * Before a job-done or job-stream body is read, once the worker is identified: the body's size is
 * held against the memory budget until the route hands it over (a job-done output to the book and the
 * store; job-stream chunks take the bytes over as their own count, JobMemory.holdStream), or the
 * request ends whichever way (`res` closes: answered, refused, aborted, too large); past the budget it
 * is refused with UNAVAILABLE (503, Retry-After) unread. The size is the content-length; a chunked body
 * (no content-length) counts as the route's bodyLimit, the most it may carry. A content-length past
 * bodyLimit holds nothing: it is refused unread with 413.
 */
export function reserveBody(
  deps: Pick<WorkerRouteDeps, "bodyLimit" | "memory">,
  req: IncomingMessage,
  res: ServerResponse,
  identified: Identified,
): void {
  const declared = req.headers["content-length"];
  const bytes =
    declared !== undefined
      ? Number(declared)
      : req.headers["transfer-encoding"] !== undefined
        ? deps.bodyLimit
        : 0;
  if (Number.isSafeInteger(bytes) && bytes > 0 && bytes <= deps.bodyLimit) {
    const reservation = deps.memory.reserve(bytes);
    identified.reservation = reservation;
    res.once("close", reservation.release);
  }
}

/**
 * When job-done answers: once the result is in the store, so a worker told its result arrived never
 * loses it to a crash of the service (not a /runsync job answered with its result, whose row waits to
 * be written with others': see JobStore); and after the replies waiting on the result (a /runsync, a
 * /status-sync) went out, in the next turn of the event loop: on two cores the worker woken by its
 * reply otherwise competed with the service for the CPU just before the client's reply was written
 * (bench/tools/runsync-tail.ts).
 */
export function afterWrite(deps: Pick<WorkerRouteDeps, "written">): Promise<void> {
  return deps.written().then(() => new Promise<void>((resolve) => setImmediate(resolve)));
}

/**
 * A job-done body the service refused: past bodyLimit (413), not JSON, nested past the depth bound or
 * of the wrong shape (400). The real worker library sends a result once more only when the service
 * failed (5xx) or was not reached, so it gives up on it: left IN_PROGRESS, the job would wait to be
 * found lost and run again, to end the same way. Its end is known: it fails now, saying why. Not a
 * refused progress update (`status: "IN_PROGRESS"`, read from `body`, the parsed body, or from the
 * refused text): the job goes on, as the library goes on. A refusal of the worker itself (its key, its
 * endpoint) or of the moment (503: retry later) ends nothing; nor does a job that is not this worker's
 * (Dispatcher.done ignores it).
 */
export function failRefusedResult(
  deps: Pick<WorkerRouteDeps, "dispatcher" | "bodyLimit">,
  identified: Identified,
  jobIdParam: string | undefined,
  error: unknown,
  body: unknown,
): void {
  const why = refusalOf(error, deps.bodyLimit);
  if (why === null || jobIdParam === undefined || isProgress(body, refusedText(error))) return;
  try {
    deps.dispatcher.done(identified.session, pathId(jobIdParam), { error: `the job's result ${why}` });
  } catch {
    // No such job: nothing to end.
  }
}

function isProgress(body: unknown, text: string | undefined): boolean {
  if (body !== null && typeof body === "object") {
    return (body as { status?: unknown }).status === "IN_PROGRESS";
  }
  return text !== undefined && topLevelString(text, "status") === "IN_PROGRESS";
}

function refusalOf(error: unknown, bodyLimit: number): string | null {
  if ((error as { statusCode?: number } | null)?.statusCode === 413) {
    const mb = bodyLimit / (1024 * 1024);
    const limit = Number.isInteger(mb) ? `${mb} MB` : `${bodyLimit} bytes`;
    return `was larger than the ${limit} a worker may send (job-done was refused with 413)`;
  }
  if (error instanceof ServiceError && error.code === "VALIDATION") {
    return `was refused: ${error.message} (job-done answered 400)`;
  }
  return null;
}

/** job-done: the worker's result (its parsed body; none is `{}`) handed to the dispatcher; the reservation is released. */
export function jobDone(
  dispatcher: Dispatcher,
  identified: Identified,
  jobIdParam: string,
  body: unknown,
): void {
  dispatcher.done(identified.session, pathId(jobIdParam), parseInput(JobDoneBody, body ?? {}, "body"));
  // The output is the book's now (and, past spillOutputBytes, the store's once written).
  identified.reservation?.release();
}
