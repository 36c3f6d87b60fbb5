import type { FastifyPluginAsync } from "fastify";
import type { ServiceDeps, WorkerRegistry } from "./deps";
import type { Migration } from "./store/db";

/**
 * The job plane: /v2 routes, the job store, workers and the scaler. Built from the same deps as the
 * management plane (minus the worker registry, which it provides).
 */
export interface JobPlane {
  workers: WorkerRegistry;
  /** Registered by the app under the prefix /v2. */
  routes: FastifyPluginAsync;
  /** Starts background work (scaler, timers); called once the server listens. */
  start(): Promise<void>;
  /** Stops workers and timers; called when the app closes. */
  stop(): Promise<void>;
}

export const jobMigrations: Migration[] = [];

/** Placeholder until the job plane lands: every /v2 route answers 501 with its name. */
export function createJobPlane(_deps: Omit<ServiceDeps, "workers">): JobPlane {
  return {
    workers: { list: () => [] },
    routes: async (app) => {
      app.all("/*", async (request, reply) =>
        reply.code(501).send({ message: `${request.method} ${request.url} is not implemented yet` }),
      );
    },
    start: async () => {},
    stop: async () => {},
  };
}
