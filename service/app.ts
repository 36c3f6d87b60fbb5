import type { FastifyInstance } from "fastify";
import type { ServiceDeps } from "./deps";
import { edgeServer } from "./edge/server";
import { graphqlPlugin } from "./http/graphql/index";
import { restPlugin } from "./http/rest/index";
import type { JobPlane } from "./job-plane";

/**
 * Builds the whole service as a Fastify app: the edge (body limits, logs, one error handler), REST v1
 * under /v1, GraphQL at /graphql, the job plane under /v2. Never listens (tests may use inject());
 * see service/index.ts for that.
 */
export function buildApp(deps: ServiceDeps, jobPlane: JobPlane): FastifyInstance {
  const app = edgeServer();
  app.register(restPlugin(deps), { prefix: "/v1" });
  app.register(graphqlPlugin(deps));
  app.register(jobPlane.routes, { prefix: "/v2" });
  app.addHook("onClose", async () => {
    await jobPlane.stop();
  });
  return app;
}
