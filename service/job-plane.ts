import type { Server } from "node:http";
import type { DatabaseSync } from "node:sqlite";
import type { FastifyPluginAsync } from "fastify";
import { JOB_LIMITS } from "../sdk/schemas/job";
import type { Clock, Timer } from "./clock";
import type { Migration } from "./db";
import { JobBook } from "./domain/jobs/book";
import { Dispatcher } from "./domain/jobs/dispatch";
import { CachedEndpoints } from "./domain/jobs/endpoints";
import { DEFAULT_RATE_LIMIT_OPTIONS, RateLimiter, type RateLimitOptions } from "./domain/jobs/rate-limit";
import { JobService } from "./domain/jobs/service";
import { DEFAULT_WEBHOOK_OPTIONS, type WebhookOptions, Webhooks } from "./domain/jobs/webhooks";
import type { Accounts } from "./edge/auth";
import { jobRoutes } from "./http/jobs/plugin";
import type { Ids } from "./ids";
import type { EndpointDirectory, ServiceEventBus, WorkerRegistry } from "./planes";
import { JobStore, jobStoreMigrations } from "./store/jobs";
import { Launcher } from "./workers/launch";
import { WorkerPool } from "./workers/pool";
import { Supervisor } from "./workers/supervisor";

/**
 * The job plane: /v2 routes, the job store, workers and the scaler. Built from the same deps as the
 * management plane (minus the worker registry, which it provides).
 */
export interface JobPlane {
  workers: WorkerRegistry;
  /** Before the server closes: answer every long-poll and end the workers. */
  release(): void;
  /** Registered by the app under the prefix /v2. */
  routes: FastifyPluginAsync;
  /** Starts background work (scaler, timers); called once the server listens. */
  start(): Promise<void>;
  /** Stops workers and timers; called when the app closes. */
  stop(): Promise<void>;
}

/** Tunables of the job plane; every duration runs on deps.clock. */
export interface JobPlaneConfig {
  /** Image name -> handler module path or command line (see workers/launch.ts). */
  handlers: Record<string, string>;
  /** Cold start of a worker, ms; with FLASHBOOT; factor when the endpoint's model is cached. */
  coldStartMs: number;
  flashBootColdStartMs: number;
  cachedModelFactor: number;
  /** Hold of job-take / job-stop long-polls with nothing to give (< 90 s), ms. */
  pollHoldMs: number;
  /** Hold of /stream when no chunk is buffered, ms. */
  streamHoldMs: number;
  /** Time a worker has to stop a cancelled or timed-out job before it is killed and replaced, ms. */
  stopGraceMs: number;
  /** After SIGTERM, time before SIGKILL, ms. */
  killGraceMs: number;
  /** A job whose worker was lost (or that ran when the service died) is requeued until retried this often; then FAILED. */
  maxRetries: number;
  /** Scaler evaluation period, ms. */
  scalerIntervalMs: number;
  /** Deletion of expired results, period in ms. */
  sweepIntervalMs: number;
  /** Finished jobs kept in memory for fast status reads. */
  recentCacheSize: number;
  /** Ping interval given to workers, ms. */
  pingIntervalMs: number;
  /** A hand-run worker silent this long is gone, ms. */
  externalWorkerTimeoutMs: number;
  /** Largest job-done / job-stream body, bytes. */
  workerBodyLimit: number;
  /** Worker processes' stdout/stderr. */
  workerOutput: "inherit" | "ignore";
  /** Address workers use to reach the service; default: the address it listens on. */
  workerBaseUrl: string | null;
  rateLimits: RateLimitOptions;
  webhooks: WebhookOptions;
}

export const DEFAULT_JOB_PLANE_CONFIG: JobPlaneConfig = {
  handlers: {},
  coldStartMs: 1_000,
  flashBootColdStartMs: 100,
  cachedModelFactor: 0.5,
  pollHoldMs: 20_000,
  streamHoldMs: 10_000,
  stopGraceMs: 10_000,
  killGraceMs: 5_000,
  maxRetries: 3,
  scalerIntervalMs: 1_000,
  sweepIntervalMs: 5_000,
  recentCacheSize: 10_000,
  pingIntervalMs: 10_000,
  externalWorkerTimeoutMs: 60_000,
  workerBodyLimit: 5 * JOB_LIMITS.runsyncBodyBytes,
  workerOutput: "inherit",
  workerBaseUrl: null,
  rateLimits: DEFAULT_RATE_LIMIT_OPTIONS,
  webhooks: DEFAULT_WEBHOOK_OPTIONS,
};

export const jobMigrations: Migration[] = jobStoreMigrations;

export interface JobPlaneDeps {
  db: DatabaseSync;
  clock: Clock;
  ids: Ids;
  accounts: Accounts;
  events: ServiceEventBus;
  /** Where endpoints and templates are read: the management plane's records. */
  endpoints: EndpointDirectory;
  config?: Partial<JobPlaneConfig> | undefined;
  log?: (message: string) => void;
}

/** The plane with its parts, for tests and tools. */
export interface JobPlaneParts extends JobPlane {
  config: JobPlaneConfig;
  jobs: JobService;
  book: JobBook;
  store: JobStore;
  dispatcher: Dispatcher;
  pool: WorkerPool;
  webhooks: Webhooks;
}

export function createJobPlane(deps: JobPlaneDeps): JobPlaneParts {
  const config: JobPlaneConfig = { ...DEFAULT_JOB_PLANE_CONFIG, ...deps.config };
  const log = deps.log ?? ((message: string) => process.stderr.write(`runpodkit jobs: ${message}\n`));
  const { clock } = deps;
  const store = new JobStore(deps.db);
  const book = new JobBook(store, clock, { recentCacheSize: config.recentCacheSize });
  const endpoints = new CachedEndpoints(deps.endpoints);
  let supervisor: Supervisor | null = null;
  let pool: WorkerPool | null = null;
  const dispatcher = new Dispatcher(
    book,
    clock,
    {
      pollHoldMs: config.pollHoldMs,
      stopGraceMs: config.stopGraceMs,
      maxRetries: config.maxRetries,
      streamChunkBytes: JOB_LIMITS.streamChunkBytes,
    },
    {
      stopPod: (session) => pool?.stop(session.id, "replace"),
      unresponsive: (session) => pool?.kill(session.id),
      activity: (endpointId) => supervisor?.nudge(endpointId),
    },
  );
  pool = new WorkerPool({
    clock,
    ids: deps.ids,
    dispatcher,
    launcher: new Launcher(config.handlers, log),
    options: {
      coldStartMs: config.coldStartMs,
      flashBootColdStartMs: config.flashBootColdStartMs,
      cachedModelFactor: config.cachedModelFactor,
      killGraceMs: config.killGraceMs,
      pingIntervalMs: config.pingIntervalMs,
      historyPerEndpoint: 10,
      workerOutput: config.workerOutput,
    },
    log,
    onChange: (endpointId) => supervisor?.nudge(endpointId),
  });
  const workerPool = pool;
  supervisor = new Supervisor({
    clock,
    pool: workerPool,
    dispatcher,
    book,
    endpoints,
    options: {
      intervalMs: config.scalerIntervalMs,
      externalWorkerTimeoutMs: config.externalWorkerTimeoutMs,
      resyncMs: 60_000,
    },
  });
  const scaler = supervisor;
  const webhooks = new Webhooks(clock, config.webhooks);
  book.setHooks({
    queued: (job) => {
      dispatcher.offer(job.endpointId);
      if (!job.lowPriority) scaler.nudge(job.endpointId, job.accountId);
    },
    stopRunning: (job, workerId) => dispatcher.requestStop(job, workerId),
    finished: (job) => {
      if (!job.webhook || job.status === "CANCELLED") return;
      webhooks.send(job.webhook, { ...jobs.envelope(job), input: job.input, webhook: job.webhook });
    },
  });
  const jobs = new JobService({
    book,
    endpoints,
    clock,
    ids: deps.ids,
    workerCounts: (endpointId) => workerPool.counts(endpointId),
  });
  const limiter = new RateLimiter(clock, config.rateLimits, (endpointId) => workerPool.upCount(endpointId));

  // Restart recovery: queued jobs wait again; jobs that were running lost their worker with the
  // service, so they are requeued (counting as retried) unless retried maxRetries times already.
  for (const job of book.restore()) {
    if (job.retries < config.maxRetries) book.requeue(job);
    else book.finish(job, "FAILED", { error: "the service stopped while the job was running" });
  }

  const onSaved = (accountId: string, endpointId: string) => scaler.endpointSaved(accountId, endpointId);
  const onDeleted = (accountId: string, endpointId: string) => {
    scaler
      .endpointDeleted(accountId, endpointId)
      .catch((error: unknown) => log(`endpoint delete: ${String(error)}`));
  };
  let server: Server | null = null;
  const subscriptions: (() => void)[] = [];
  let sweepTimer: Timer | null = null;
  let stopped: Promise<void> | null = null;
  const sweep = () => {
    book.sweep();
    sweepTimer = clock.setTimer(config.sweepIntervalMs, sweep);
  };
  // Before the server closes: answer every long-poll and end the workers, so that closing never
  // waits on a held request or a worker's open connection.
  const releaseHolds = () => {
    scaler.stop();
    dispatcher.stop();
    book.watchers.releaseAll();
    workerPool.stopAll().catch((error: unknown) => log(`stopping workers: ${String(error)}`));
  };

  return {
    config,
    jobs,
    book,
    store,
    dispatcher,
    pool: workerPool,
    webhooks,
    workers: workerPool,
    routes: jobRoutes({
      client: { accounts: deps.accounts, jobs, store, limiter, streamHoldMs: config.streamHoldMs },
      worker: {
        accounts: deps.accounts,
        dispatcher,
        endpoints,
        bodyLimit: config.workerBodyLimit,
        onExternalWorker: (session) => scaler.nudge(session.endpointId, session.accountId),
      },
      onServer: (s) => {
        server = s;
      },
    }),
    release: releaseHolds,
    async start() {
      const baseUrl = config.workerBaseUrl ?? listeningUrl(server);
      if (baseUrl) workerPool.setBaseUrl(baseUrl);
      else log("the job plane's routes are not served over HTTP: no workers will be started");
      subscriptions.push(
        deps.events.on("endpoint.saved", onSaved),
        deps.events.on("endpoint.deleted", onDeleted),
      );
      scaler.start();
      sweepTimer = clock.setTimer(config.sweepIntervalMs, sweep);
    },
    stop() {
      stopped ??= (async () => {
        for (const unsubscribe of subscriptions.splice(0)) unsubscribe();
        scaler.stop();
        sweepTimer?.cancel();
        releaseHolds();
        await workerPool.stopAll();
        await webhooks.stop();
        book.stop();
      })();
      return stopped;
    },
  };
}

/** http://127.0.0.1:<port> of a listening server (any-address binds are reached on loopback). */
function listeningUrl(server: Server | null): string | null {
  const address = server?.address();
  if (!address || typeof address === "string") return null;
  const host = address.address === "::" || address.address === "0.0.0.0" ? "127.0.0.1" : address.address;
  return `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`;
}
