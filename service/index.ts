// First: on an unsupported Node.js, one line naming the required version instead of a crash below.
import "../sdk/node-guard";
import { flushCompileCache, getCompileCacheDir } from "node:module";
import type { AddressInfo } from "node:net";
import { buildApp } from "./app";
import { type Clock, SystemClock } from "./clock";
import { DEFAULT_CONFIG, type ServiceConfig } from "./config";
import { openDatabase, StoreOpenError, sqliteReason } from "./db";
import { Accounts } from "./edge/auth";
import { hostPolicy } from "./edge/hosts";
import { DEFAULT_HOST, isLoopback, listeningUrl } from "./edge/server";
import { EventBus } from "./event-bus";
import {
  favourMemoryOverSpeed,
  heapIsSmall,
  releaseStartupMemory,
  resumeOptimizingCompilers,
  withOptimizingCompilers,
  youngGenerationSizedAtStart,
} from "./heap";
import { createIds, type Ids } from "./ids";
import { JobPlane } from "./jobs/plane";
import { jobMigrations } from "./jobs/store/job-store";
import { Management } from "./management";
import { EndpointRecords, SecretValues } from "./management/directory";
import { WorkerUsageLedger } from "./management/model/billing";
import { managementMigrations } from "./management/store/migrations";
import { openSealer, StoreKeyError } from "./management/store/sealing";
import { ManagementStore } from "./management/store/store";
import type { ServiceEventBus, ServiceEvents } from "./planes";
import { addressFileOf, removeServiceAddress, writeServiceAddress } from "./service-address";

export { buildApp } from "./app";
// startService takes a clock: a caller needs these to pass one (ManualClock moves time by hand).
export { type Clock, ManualClock, SystemClock, type Timer, type TimeSources } from "./clock";
export { DEFAULT_CONFIG, type ServiceConfig } from "./config";

export interface StartServiceOptions {
  /** Each key is one account. */
  apiKeys: string[];
  /** Further keys, each opening the account of the key of `apiKeys` it maps to (a rotation's new key). */
  sameAccountKeys?: Record<string, string> | undefined;
  /** 0 (default) = any free port. */
  port?: number | undefined;
  /**
   * The address to listen on: 127.0.0.1 (default), so only this machine reaches the service. Any other
   * address is warned about on stderr: the service then answers whoever reaches it (see SECURITY.md).
   */
  host?: string | undefined;
  /** SQLite file, or ":memory:" (default) for a throwaway store. */
  data?: string | undefined;
  /**
   * The key that seals the store's secrets (registry passwords, env values): 32 bytes as 64 hex digits
   * or base64 (the CLI reads RUNPODKIT_STORE_KEY). Without it, the key file beside the store
   * (`<data>.key`, created 0600 on first open) holds it.
   */
  storeKey?: string | undefined;
  clock?: Clock | undefined;
  ids?: Ids | undefined;
  config?: Partial<ServiceConfig> | undefined;
}

export interface RunningService {
  /** http://127.0.0.1:P/v1 (the bound address, or loopback for an any-address bind) */
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
 * Starts the whole service, on 127.0.0.1 unless `host` says otherwise. The composition root: opens
 * the store (its secrets' sealer), builds each part from what it uses, in order (the management store,
 * the job plane reading its endpoints, the management plane reading the job plane's workers), builds
 * the app, listens, starts the job plane.
 */
export async function startService(options: StartServiceOptions): Promise<RunningService> {
  if (options.apiKeys.length === 0) throw new Error("startService: at least one API key is required");
  const config = { ...DEFAULT_CONFIG, ...options.config };
  const host = options.host ?? DEFAULT_HOST;
  // Which Host names are answered (edge/hosts.ts): refused here, before the store opens, if not names.
  const hosts = hostPolicy(host, config.allowedHosts, isLoopback(host));
  // Decided before the store is restored (a large queue makes the heap large), applied once listening.
  const favourMemory = config.favourMemoryOverSpeed && heapIsSmall() && !youngGenerationSizedAtStart();
  const data = options.data ?? ":memory:";
  const db = openDatabase(data, [...managementMigrations, ...jobMigrations], {
    log: (message) => process.stderr.write(`runpodkit ${message}\n`),
  });
  const clock = options.clock ?? new SystemClock();
  const ids = options.ids ?? createIds();
  const accounts = new Accounts(options.apiKeys, options.sameAccountKeys);
  const events = new EventBus<ServiceEvents>();
  let jobs: JobPlane;
  let management: Management;
  try {
    const sealer = openSealer(data, options.storeKey);
    const store = new ManagementStore(db, sealer);
    // Stopped workers' time, for billing: the job plane reports to it, the management plane bills from it.
    const usage = new WorkerUsageLedger({ store, clock });
    // The job plane restores the stored jobs (one pass over the job table): with V8's optimizing
    // compilers, if lean-start.ts deferred them; the rest of the start-up runs once and goes without.
    jobs = withOptimizingCompilers(
      () =>
        new JobPlane({
          db,
          clock,
          ids,
          accounts,
          events,
          endpoints: new EndpointRecords(store),
          secrets: new SecretValues(store),
          usage,
          config: config.jobs,
          sealing: sealer,
        }),
    );
    management = new Management({ store, clock, ids, events, workers: jobs.workers, usage });
  } catch (error) {
    // The start's own writes (the key check, pending rewrites) and reads (the job table's scan) fail
    // on a full disk or a damaged page: the store is closed (its lock released) and named.
    db.close();
    throw startFailure(data, error);
  }
  const app = buildApp({
    accounts,
    management,
    jobs,
    managementBodyLimit: config.managementBodyLimit,
    connections: config.connections,
    hosts,
    // The management routes load with their first request: that load's garbage is released as the start's is.
    afterManagementLoad: config.releaseStartupMemory
      ? () => setImmediate(() => releaseStartupMemory()).unref()
      : undefined,
  });
  try {
    if (!isLoopback(host)) {
      process.stderr.write(
        `runpodkit: warning: listening on ${host}, not on loopback: anyone who can reach this address can call the service (and its keys travel unencrypted over HTTP); see SECURITY.md\n`,
      );
    }
    await app.listen({ host, port: options.port ?? 0 });
    resumeOptimizingCompilers();
    jobs.start(listeningUrl(app.server));
  } catch (error) {
    resumeOptimizingCompilers();
    await app.close().catch(() => {});
    db.close();
    throw error;
  }
  const { port } = app.server.address() as AddressInfo;
  const base = listeningUrl(app.server) ?? `http://${DEFAULT_HOST}:${port}`;
  // Just after startService returns, so its caller is not held up by the pause.
  const settle =
    favourMemory || config.releaseStartupMemory || getCompileCacheDir?.() !== undefined
      ? setImmediate(() => {
          if (favourMemory) favourMemoryOverSpeed();
          if (config.releaseStartupMemory) releaseStartupMemory();
          // Node's compile cache, where the process enabled it (compile-cache.ts): written now, not only at exit.
          flushCompileCache?.();
        })
      : undefined;
  settle?.unref();
  const urls = { restUrl: `${base}/v1`, graphqlUrl: `${base}/graphql`, queueUrl: base };
  // Beside a store file, where `runpodkit logs` looks for the service of a --data (no key in it).
  const stored = data !== ":memory:";
  if (stored) {
    try {
      writeServiceAddress(data, { pid: process.pid, ...urls });
    } catch (error) {
      process.stderr.write(
        `runpodkit: warning: could not write ${addressFileOf(data)} (runpodkit logs will need --url): ${error instanceof Error ? error.message : String(error)}\n`,
      );
    }
  }
  let closing: Promise<void> | undefined;
  return {
    ...urls,
    port,
    management,
    events,
    close() {
      closing ??= (async () => {
        if (settle) clearImmediate(settle);
        if (stored) removeServiceAddress(data);
        await app.close();
        db.close();
      })();
      return closing;
    },
  };
}

/**
 * Why the start failed, naming the store where SQLite's own message ("database or disk is full") or
 * the store's 503 message says nothing of --data.
 */
function startFailure(data: string, error: unknown): unknown {
  if (error instanceof StoreOpenError || error instanceof StoreKeyError) return error;
  for (let at: unknown = error; at instanceof Error; at = at.cause) {
    const why = sqliteReason(at);
    if (why !== null) return new StoreOpenError(data, why, { cause: error });
  }
  return error;
}
