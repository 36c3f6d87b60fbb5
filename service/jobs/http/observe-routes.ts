import type { FastifyInstance, FastifyRequest } from "fastify";
import { LogsQuery, RecentJobsQuery } from "../../../sdk/schemas/observe";
import type { Accounts } from "../../edge/auth";
import { parseQuery } from "../../edge/parse";
import type { JobService } from "../client/job-service";
import type { LogBook, LogEntry } from "../logs/log-book";
import type { EndpointSeries } from "../observe/series";
import type { WorkerPool } from "../workers/pool";

export interface ObserveRouteDeps {
  accounts: Accounts;
  jobs: JobService;
  logs: LogBook;
  pool: WorkerPool;
  series: EndpointSeries;
  /** Followed log replies still open: the plane ends them all before the server closes. */
  follows: Set<() => void>;
}

interface EndpointParams {
  endpointId: string;
}

/**
 * Read-only routes of /v2/{endpoint_id} for `runpodkit logs` and the console: worker logs (JSON lines,
 * optionally followed), recent jobs with their timelines, queue depth and workers over time, and the
 * workers. The same key as the job
 * API, in `authorization`.
 */
export function registerObserveRoutes(app: FastifyInstance, deps: ObserveRouteDeps): void {
  const endpointOf = (request: FastifyRequest) => {
    const accountId = deps.accounts.authenticate(request.headers.authorization);
    const { endpointId } = request.params as EndpointParams;
    deps.jobs.endpoint(accountId, endpointId);
    return { accountId, endpointId };
  };

  app.get("/:endpointId/logs", async (request, reply) => {
    const { endpointId } = endpointOf(request);
    const query = parseQuery(LogsQuery, request.query, "query");
    const filter = { workerId: query.worker, requestId: query.job, since: query.since, after: query.after };
    const backlog = deps.logs.query(endpointId, filter, query.limit);
    const lines = (entries: LogEntry[]) => entries.map((entry) => `${JSON.stringify(entry)}\n`).join("");
    if (!query.follow) return reply.type("application/x-ndjson").send(lines(backlog));

    // Followed: the backlog, then each new entry as it is captured, until the client or the service goes.
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      "content-type": "application/x-ndjson",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    });
    raw.write(lines(backlog));
    const unfollow = deps.logs.follow(endpointId, filter, (entry) => raw.write(lines([entry])));
    const end = () => {
      unfollow();
      deps.follows.delete(end);
      if (!raw.writableEnded) raw.end();
    };
    deps.follows.add(end);
    raw.once("close", end);
  });

  app.get("/:endpointId/jobs", async (request) => {
    const { accountId, endpointId } = endpointOf(request);
    const { limit } = parseQuery(RecentJobsQuery, request.query, "query");
    return { jobs: deps.jobs.recent(accountId, endpointId, limit) };
  });

  app.get("/:endpointId/metrics", async (request) => {
    const { endpointId } = endpointOf(request);
    return { points: deps.series.points(endpointId) };
  });

  app.get("/:endpointId/workers", async (request) => {
    const { accountId, endpointId } = endpointOf(request);
    return { workers: deps.pool.views(accountId, endpointId) };
  });
}
