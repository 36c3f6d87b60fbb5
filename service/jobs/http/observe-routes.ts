import type { FastifyInstance, FastifyRequest } from "fastify";
import { LogsQuery, MetricsQuery, RecentJobsQuery } from "../../../sdk/schemas/observe";
import type { Accounts } from "../../edge/auth";
import { parseQuery } from "../../edge/parse";
import { ServiceError } from "../../errors";
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

/**
 * A followed reply whose reader takes lines slower than workers print them is ended once this much
 * more than its backlog waits to be sent: the service never holds an unbounded queue for a reader.
 */
export const FOLLOW_BEHIND_BYTES = 4 * 1024 * 1024;

/**
 * On every reply of these routes: they carry job inputs, outputs and log lines, which a browser (the
 * console) would otherwise keep in its disk cache after the tab is closed and the key forgotten.
 */
const NO_STORE = { "cache-control": "no-store" } as const;

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
    // A followed reply sends the lines that come next, which are never before a seq already read.
    if (query.follow && query.before !== undefined) {
      throw new ServiceError(
        "VALIDATION",
        "before: pages back through kept lines; it cannot be combined with follow=1 (leave one out)",
        { field: "before" },
      );
    }
    const filter = {
      workerId: query.worker,
      requestId: query.job,
      since: query.since,
      after: query.after,
      before: query.before,
    };
    const backlog = deps.logs.query(endpointId, filter, query.limit);
    const lines = (entries: LogEntry[]) => entries.map((entry) => `${JSON.stringify(entry)}\n`).join("");
    if (!query.follow) return reply.headers(NO_STORE).type("application/x-ndjson").send(lines(backlog));

    // Followed: the backlog, then each new entry as it is captured, until the client or the service goes.
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      "content-type": "application/x-ndjson",
      ...NO_STORE,
      "x-content-type-options": "nosniff",
    });
    raw.write(lines(backlog));
    // What may wait to be sent: the backlog (already bounded by the rings) and FOLLOW_BEHIND_BYTES more.
    const allowance = raw.writableLength + FOLLOW_BEHIND_BYTES;
    const send = (entry: LogEntry) => {
      if (raw.writableEnded) return;
      raw.write(lines([entry]));
      // Ended at once, its queue dropped: a reader that stopped reading must not hold it either.
      if (raw.writableLength > allowance) {
        end();
        raw.destroy();
      }
    };
    // Ends when the client goes, the reader falls behind, the endpoint is deleted or the service closes.
    const unfollow = deps.logs.follow(endpointId, filter, send, () => end());
    const end = () => {
      unfollow();
      deps.follows.delete(end);
      if (!raw.writableEnded) raw.end();
    };
    deps.follows.add(end);
    raw.once("close", end);
  });

  app.get("/:endpointId/jobs", async (request, reply) => {
    const { accountId, endpointId } = endpointOf(request);
    const query = parseQuery(RecentJobsQuery, request.query, "query");
    reply.headers(NO_STORE);
    return { jobs: deps.jobs.recent(accountId, endpointId, query) };
  });

  app.get("/:endpointId/metrics", async (request, reply) => {
    const { endpointId } = endpointOf(request);
    const { since } = parseQuery(MetricsQuery, request.query, "since");
    reply.headers(NO_STORE);
    return { points: deps.series.points(endpointId, since) };
  });

  app.get("/:endpointId/workers", async (request, reply) => {
    const { accountId, endpointId } = endpointOf(request);
    reply.headers(NO_STORE);
    return { workers: deps.pool.views(accountId, endpointId) };
  });
}
