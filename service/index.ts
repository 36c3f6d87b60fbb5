// First: on an unsupported Node.js, one line naming the required version instead of a crash below.
import "../sdk/node-guard";
import type { AddressInfo } from "node:net";
import { buildApp } from "./app";
import { type Clock, SystemClock } from "./clock";
import { DEFAULT_CONFIG, type ServiceConfig } from "./config";
import { openDatabase } from "./db";
import { Accounts } from "./edge/auth";
import { listeningUrl } from "./edge/server";
import { EventBus } from "./event-bus";
import { createIds, type Ids } from "./ids";
import { JobPlane } from "./jobs/plane";
import { jobMigrations } from "./jobs/store/job-store";
import { Management } from "./management";
import { EndpointRecords, SecretValues } from "./management/directory";
import { managementMigrations } from "./management/store/migrations";
import { ManagementStore } from "./management/store/store";
import type { ServiceEventBus, ServiceEvents } from "./planes";

export { buildApp } from "./app";
export { DEFAULT_CONFIG, type ServiceConfig } from "./config";

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
  /** The management plane's rules (tests read and change resources through them). */
  management: Management;
  /** endpoint.saved / endpoint.deleted, as the job plane receives them. */
  events: ServiceEventBus;
  close(): Promise<void>;
}

/**
 * Starts the whole service on 127.0.0.1. The composition root: opens the store, builds each part from
 * what it uses, in order (the management store, the job plane reading its endpoints, the management
 * plane reading the job plane's workers), builds the app, listens, starts the job plane.
 */
export async function startService(options: StartServiceOptions): Promise<RunningService> {
  if (options.apiKeys.length === 0) throw new Error("startService: at least one API key is required");
  const config = { ...DEFAULT_CONFIG, ...options.config };
  const db = openDatabase(options.data ?? ":memory:", [...managementMigrations, ...jobMigrations]);
  const clock = options.clock ?? new SystemClock();
  const ids = options.ids ?? createIds();
  const accounts = new Accounts(options.apiKeys);
  const events = new EventBus<ServiceEvents>();
  const store = new ManagementStore(db);
  const jobs = new JobPlane({
    db,
    clock,
    ids,
    accounts,
    events,
    endpoints: new EndpointRecords(store),
    secrets: new SecretValues(store),
    config: config.jobs,
  });
  const management = new Management({ store, clock, ids, events, workers: jobs.workers });
  const app = buildApp({ accounts, management, jobs, managementBodyLimit: config.managementBodyLimit });
  try {
    await app.listen({ host: "127.0.0.1", port: options.port ?? 0 });
    jobs.start(listeningUrl(app.server));
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
    management,
    events,
    close() {
      closing ??= (async () => {
        await app.close();
        db.close();
      })();
      return closing;
    },
  };
}
