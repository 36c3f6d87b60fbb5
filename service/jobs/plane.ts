import type { DatabaseSync } from "node:sqlite";
import type { FastifyPluginAsync } from "fastify";
import type { Clock, Timer } from "../clock";
import type { Accounts } from "../edge/auth";
import { FastPath } from "../edge/fast-path";
import { EventBus } from "../event-bus";
import type { Ids } from "../ids";
import type {
  EndpointDirectory,
  SecretDirectory,
  ServiceEventBus,
  WorkerRegistry,
  WorkerUsageLog,
} from "../planes";
import { type BookEvents, JobBook } from "./book/book";
import { JobMemory } from "./book/memory";
import { JobService } from "./client/job-service";
import { RateLimiter } from "./client/rate-limit";
import { DEFAULT_JOB_PLANE_CONFIG, type JobPlaneConfig } from "./config";
import { type DispatchEvents, Dispatcher } from "./dispatch/dispatcher";
import { WorkerAccess } from "./dispatch/worker-access";
import { registerFastRoutes } from "./http/fast-routes";
import { jobRoutes } from "./http/index";
import { LogBook } from "./logs/log-book";
import { CachedEndpoints } from "./model/endpoints";
import { EndpointSeries } from "./observe/series";
import { JOB_POLICY } from "./policy";
import { JobStore, type ValueSealing } from "./store/job-store";
import { Webhooks } from "./webhooks/webhooks";
import { Launcher } from "./workers/launch";
import { type PoolEvents, WorkerPool } from "./workers/pool";
import { Supervisor } from "./workers/supervisor";

export interface JobPlaneDeps {
  db: DatabaseSync;
  clock: Clock;
  ids: Ids;
  accounts: Accounts;
  /** The management plane's announcements (endpoint saved / deleted), followed once started. */
  events: ServiceEventBus;
  /** Where endpoints and templates are read: the management plane's records. */
  endpoints: EndpointDirectory;
  /** Where a worker's secret references are resolved when it starts: the management plane's secrets. */
  secrets: SecretDirectory;
  /** Where each worker's creation and stop are reported (billing): the management plane's ledger. */
  usage: WorkerUsageLog;
  config?: Partial<JobPlaneConfig> | undefined;
  log?: (message: string) => void;
  /** Seals the secrets of jobs in the store (s3Config): the management store's sealer. */
  sealing?: ValueSealing | undefined;
}

/** Free pages of the store given back by one sweep (4 KB pages: 1 MB). */
const RELEASE_PAGES_PER_SWEEP = 256;
/** Between two such steps while free pages remain, ms (a 1 GB burst is given back in minutes). */
const RELEASE_STEP_MS = 100;
/** Everything the parts of the job plane announce to each other. */
export type JobEvents = BookEvents & DispatchEvents & PoolEvents;

/**
 * The job plane: the /v2 routes, the jobs (book and store), the worker side (dispatcher, worker
 * processes, scaler) and webhooks. Its parts are built in dependency order, each from what it uses;
 * where a part must react to one built after it, the earlier part announces an event on the plane's
 * bus and `#route` below says, in one table, who acts on it. The plane owns its parts' start and stop.
 */
export class JobPlane {
  readonly config: JobPlaneConfig;
  readonly events = new EventBus<JobEvents>();
  readonly memory: JobMemory;
  readonly store: JobStore;
  readonly book: JobBook;
  readonly endpoints: CachedEndpoints;
  readonly dispatcher: Dispatcher;
  readonly pool: WorkerPool;
  readonly supervisor: Supervisor;
  readonly webhooks: Webhooks;
  readonly jobs: JobService;
  readonly limiter: RateLimiter;
  /** Worker output, per worker, endpoint and job. */
  readonly logs: LogBook;
  /** Queue depth and workers over time, per endpoint (the console's chart). */
  readonly series: EndpointSeries;
  /** Registered by the app under /v2. */
  readonly routes: FastifyPluginAsync;
  /** The hot routes, served in front of Fastify (null: config.fastPath off). */
  readonly fast: FastPath | null;
  readonly #clock: Clock;
  readonly #serviceEvents: ServiceEventBus;
  readonly #log: (message: string) => void;
  readonly #subscriptions: (() => void)[] = [];
  /** Open followed log replies (ended on release). */
  readonly #follows = new Set<() => void>();
  #sweepTimer: Timer | null = null;
  /** When running workers' time was last written for billing (on the sweep's timer). */
  #usageCheckpointAt = 0;
  #stopped: Promise<void> | null = null;
  /** Set by release(): the service is stopping, its holds ended. */
  #released = false;

  constructor(deps: JobPlaneDeps) {
    const config: JobPlaneConfig = { ...DEFAULT_JOB_PLANE_CONFIG, ...deps.config };
    const { clock, ids } = deps;
    const log = deps.log ?? ((message: string) => process.stderr.write(`runpodkit jobs: ${message}\n`));
    this.config = config;
    this.#clock = clock;
    this.#serviceEvents = deps.events;
    this.#log = log;

    this.memory = new JobMemory({
      budgetBytes: config.memoryBudgetBytes,
      spillInputBytes: config.spillInputBytes,
      spillOutputBytes: config.spillOutputBytes,
    });
    this.store = new JobStore(deps.db, {
      log,
      memory: this.memory,
      clock,
      ...(deps.sealing && { sealing: deps.sealing }),
    });
    this.book = new JobBook(
      this.store,
      clock,
      {
        recentCacheSize: config.recentCacheSize,
        hotQueued: config.hotQueuedPerEndpoint,
        streamReplyBytes: config.streamReplyBytes,
      },
      this.events,
      this.memory,
    );
    this.endpoints = new CachedEndpoints(deps.endpoints);
    this.logs = new LogBook(clock, { ...DEFAULT_JOB_PLANE_CONFIG.logs, ...deps.config?.logs });
    this.dispatcher = new Dispatcher(
      this.book,
      clock,
      {
        pollHoldMs: config.pollHoldMs,
        stopGraceMs: config.stopGraceMs,
        stopResendMs: config.stopResendMs,
        heartbeatGraceMs: config.heartbeatGraceMs ?? 3 * config.pingIntervalMs,
        maxRetries: config.maxRetries,
        streamChunkBytes: JOB_POLICY.streamChunkBytes,
      },
      this.events,
    );
    this.pool = new WorkerPool({
      clock,
      ids,
      dispatcher: this.dispatcher,
      launcher: new Launcher(config.handlers, log),
      secrets: deps.secrets,
      usage: deps.usage,
      options: {
        coldStartMs: config.coldStartMs,
        flashBootColdStartMs: config.flashBootColdStartMs,
        cachedModelFactor: config.cachedModelFactor,
        killGraceMs: config.killGraceMs,
        slowStartMs: config.slowStartMs,
        pingIntervalMs: config.pingIntervalMs,
        historyPerEndpoint: 10,
        maxWorkers: config.maxWorkers,
        workerOutput: config.workerOutput,
        workerEchoBytesPerSecond: config.workerEchoBytesPerSecond,
        workerMemoryBytes: config.workerMemoryBytes,
        memoryWatchMs: config.memoryWatchMs,
      },
      log,
      events: this.events,
      logs: this.logs,
    });
    this.supervisor = new Supervisor({
      clock,
      pool: this.pool,
      dispatcher: this.dispatcher,
      book: this.book,
      endpoints: this.endpoints,
      options: {
        intervalMs: config.scalerIntervalMs,
        externalWorkerTimeoutMs: config.externalWorkerTimeoutMs,
        resyncMs: 60_000,
      },
    });
    // A delivery that never got its 200 is said once, by origin only (a URL may carry a token).
    this.webhooks = new Webhooks(clock, config.webhooks, ({ url, jobId, attempt, status }) => {
      if (status === 200 || attempt <= config.webhooks.retries) return;
      const answer = status === 0 ? "no answer" : `HTTP ${status}`;
      this.#log(
        `webhook of job ${jobId} to ${new URL(url).origin} failed after ${attempt} attempts (last: ${answer})`,
      );
    });
    const pool = this.pool;
    this.jobs = new JobService({
      book: this.book,
      store: this.store,
      memory: this.memory,
      maxQueuedPerEndpoint: config.maxQueuedPerEndpoint,
      endpoints: this.endpoints,
      clock,
      ids,
      workerCounts: (endpointId) => pool.counts(endpointId),
      workerStartIssue: (endpoint) => pool.startIssue(endpoint.id, endpoint.version),
    });
    this.series = new EndpointSeries(
      clock,
      {
        jobs: (endpointId) => this.book.counts(endpointId),
        workers: (endpointId) => {
          const w = pool.counts(endpointId);
          return w.idle + w.running + w.initializing + w.unhealthy;
        },
      },
      600,
    );
    this.limiter = new RateLimiter(clock, config.rateLimits, (endpointId) => pool.upCount(endpointId));
    const client = {
      accounts: deps.accounts,
      jobs: this.jobs,
      limiter: this.limiter,
      streamHoldMs: config.streamHoldMs,
      released: () => this.#released,
    };
    const worker = {
      dispatcher: this.dispatcher,
      access: new WorkerAccess(deps.accounts, this.dispatcher, this.endpoints),
      bodyLimit: config.workerBodyLimit,
      memory: this.memory,
      written: () => this.store.flushed(),
    };
    this.fast = config.fastPath ? new FastPath() : null;
    if (this.fast) registerFastRoutes(this.fast, { client, worker });
    this.routes = jobRoutes({
      client,
      worker,
      observe: {
        accounts: deps.accounts,
        jobs: this.jobs,
        logs: this.logs,
        pool: this.pool,
        series: this.series,
        follows: this.#follows,
      },
    });
    this.#route();
    this.#recover();
  }

  /** The workers, as the management plane reads them (pods, billing). */
  get workers(): WorkerRegistry {
    return this.pool;
  }

  /**
   * Starts the background work once the server listens: workers are told `serviceUrl` (or
   * config.workerBaseUrl) to reach the service; endpoint changes are followed; the scaler and the
   * sweep of expired results run.
   */
  start(serviceUrl: string | null): void {
    const baseUrl = this.config.workerBaseUrl ?? serviceUrl;
    if (baseUrl) this.pool.setBaseUrl(baseUrl);
    else this.#log("the job plane's routes are not served over HTTP: no workers will be started");
    const { supervisor } = this;
    this.#subscriptions.push(
      this.#serviceEvents.on("endpoint.saved", (accountId, endpointId) =>
        supervisor.endpointSaved(accountId, endpointId),
      ),
      this.#serviceEvents.on("endpoint.deleted", (accountId, endpointId) => {
        supervisor
          .endpointDeleted(accountId, endpointId)
          .then(() => {
            this.logs.deleteEndpoint(endpointId);
            this.series.deleteEndpoint(endpointId);
          })
          .catch((error: unknown) => this.#log(`endpoint delete: ${String(error)}`));
      }),
    );
    supervisor.start();
    this.#usageCheckpointAt = this.#clock.now();
    this.#sweepTimer = this.#clock.setTimer(this.config.sweepIntervalMs, this.#sweep);
  }

  /**
   * Before the server closes: answers every long-poll and ends the workers, so that closing never
   * waits on a held request or a worker's open connection.
   */
  release(): void {
    this.#released = true;
    this.supervisor.stop();
    this.dispatcher.stop();
    this.book.watchers.releaseAll();
    for (const end of [...this.#follows]) end();
    this.pool.stopAll().catch((error: unknown) => this.#log(`stopping workers: ${String(error)}`));
  }

  /** Stops workers, timers and deliveries, and writes what is pending; once. */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      for (const unsubscribe of this.#subscriptions.splice(0)) unsubscribe();
      this.supervisor.stop();
      this.#sweepTimer?.cancel();
      this.release();
      await this.pool.stopAll();
      await this.webhooks.stop();
      this.book.stop();
    })();
    return this.#stopped;
  }

  /** Who acts on what the parts announce: the whole path of a job between its parts, in one place. */
  #route(): void {
    const { events, dispatcher, supervisor, pool, webhooks, jobs } = this;
    // A job entered a queue: the longest-waiting worker of its endpoint takes it, and the scaler
    // counts it (lowPriority jobs never scale).
    events.on("job.queued", (job) => dispatcher.offer(job.endpointId));
    events.on("job.queued", (job) => {
      if (!job.lowPriority) supervisor.nudge(job.endpointId, job.accountId);
    });
    // Cancel, execution timeout or ttl of a running job: its worker is told on its job-stop poll.
    events.on("job.mustStop", (job, workerId) => dispatcher.requestStop(job, workerId));
    // A finished job with a webhook gets its envelope delivered (a cancelled one does not), made
    // anew for each attempt; a job gone or retried since ends its delivery.
    events.on("job.finished", (job) => {
      const { webhook, id, status, completedAt } = job;
      if (!webhook || status === "CANCELLED") return;
      webhooks.send(webhook, id, () => {
        const now = this.book.find(id);
        if (!now || now.status !== status || now.completedAt !== completedAt) return undefined;
        return { ...jobs.envelope(now), input: now.input, webhook };
      });
    });
    // Workers: a hand-run worker made contact, one became ready, busy or gone: the scaler looks again.
    events.on("worker.opened", (session) => {
      if (!session.managed) supervisor.nudge(session.endpointId, session.accountId);
    });
    events.on("worker.changed", (endpointId) => supervisor.nudge(endpointId));
    // A worker asked to be replaced (stopPod), or did not stop a job in time.
    events.on("worker.replace", (session) => pool.stop(session.id, "replace"));
    // Every change of a queue, a job's run or a worker is a point of the console's chart.
    const { series } = this;
    events.on("job.queued", (job) => series.record(job.endpointId));
    events.on("job.finished", (job) => series.record(job.endpointId));
    events.on("worker.opened", (session) => series.record(session.endpointId));
    events.on("worker.changed", (endpointId) => series.record(endpointId));
    events.on("worker.unresponsive", (session) => pool.kill(session.id));
  }

  /**
   * Restart recovery: queued jobs wait again; jobs that were running lost their worker with the
   * service, so they are requeued (counting as retried) unless requeued after lost workers maxRetries
   * times already since their submission or their client's last /retry.
   */
  #recover(): void {
    for (const job of this.book.restore()) {
      if (job.lostRetries < this.config.maxRetries) this.book.requeue(job);
      else this.book.finish(job, "FAILED", { error: "the service stopped while the job was running" });
    }
  }

  readonly #sweep = (): void => {
    let more = false;
    let released = 0;
    try {
      more = this.book.sweep();
      // The pages the deleted rows left, given back a bounded step at a time (a 1 MB step holds the
      // event loop ~1 ms, a few ms with the checkpoint it may bring), after the deletes are done.
      if (!more) released = this.store.releaseSpace(RELEASE_PAGES_PER_SWEEP);
    } catch (error) {
      // The store refused (busy, full): the next sweep tries again; never fatal.
      this.#log(`sweep of expired results: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.limiter.prune();
    const now = this.#clock.now();
    if (now - this.#usageCheckpointAt >= this.config.usageCheckpointMs) {
      this.#usageCheckpointAt = now;
      this.pool.checkpointUsage();
    }
    // A full batch: the rest after the requests that wait, not a whole interval later (results
    // expire faster than one batch per interval under load).
    // Pages still to give back: the next step soon, leaving the checkpointer time to copy the last.
    const next = more
      ? 0
      : released > 0
        ? Math.min(RELEASE_STEP_MS, this.config.sweepIntervalMs)
        : this.config.sweepIntervalMs;
    this.#sweepTimer = this.#clock.setTimer(next, this.#sweep);
  };
}
