import { EventEmitter } from "node:events";
import type { AddressInfo } from "node:net";
import { buildApp } from "./app";
import { type Clock, SystemClock } from "./clock";
import type { ServiceConfig, ServiceDeps, ServiceEventMap } from "./deps";
import { Accounts } from "./edge/auth";
import { createIds, type Ids } from "./ids";
import { createJobPlane, jobMigrations } from "./job-plane";
import { openDatabase } from "./store/db";
import { managementMigrations } from "./store/management-migrations";

export { buildApp } from "./app";

/** Defaults of the tunables. 1 MiB for management bodies: far above any real resource definition. */
export const DEFAULT_CONFIG: ServiceConfig = {
  managementBodyLimit: 1024 * 1024,
};

export interface StartServiceOptions {
  /** Each key is one account. */
  apiKeys: string[];
  /** 0 (default) = any free port. */
  port?: number;
  /** SQLite file, or ":memory:" (default) for a throwaway store. */
  data?: string;
  clock?: Clock;
  ids?: Ids;
  config?: Partial<ServiceConfig>;
}

export interface RunningService {
  /** http://127.0.0.1:P/v1 */
  restUrl: string;
  /** http://127.0.0.1:P/graphql */
  graphqlUrl: string;
  /** http://127.0.0.1:P (jobs at {queueUrl}/v2/{endpointId}) */
  queueUrl: string;
  port: number;
  deps: ServiceDeps;
  close(): Promise<void>;
}

/** Starts the whole service on 127.0.0.1: opens the store, builds the app, listens, starts the job plane. */
export async function startService(options: StartServiceOptions): Promise<RunningService> {
  if (options.apiKeys.length === 0) throw new Error("startService: at least one API key is required");
  const db = openDatabase(options.data ?? ":memory:", [...managementMigrations, ...jobMigrations]);
  const baseDeps: Omit<ServiceDeps, "workers"> = {
    db,
    clock: options.clock ?? new SystemClock(),
    ids: options.ids ?? createIds(),
    accounts: new Accounts(options.apiKeys),
    events: new EventEmitter<ServiceEventMap>(),
    config: { ...DEFAULT_CONFIG, ...options.config },
  };
  const plane = createJobPlane(baseDeps);
  const deps: ServiceDeps = { ...baseDeps, workers: plane.workers };
  const app = buildApp(deps, plane);
  try {
    await app.listen({ host: "127.0.0.1", port: options.port ?? 0 });
    await plane.start();
  } catch (error) {
    await app.close().catch(() => {});
    db.close();
    throw error;
  }
  const { port } = app.server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  let closing: Promise<void> | undefined;
  return {
    restUrl: `${base}/v1`,
    graphqlUrl: `${base}/graphql`,
    queueUrl: base,
    port,
    deps,
    close() {
      closing ??= (async () => {
        await app.close();
        db.close();
      })();
      return closing;
    },
  };
}
