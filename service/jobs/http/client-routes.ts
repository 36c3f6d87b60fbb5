import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import {
  JobSubmission,
  RunSyncQuery,
  STREAM_POSITION_HEADER,
  StatusQuery,
  StatusSyncQuery,
  StreamQuery,
} from "../../../sdk/schemas/job";
import { parseInput, parseQuery } from "../../edge/parse";
import { ServiceError } from "../../errors";
import { JOB_POLICY, type RateLimitedOperation } from "../policy";
import type { Admission, ClientRouteDeps } from "./client-deps";
import { registerOpenAiRoute } from "./openai-route";
import { clientGone, closeIfReleased } from "./wire";

interface EndpointParams {
  endpointId: string;
}
interface JobParams extends EndpointParams {
  jobId: string;
}

/**
 * Admits a client request before its body is read: the caller's account (401 otherwise), its queue
 * endpoint (404/400), then the rate limit (429; the request counts as in flight until `res` closes);
 * a new job also needs room in the endpoint's queue and in memory for its declared size. Shared by
 * the routes' onRequest hook and the fast path (fast-routes.ts).
 */
export function admitClient(
  deps: ClientRouteDeps,
  req: IncomingMessage,
  res: ServerResponse,
  endpointId: string,
  operation: RateLimitedOperation | null,
): Admission {
  const { jobs, limiter } = deps;
  const accountId = deps.accounts.authenticate(req.headers.authorization);
  jobs.queueEndpoint(accountId, endpointId);
  if (operation && limiter.enabled) res.once("close", limiter.admit(endpointId, operation));
  let reservation: Admission["reservation"] = null;
  if (operation === "run" || operation === "runsync" || operation === "openai") {
    reservation = jobs.reserveRoom(endpointId, bodyBytes(req, operation));
    if (reservation.held > 0) res.once("close", reservation.release);
  }
  return { accountId, endpointId, reservation };
}

/**
 * What a new job's body may hold in memory while it is read: its content-length; a chunked body (no
 * content-length) the route's limit, the most it may carry. A length past the limit holds nothing:
 * it is refused unread with 413.
 */
function bodyBytes(req: IncomingMessage, operation: "run" | "runsync" | "openai"): number {
  // /openai's limit is /run's (openai-route.ts).
  const limit = operation === "runsync" ? JOB_POLICY.runsyncBodyBytes : JOB_POLICY.runBodyBytes;
  const declared = req.headers["content-length"];
  const bytes =
    declared !== undefined ? Number(declared) : req.headers["transfer-encoding"] !== undefined ? limit : 0;
  return Number.isSafeInteger(bytes) && bytes > 0 && bytes <= limit ? bytes : 0;
}

const ADMISSION = "runpodkitAdmission";
type AdmittedRequest = FastifyRequest & { [ADMISSION]: Admission | null };

/**
 * The client side of /v2/{endpoint_id}: authenticate, find the queue endpoint, rate-limit (all three
 * in the route's onRequest hook, before the body is read: a refused request costs no parsing), parse,
 * call one JobService method, shape the reply. No rule lives here.
 */
export function registerClientRoutes(app: FastifyInstance, deps: ClientRouteDeps): void {
  const { jobs } = deps;
  // A field of every request of this scope (declared once, so requests keep one shape) rather than
  // a WeakMap entry per request.
  app.decorateRequest(ADMISSION, null);

  /**
   * The onRequest hook of a route: the caller's account (401 otherwise), its queue endpoint
   * (404/400), then the rate limit (429); the request counts as in flight until its reply is done.
   * A callback hook, not an async one: no promise and no extra turn per request (a thrown refusal
   * reaches the error handler all the same).
   */
  const admit =
    (operation: RateLimitedOperation | null) =>
    (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
      const { endpointId } = request.params as EndpointParams;
      (request as AdmittedRequest)[ADMISSION] = admitClient(
        deps,
        request.raw,
        reply.raw,
        endpointId,
        operation,
      );
      done();
    };

  const admitted = (request: FastifyRequest): Admission => {
    const admission = (request as AdmittedRequest)[ADMISSION];
    if (!admission) throw new Error(`${request.url}: the route has no admission hook`);
    return admission;
  };

  const jobOf = (request: FastifyRequest, accountId: string, ttl?: number) => {
    const { endpointId, jobId } = request.params as JobParams;
    return jobs.job(accountId, endpointId, jobId, ttl);
  };

  app.post(
    "/:endpointId/run",
    { bodyLimit: JOB_POLICY.runBodyBytes, onRequest: admit("run") },
    async (request) => {
      const { accountId, endpointId, reservation } = admitted(request);
      return jobs.run(accountId, endpointId, parseInput(JobSubmission, request.body, "body"), reservation);
    },
  );

  app.post(
    "/:endpointId/runsync",
    { bodyLimit: JOB_POLICY.runsyncBodyBytes, onRequest: admit("runsync") },
    async (request, reply) => {
      const { accountId, endpointId, reservation } = admitted(request);
      const { wait } = parseQuery(RunSyncQuery, request.query, "wait");
      const body = parseInput(JobSubmission, request.body, "body");
      const envelope = await jobs.runSync(
        accountId,
        endpointId,
        body,
        wait,
        clientGone(reply.raw),
        reservation,
      );
      closeIfReleased(reply.raw, deps.released);
      return envelope;
    },
  );

  const status = { onRequest: admit("status") };
  const statusOf = async (request: FastifyRequest) => {
    const { accountId } = admitted(request);
    const { ttl } = parseQuery(StatusQuery, request.query, "ttl");
    return jobs.envelope(jobOf(request, accountId, ttl));
  };
  app.get("/:endpointId/status/:jobId", status, statusOf);
  app.post("/:endpointId/status/:jobId", status, statusOf);

  // Long-poll status, used by the official JS and Go clients.
  const statusSync = async (request: FastifyRequest, reply: FastifyReply) => {
    const { accountId } = admitted(request);
    const { wait, ttl } = parseQuery(StatusSyncQuery, request.query, "wait");
    const envelope = await jobs.statusSync(jobOf(request, accountId, ttl), wait, clientGone(reply.raw));
    closeIfReleased(reply.raw, deps.released);
    return envelope;
  };
  // Its own limits: held calls in flight would otherwise fill /status's and refuse every poll.
  const statusSyncRoute = { onRequest: admit("status-sync") };
  app.get("/:endpointId/status-sync/:jobId", statusSyncRoute, statusSync);
  app.post("/:endpointId/status-sync/:jobId", statusSyncRoute, statusSync);

  const stream = async (request: FastifyRequest, reply: FastifyReply) => {
    const { accountId } = admitted(request);
    const job = jobOf(request, accountId);
    const { received, maxReplyBytes } = parseQuery(StreamQuery, request.query, "received");
    const handOut = await jobs.stream(job, deps.streamHoldMs, received, clientGone(reply.raw), maxReplyBytes);
    closeIfReleased(reply.raw, deps.released);
    const chunks = handOut.chunks;
    if (chunks.length > 0) {
      // Chunks are handed out once: a reply that is not written whole (the client or a proxy gone)
      // puts them back for the next poll, and a reader that sends `received` gets them again when
      // its next poll says this reply never reached it.
      const res = reply.raw;
      res.once("close", () =>
        jobs.streamReplyEnded(job, handOut, res.writableFinished, received !== undefined),
      );
    }
    reply.header(STREAM_POSITION_HEADER, String(handOut.position));
    const envelope = jobs.envelope(job);
    return envelope.error === undefined
      ? { status: job.status, stream: chunks }
      : { status: job.status, stream: chunks, error: envelope.error };
  };
  // No HEAD twin: a HEAD would drain the job's chunks into a reply with no body.
  app.get("/:endpointId/stream/:jobId", { onRequest: admit("stream"), exposeHeadRoute: false }, stream);
  app.post("/:endpointId/stream/:jobId", { onRequest: admit("stream") }, stream);

  app.post("/:endpointId/cancel/:jobId", { onRequest: admit("cancel") }, async (request) => {
    const job = jobs.cancel(jobOf(request, admitted(request).accountId));
    return { id: job.id, status: job.status };
  });

  app.post("/:endpointId/retry/:jobId", { onRequest: admit(null) }, async (request) =>
    jobs.retry(jobOf(request, admitted(request).accountId)),
  );

  app.post("/:endpointId/purge-queue", { onRequest: admit("purge-queue") }, async (request) => {
    const { accountId, endpointId } = admitted(request);
    return { removed: jobs.purgeQueue(accountId, endpointId), status: "completed" };
  });

  // Plain, not async: polled often (the SDK's and the console's progress), and answered at once.
  app.get("/:endpointId/health", { onRequest: admit(null) }, (request, reply) => {
    const { accountId, endpointId } = admitted(request);
    reply.send(jobs.health(accountId, endpointId));
  });

  // In the spec's rate-limit table, with no documented shapes: refused loudly, after the limits apply.
  app.get("/:endpointId/requests", { onRequest: admit("requests") }, async () => {
    throw new ServiceError("NOT_IMPLEMENTED", "GET /requests is not implemented by the local service");
  });
  registerOpenAiRoute(app, deps, admit("openai"), admitted);
}
