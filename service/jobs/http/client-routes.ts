import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { JobSubmission, RunSyncQuery, StatusQuery, StatusSyncQuery } from "../../../sdk/schemas/job";
import type { Accounts } from "../../edge/auth";
import { parseInput } from "../../edge/parse";
import { ServiceError } from "../../errors";
import type { JobService } from "../client/job-service";
import type { RateLimiter } from "../client/rate-limit";
import { JOB_POLICY, type RateLimitedOperation } from "../policy";
import { clientGone } from "./wire";

export interface ClientRouteDeps {
  accounts: Accounts;
  jobs: JobService;
  limiter: RateLimiter;
  /** How long /stream holds when no chunk is buffered, ms. */
  streamHoldMs: number;
}

interface EndpointParams {
  endpointId: string;
}
interface JobParams extends EndpointParams {
  jobId: string;
}

/**
 * The client side of /v2/{endpoint_id}: authenticate, find the queue endpoint, rate-limit, parse,
 * call one JobService method, shape the reply. No rule lives here.
 */
export function registerClientRoutes(app: FastifyInstance, deps: ClientRouteDeps): void {
  const { jobs, limiter } = deps;

  /** The caller's account (401 otherwise), its queue endpoint (404/400), then the rate limit (429). */
  const admit = (request: FastifyRequest, operation: RateLimitedOperation | null) => {
    const accountId = deps.accounts.authenticate(request.headers.authorization);
    const { endpointId } = request.params as EndpointParams;
    jobs.queueEndpoint(accountId, endpointId);
    const release = operation ? limiter.admit(endpointId, operation) : () => {};
    return { accountId, endpointId, release };
  };

  const jobOf = (request: FastifyRequest, accountId: string, ttl?: number) => {
    const { endpointId, jobId } = request.params as JobParams;
    return jobs.job(accountId, endpointId, jobId, ttl);
  };

  app.post("/:endpointId/run", { bodyLimit: JOB_POLICY.runBodyBytes }, async (request) => {
    const { accountId, endpointId, release } = admit(request, "run");
    try {
      return await jobs.run(accountId, endpointId, parseInput(JobSubmission, request.body, "body"));
    } finally {
      release();
    }
  });

  app.post("/:endpointId/runsync", { bodyLimit: JOB_POLICY.runsyncBodyBytes }, async (request, reply) => {
    const { accountId, endpointId, release } = admit(request, "runsync");
    try {
      const { wait } = parseInput(RunSyncQuery, request.query, "wait");
      const body = parseInput(JobSubmission, request.body, "body");
      return await jobs.runSync(accountId, endpointId, body, wait, clientGone(reply));
    } finally {
      release();
    }
  });

  const status = async (request: FastifyRequest) => {
    const { accountId, release } = admit(request, "status");
    try {
      const { ttl } = parseInput(StatusQuery, request.query, "ttl");
      return jobs.envelope(jobOf(request, accountId, ttl));
    } finally {
      release();
    }
  };
  app.get("/:endpointId/status/:jobId", status);
  app.post("/:endpointId/status/:jobId", status);

  // Long-poll status, used by the official JS and Go clients.
  const statusSync = async (request: FastifyRequest, reply: FastifyReply) => {
    const { accountId, release } = admit(request, "status");
    try {
      const { wait, ttl } = parseInput(StatusSyncQuery, request.query, "wait");
      return await jobs.statusSync(jobOf(request, accountId, ttl), wait, clientGone(reply));
    } finally {
      release();
    }
  };
  app.get("/:endpointId/status-sync/:jobId", statusSync);
  app.post("/:endpointId/status-sync/:jobId", statusSync);

  const stream = async (request: FastifyRequest, reply: FastifyReply) => {
    const { accountId, release } = admit(request, "stream");
    try {
      const job = jobOf(request, accountId);
      const { chunks } = await jobs.stream(job, deps.streamHoldMs, clientGone(reply));
      const envelope = jobs.envelope(job);
      return envelope.error === undefined
        ? { status: job.status, stream: chunks }
        : { status: job.status, stream: chunks, error: envelope.error };
    } finally {
      release();
    }
  };
  app.get("/:endpointId/stream/:jobId", stream);
  app.post("/:endpointId/stream/:jobId", stream);

  app.post("/:endpointId/cancel/:jobId", async (request) => {
    const { accountId, release } = admit(request, "cancel");
    try {
      const job = jobs.cancel(jobOf(request, accountId));
      return { id: job.id, status: job.status };
    } finally {
      release();
    }
  });

  app.post("/:endpointId/retry/:jobId", async (request) => {
    const { accountId } = admit(request, null);
    return jobs.retry(jobOf(request, accountId));
  });

  app.post("/:endpointId/purge-queue", async (request) => {
    const { accountId, endpointId, release } = admit(request, "purge-queue");
    try {
      return { removed: jobs.purgeQueue(accountId, endpointId), status: "completed" };
    } finally {
      release();
    }
  });

  app.get("/:endpointId/health", async (request) => {
    const { accountId, endpointId } = admit(request, null);
    return jobs.health(accountId, endpointId);
  });

  // In the spec's rate-limit table, with no documented shapes: refused loudly, after the limits apply.
  app.get("/:endpointId/requests", async (request) => {
    admit(request, "requests").release();
    throw new ServiceError("NOT_IMPLEMENTED", "GET /requests is not implemented by the local service");
  });
  app.post("/:endpointId/openai/*", async (request) => {
    admit(request, "openai").release();
    throw new ServiceError("NOT_IMPLEMENTED", "POST /openai/* is not implemented by the local service");
  });
}
