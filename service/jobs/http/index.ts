import type { FastifyPluginAsync } from "fastify";
import { acceptEmptyJson } from "../../edge/body";
import { type ClientRouteDeps, registerClientRoutes } from "./client-routes";
import { registerWorkerRoutes, type WorkerRouteDeps } from "./worker-routes";

/** Everything under /v2: the client job API and, in its own body-parsing scope, the worker protocol. */
export function jobRoutes(deps: { client: ClientRouteDeps; worker: WorkerRouteDeps }): FastifyPluginAsync {
  return async (app) => {
    // Bodyless POSTs that still say application/json (cancel, retry, purge) are fine.
    acceptEmptyJson(app);
    registerClientRoutes(app, deps.client);
    await app.register(async (workerScope) => registerWorkerRoutes(workerScope, deps.worker));
  };
}
