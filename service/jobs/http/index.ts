import type { FastifyPluginAsync } from "fastify";
import { acceptEmptyJson } from "../../edge/body";
import type { ClientRouteDeps } from "./client-deps";
import { registerClientRoutes } from "./client-routes";
import { type ObserveRouteDeps, registerObserveRoutes } from "./observe-routes";
import { registerWorkerRoutes, type WorkerRouteDeps } from "./worker-routes";

/** Everything under /v2: the client job API, the read-only logs/jobs/workers routes and, in its own body-parsing scope, the worker protocol. */
export function jobRoutes(deps: {
  client: ClientRouteDeps;
  worker: WorkerRouteDeps;
  observe: ObserveRouteDeps;
}): FastifyPluginAsync {
  return async (app) => {
    // Bodyless POSTs that still say application/json (cancel, retry, purge) are fine.
    acceptEmptyJson(app);
    registerClientRoutes(app, deps.client);
    registerObserveRoutes(app, deps.observe);
    await app.register(async (workerScope) => registerWorkerRoutes(workerScope, deps.worker));
  };
}
