import type { Server } from "node:http";
import type { FastifyPluginAsync } from "fastify";
import { acceptEmptyJson } from "../../edge/body";
import { type ClientRouteDeps, registerClientRoutes } from "./client-routes";
import { registerWorkerRoutes, type WorkerRouteDeps } from "./worker-routes";

export interface JobRoutesDeps {
  client: ClientRouteDeps;
  worker: WorkerRouteDeps;
  /** The HTTP server the routes are served by (workers are told its address). */
  onServer(server: Server): void;
}

/** Everything under /v2: the client job API and, in its own body-parsing scope, the worker protocol. */
export function jobRoutes(deps: JobRoutesDeps): FastifyPluginAsync {
  return async (app) => {
    deps.onServer(app.server);
    // Bodyless POSTs that still say application/json (cancel, retry, purge) are fine.
    acceptEmptyJson(app);
    registerClientRoutes(app, deps.client);
    await app.register(async (workerScope) => registerWorkerRoutes(workerScope, deps.worker));
  };
}
