import type { FastifyInstance, FastifyPluginAsync } from "fastify";
import { consolePlugin } from "./console/index";
import type { Accounts } from "./edge/auth";
import type { FastPath } from "./edge/fast-path";
import type { HostPolicy } from "./edge/hosts";
import { type ConnectionLimits, edgeServer } from "./edge/server";
import type { Management } from "./management";
import { graphqlPlugin } from "./management/graphql/index";
import { restPlugin } from "./management/rest/index";

/** The job plane as the app serves it: its routes and its lifecycle. */
export interface JobRoutes {
  /** Registered under /v2. */
  routes: FastifyPluginAsync;
  /** The hot /v2 routes, offered each request before Fastify (null: none). */
  fast?: FastPath | null;
  /** Before the server closes: answer every held request (long-polls) so closing does not wait on them. */
  release(): void;
  /** Once the server has closed: stop workers and timers. */
  stop(): Promise<void>;
}

export interface AppParts {
  accounts: Accounts;
  management: Management;
  jobs: JobRoutes;
  /** Max JSON body of the management APIs, bytes. */
  managementBodyLimit: number;
  /** Once after a first management request loads its routes or engine (ManagementWireDeps.afterLoad). */
  afterManagementLoad?: () => void;
  /** How long a client may take to send a request (edge/server.ts; default: Node's own bounds). */
  connections?: ConnectionLimits;
  /** The Host names answered (edge/hosts.ts); null or absent: any. */
  hosts?: HostPolicy;
}

/**
 * Builds the whole service as a Fastify app: the edge (body limits, logs, one error handler), the
 * management plane's REST v1 under /v1 and GraphQL at /graphql, the job plane under /v2, the console
 * (static files) at /console. Never
 * listens (tests may use inject()); see service/index.ts for that.
 */
export function buildApp({
  accounts,
  management,
  jobs,
  managementBodyLimit,
  afterManagementLoad,
  connections,
  hosts = null,
}: AppParts): FastifyInstance {
  const app = edgeServer(jobs.fast ?? undefined, connections, hosts);
  const wire = { accounts, management, bodyLimit: managementBodyLimit, afterLoad: afterManagementLoad };
  app.register(restPlugin(wire), { prefix: "/v1" });
  app.register(graphqlPlugin(wire));
  app.register(jobs.routes, { prefix: "/v2" });
  app.register(consolePlugin());
  app.addHook("preClose", async () => jobs.release());
  app.addHook("onClose", async () => jobs.stop());
  return app;
}
