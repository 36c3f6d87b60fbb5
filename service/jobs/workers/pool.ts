import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { Clock, Timer } from "../../clock";
import type { Emitter } from "../../event-bus";
import type { Ids } from "../../ids";
import type {
  EndpointSettings,
  SecretDirectory,
  WorkerPod,
  WorkerRegistry,
  WorkerUsageLog,
} from "../../planes";
import type { WorkerCounts, WorkerStartIssue } from "../client/job-service";
import type { Dispatcher, WorkerSession } from "../dispatch/dispatcher";
import { LineSplitter } from "../logs/line-splitter";
import type { LogBook } from "../logs/log-book";
import { terminalSafe } from "../logs/terminal";
import { envTooLarge, workerEnv } from "./environment";
import type { Launcher, LaunchSpec } from "./launch";
import { groupMemory, type MarkCache, mib } from "./memory";
import { newMark, TREE_MARK, TreeSweeper } from "./runtime/tree";

export type { ManagedWorker };

export interface PoolOptions {
  /** Cold start before a worker process starts, ms; FLASHBOOT and a cached model shorten it. */
  coldStartMs: number;
  flashBootColdStartMs: number;
  /** Factor applied when the endpoint's model is cached (modelName set). */
  cachedModelFactor: number;
  /** After SIGTERM, how long a worker has to exit before SIGKILL, ms. */
  killGraceMs: number;
  /** A process running this long without a call to the service is named in /health (startIssue), ms. */
  slowStartMs: number;
  pingIntervalMs: number;
  /** Stopped workers kept in the pod list per endpoint. */
  historyPerEndpoint: number;
  /** Worker processes at once, every endpoint together (JobPlaneConfig.maxWorkers). */
  maxWorkers: number;
  /** Captured worker lines are also echoed to the service's stderr ("inherit"), or only kept ("ignore"). */
  workerOutput: "inherit" | "ignore";
  /** Bytes a second of each worker's lines echoed to stderr (JobPlaneConfig.workerEchoBytesPerSecond). */
  workerEchoBytesPerSecond: number;
  /** Resident memory of a worker's process group, bytes (JobPlaneConfig.workerMemoryBytes); null: none. */
  workerMemoryBytes: number | null;
  /** How often workers' memory is read, ms. */
  memoryWatchMs: number;
}

/** A worker as the console shows it: its pod, when it became ready, its cold start and jobs. */
export interface WorkerView extends WorkerPod {
  managed: boolean;
  /** First request to the service (null: still starting). */
  readyAt: number | null;
  /** From creation to first request, ms (null: still starting). */
  coldStartMs: number | null;
  jobsRun: number;
}

/** What the pool announces (the scaler re-evaluates the endpoint). */
export interface PoolEvents {
  /** A worker process of the endpoint exited. */
  "worker.changed": [endpointId: string];
}

type StopReason = "idle" | "replace" | "unresponsive" | "deleted" | "shutdown" | "memory";

interface ManagedWorker {
  readonly session: WorkerSession;
  readonly endpoint: EndpointSettings;
  readonly createdAt: number;
  startedAt: number | null;
  process: ChildProcess | null;
  /** A command line in its own process group (signal the group). */
  processGroup: boolean;
  /** The TREE_MARK its processes carry (runtime/tree.ts): what left its group is ended with it by this. */
  mark: string | null;
  workdir: string | null;
  coldStart: Timer | null;
  killTimer: Timer | null;
  stopping: StopReason | null;
  /** Why it could not start (shown with its pod); null when it did. */
  failure: string | null;
  /** The last lines it printed before its first call (bounded): why a handler did not load. */
  startOutput: string[];
  /** Why it was ended for its memory (its jobs then FAIL, not retried); null: it was not. */
  overMemory: string | null;
  /** Its stderr said V8 reached the heap limit the pool gave it (a SIGABRT exit follows). */
  heapOutOfMemory: boolean;
  /** The echo's current second: when it began, bytes echoed in it, lines not echoed since the last note. */
  echo: { since: number; used: number; dropped: number; note: Timer | null };
  exited: Promise<void>;
  markExited: () => void;
}

/**
 * The worker processes of every endpoint: starts them (after the cold start) with the worker-protocol
 * environment, stops them gracefully (drain, SIGTERM, then SIGKILL), notices when one dies and lets
 * the dispatcher recover its jobs. It is also the WorkerRegistry that shows workers as pods.
 */
export class WorkerPool implements WorkerRegistry {
  readonly #workers = new Map<string, ManagedWorker>();
  readonly #history = new Map<string, WorkerView[]>();
  /** Workers that died before their first request, per endpoint: starts back off. */
  readonly #crashes = new Map<string, { count: number; until: number }>();
  /** `endpointId@version` whose dropped env variables were logged (once each). */
  readonly #envWarned = new Set<string>();
  /** Endpoints told (in the log) that maxWorkers keeps them from starting workers. */
  readonly #capped = new Set<string>();
  /** Per endpoint, why its last worker did not start (until one of its workers is up), and its version. */
  readonly #startIssues = new Map<string, { issue: WorkerStartIssue; version: number }>();
  readonly #clock: Clock;
  readonly #ids: Ids;
  readonly #dispatcher: Dispatcher;
  readonly #launcher: Launcher;
  readonly #secrets: SecretDirectory;
  readonly #usage: WorkerUsageLog;
  readonly #options: PoolOptions;
  readonly #log: (message: string) => void;
  readonly #events: Emitter<PoolEvents>;
  readonly #logs: LogBook;
  #baseUrl: string | null = null;
  #memoryTimer: Timer | null = null;
  #memoryReading = false;
  /** Marks of the processes outside the workers' groups, between readings of the memory watch. */
  readonly #markCache: MarkCache = new Map();
  readonly #sweeper: TreeSweeper;

  constructor(deps: {
    clock: Clock;
    ids: Ids;
    dispatcher: Dispatcher;
    launcher: Launcher;
    secrets: SecretDirectory;
    usage: WorkerUsageLog;
    options: PoolOptions;
    log: (message: string) => void;
    events: Emitter<PoolEvents>;
    logs: LogBook;
  }) {
    this.#logs = deps.logs;
    this.#clock = deps.clock;
    this.#ids = deps.ids;
    this.#dispatcher = deps.dispatcher;
    this.#launcher = deps.launcher;
    this.#secrets = deps.secrets;
    this.#usage = deps.usage;
    this.#options = deps.options;
    this.#log = deps.log;
    this.#events = deps.events;
    this.#sweeper = new TreeSweeper(deps.log);
    checkLimits(deps.options);
    sweepWorkerDirectories(this.#log);
  }

  /** Where workers reach the service, e.g. http://127.0.0.1:8080 (known once it listens). */
  setBaseUrl(url: string): void {
    this.#baseUrl = url.replace(/\/+$/, "");
    if (this.#options.workerMemoryBytes !== null && this.#memoryTimer === null) this.#watchMemory();
  }

  /** Reads the workers' memory every memoryWatchMs, one reading at a time, until stopAll. */
  #watchMemory(): void {
    this.#memoryTimer = this.#clock.setTimer(this.#options.memoryWatchMs, () => {
      if (this.#memoryTimer === null) return;
      this.#watchMemory();
      if (this.#memoryReading) return;
      this.#memoryReading = true;
      this.checkMemory()
        .catch((error: unknown) => this.#log(`workers' memory could not be read: ${String(error)}`))
        .finally(() => {
          this.#memoryReading = false;
        });
    });
  }

  /**
   * Kills each worker whose process group's resident memory is over workerMemoryBytes (the memory
   * watch calls it every memoryWatchMs; exposed for tests). Its jobs end FAILED with it.
   */
  async checkMemory(): Promise<void> {
    const bound = this.#options.workerMemoryBytes;
    if (bound === null) return;
    const byGroup = new Map<number, ManagedWorker>();
    const marks = new Map<string, number>();
    for (const worker of this.#workers.values()) {
      const child = worker.process;
      if (!child || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) continue;
      if (worker.overMemory !== null) continue;
      byGroup.set(child.pid, worker);
      // What it started outside its group counts too (runtime/tree.ts).
      if (worker.mark !== null) marks.set(worker.mark, child.pid);
    }
    if (byGroup.size === 0) return;
    const readings = await groupMemory(new Set(byGroup.keys()), bound, { marks, cache: this.#markCache });
    for (const [group, bytes] of readings) {
      const worker = byGroup.get(group);
      // Gone, or its pid (the group's id) reused meanwhile: not this worker's group any more.
      if (!worker || bytes <= bound || this.#workers.get(worker.session.id) !== worker) continue;
      if (worker.process?.exitCode !== null || worker.process?.signalCode !== null) continue;
      this.#endForMemory(
        worker,
        `its resident memory (its process group's, with what it started outside the group) reached ${mib(bytes)}`,
      );
      this.#signal(worker, "SIGKILL");
    }
  }

  /** The worker is over its memory bound: said in its logs and the service's; its jobs will FAIL. */
  #endForMemory(worker: ManagedWorker, what: string): void {
    if (worker.overMemory !== null) return;
    const { session } = worker;
    const why = memoryFailure(what, this.#options.workerMemoryBytes ?? 0);
    worker.overMemory = why;
    worker.stopping = "memory";
    this.#dispatcher.drain(session);
    this.#log(`worker ${session.id} of endpoint ${session.endpointId}: ${why}: ending it`);
    this.#logs.note(
      session.endpointId,
      session.id,
      "ERROR",
      `worker ended: ${why}; the jobs it held end FAILED`,
      session.held.size === 1 ? ([...session.held.keys()][0] as string) : null,
    );
  }

  get canStart(): boolean {
    return this.#baseUrl !== null;
  }

  /** False while an endpoint whose workers keep dying at start-up backs off. */
  mayStart(endpointId: string): boolean {
    const crashes = this.#crashes.get(endpointId);
    return !crashes || this.#clock.now() >= crashes.until;
  }

  /**
   * Starts up to `count` workers of the endpoint within maxWorkers (workers still starting or stopping
   * count: each is or will be a process). Returns how many it started; a shortfall is logged once
   * until the endpoint can start workers again.
   */
  startUpTo(endpoint: EndpointSettings, count: number): number {
    const room = Math.max(0, this.#options.maxWorkers - this.#workers.size);
    const started = Math.min(count, room);
    for (let i = 0; i < started; i++) this.start(endpoint);
    if (started < count) {
      if (!this.#capped.has(endpoint.id)) {
        this.#capped.add(endpoint.id);
        this.#log(
          `endpoint ${endpoint.id} wants ${count - started} more worker(s), but the service already runs ${this.#workers.size}, its bound (--max-workers, config.jobs.maxWorkers: ${this.#options.maxWorkers}); its jobs wait in the queue until a worker stops`,
        );
      }
    } else {
      this.#capped.delete(endpoint.id);
    }
    return started;
  }

  /** Live managed workers of the endpoint. */
  workersOf(endpointId: string): ManagedWorker[] {
    return [...this.#workers.values()].filter((w) => w.endpoint.id === endpointId);
  }

  start(endpoint: EndpointSettings): void {
    const id = this.#ids.pod();
    const session = this.#dispatcher.open({
      id,
      accountId: endpoint.accountId,
      endpointId: endpoint.id,
      managed: true,
      key: randomBytes(24).toString("base64url"),
    });
    let markExited = () => {};
    const exited = new Promise<void>((resolve) => {
      markExited = resolve;
    });
    const worker: ManagedWorker = {
      session,
      endpoint,
      createdAt: this.#clock.now(),
      startedAt: null,
      process: null,
      processGroup: false,
      mark: null,
      workdir: null,
      coldStart: null,
      killTimer: null,
      stopping: null,
      failure: null,
      startOutput: [],
      overMemory: null,
      heapOutOfMemory: false,
      echo: { since: this.#clock.now(), used: 0, dropped: 0, note: null },
      exited,
      markExited,
    };
    this.#workers.set(id, worker);
    this.#usage.started(this.#pod(worker));
    const delay = this.coldStartMs(endpoint);
    if (delay > 0) worker.coldStart = this.#clock.setTimer(delay, () => this.#launch(worker));
    else this.#launch(worker);
  }

  coldStartMs(endpoint: EndpointSettings): number {
    const base =
      endpoint.flashBootType === "PRIORITY_FLASHBOOT"
        ? Math.round(this.#options.flashBootColdStartMs / 2)
        : endpoint.flashBootType === "FLASHBOOT"
          ? this.#options.flashBootColdStartMs
          : this.#options.coldStartMs;
    return Math.round(endpoint.modelName ? base * this.#options.cachedModelFactor : base);
  }

  /** Stops a worker: no new jobs; it exits once its jobs are done (see reapDrained). */
  stop(workerId: string, reason: StopReason): void {
    const worker = this.#workers.get(workerId);
    if (!worker) return;
    const hard = reason === "deleted" || reason === "shutdown";
    // A worker already going gently may still be made to go now; nothing else changes its course.
    if (worker.stopping && !hard) return;
    worker.stopping = reason;
    this.#dispatcher.drain(worker.session);
    // Shutdown and endpoint deletion do not wait: jobs in hand are requeued at restart, or deleted.
    if (hard) this.#terminate(worker, "SIGKILL");
    else if (worker.session.held.size === 0) this.#terminate(worker, "SIGTERM");
  }

  /** A worker that does not respond (a stop not honoured): killed now, replaced by the scaler. */
  kill(workerId: string): void {
    const worker = this.#workers.get(workerId);
    if (!worker) return;
    this.#log(`worker ${workerId} did not stop its job in time: killing and replacing it`);
    worker.stopping = "unresponsive";
    this.#dispatcher.drain(worker.session);
    this.#signal(worker, "SIGKILL");
    if (!worker.process) this.#exited(worker, null, "SIGKILL");
  }

  /** Keeps the running workers' time so far in the billing record (see WorkerUsageLog.checkpoint). */
  checkpointUsage(): void {
    const pods = [...this.#workers.values()].map((w) => this.#pod(w));
    try {
      this.#usage.checkpoint(pods, this.#clock.now());
    } catch (error) {
      // Billing's loss only (the next checkpoint or the stop writes the time): never the job path's.
      this.#log(
        `workers' running time could not be recorded: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  /** Draining workers whose last job ended are now stopped. */
  reapDrained(): void {
    for (const worker of this.#workers.values()) {
      if (worker.stopping && !worker.killTimer && worker.session.held.size === 0)
        this.#terminate(worker, "SIGTERM");
    }
  }

  async stopEndpoint(endpointId: string): Promise<void> {
    const workers = this.workersOf(endpointId);
    for (const worker of workers) this.stop(worker.session.id, "deleted");
    await Promise.all(workers.map((w) => w.exited));
    // What they started outside their process groups is gone too once the endpoint's delete is done.
    await this.#sweeper.settled();
    this.#history.delete(endpointId);
    this.#capped.delete(endpointId);
    this.#startIssues.delete(endpointId);
    // A deleted endpoint's start back-off and warned versions are of no further use.
    this.#crashes.delete(endpointId);
    for (const seen of this.#envWarned) if (seen.startsWith(`${endpointId}@`)) this.#envWarned.delete(seen);
  }

  /** Endpoints the pool keeps something for (history, back-off, warnings, start issues), for the tests of its bounds. */
  get endpointEntries(): number {
    return new Set([
      ...this.#history.keys(),
      ...this.#crashes.keys(),
      ...this.#capped,
      ...this.#startIssues.keys(),
      ...[...this.#envWarned].map((seen) => seen.slice(0, seen.lastIndexOf("@"))),
    ]).size;
  }

  async stopAll(): Promise<void> {
    this.#memoryTimer?.cancel();
    this.#memoryTimer = null;
    const workers = [...this.#workers.values()];
    for (const worker of workers) this.stop(worker.session.id, "shutdown");
    await Promise.all(workers.map((w) => w.exited));
    // The service's close resolves once nothing its workers started is left running.
    await this.#sweeper.settled();
  }

  list(accountId: string, endpointId?: string): WorkerPod[] {
    const pods: WorkerPod[] = [];
    for (const worker of this.#workers.values()) {
      const s = worker.session;
      if (s.accountId !== accountId || (endpointId !== undefined && s.endpointId !== endpointId)) continue;
      pods.push(this.#pod(worker));
    }
    for (const session of this.#dispatcher.sessions(endpointId)) {
      if (session.managed || session.accountId !== accountId) continue;
      pods.push(externalPod(session));
    }
    for (const [epId, past] of this.#history) {
      if (endpointId !== undefined && epId !== endpointId) continue;
      for (const view of past) if (view.accountId === accountId) pods.push(podOf(view));
    }
    return pods;
  }

  /** The endpoint's workers, live ones first, then the recently stopped ones, for the console. */
  views(accountId: string, endpointId: string): WorkerView[] {
    const views: WorkerView[] = [];
    for (const worker of this.#workers.values()) {
      if (worker.session.accountId === accountId && worker.session.endpointId === endpointId)
        views.push(viewOf(this.#pod(worker), worker.session));
    }
    for (const session of this.#dispatcher.sessions(endpointId)) {
      if (!session.managed && session.accountId === accountId)
        views.push(viewOf(externalPod(session), session));
    }
    for (const view of this.#history.get(endpointId) ?? [])
      if (view.accountId === accountId) views.push(view);
    return views;
  }

  counts(endpointId: string): WorkerCounts {
    const counts: WorkerCounts = {
      idle: 0,
      running: 0,
      initializing: 0,
      ready: 0,
      throttled: 0,
      unhealthy: 0,
    };
    for (const session of this.#dispatcher.sessionsOf(endpointId)) {
      // A worker being stopped takes no job: shown idle, it would be waited on in vain. Until its
      // process ends (up to killGraceMs when it ignores SIGTERM) it counts only while it runs jobs.
      if (session.draining && session.held.size === 0) continue;
      const state = stateOf(session);
      counts[state]++;
      if (state === "idle") counts.ready++;
    }
    return counts;
  }

  /**
   * While none of the endpoint's workers is up: a worker still loading past slowStartMs, else why the
   * last one did not start (its process exited before its first call, or could not be started).
   */
  startIssue(endpointId: string, version: number): WorkerStartIssue | undefined {
    const live = this.workersOf(endpointId);
    if (live.some((w) => w.session.readyAt !== null)) {
      this.#startIssues.delete(endpointId);
      return undefined;
    }
    const now = this.#clock.now();
    const slow = live.find(
      (w) => !w.stopping && w.startedAt !== null && now - w.startedAt >= this.#options.slowStartMs,
    );
    if (slow?.startedAt != null) {
      const id = slow.session.id;
      return {
        workerId: id,
        since: new Date(slow.startedAt).toISOString(),
        reason: `its process started ${Math.round((now - slow.startedAt) / 1_000)} s ago and has not called the service yet: its handler has not finished loading (a top-level await that never settles, a download or a model load still running?); what it printed: runpodkit logs ${endpointId} --worker ${id}`,
      };
    }
    const last = this.#startIssues.get(endpointId);
    // A changed template or env (a fix, most often) is not blamed for its predecessor's failure.
    if (last !== undefined && last.version !== version) {
      this.#startIssues.delete(endpointId);
      return undefined;
    }
    return last?.issue;
  }

  /** Workers up and answering (for the rate limit's dynamic rule). */
  upCount(endpointId: string): number {
    let n = 0;
    for (const session of this.#dispatcher.sessionsOf(endpointId)) if (session.readyAt !== null) n++;
    return n;
  }

  #launch(worker: ManagedWorker): void {
    worker.coldStart = null;
    if (worker.stopping || !this.#baseUrl) {
      if (!this.#baseUrl) this.#log("worker not started: the service's address is not known yet");
      this.#exited(worker, null, null);
      return;
    }
    const { session, endpoint } = worker;
    const secrets = this.#secrets.resolveEnv(endpoint.accountId, endpoint.env);
    if (!secrets.ok) {
      const names = secrets.missing.map((name) => `RUNPOD_SECRET_${name}`).join(", ");
      this.#failToStart(
        worker,
        `env references ${names}, but the account has no secret named ${secrets.missing.join(", ")}`,
      );
      return;
    }
    const { spec } = this.#launcher.resolve(endpoint.imageName);
    const accountEnv = this.#accountEnv(endpoint, secrets.env);
    try {
      // The service's pid in the name: a service killed outright leaves it, and the next start removes it.
      worker.workdir = mkdtempSync(join(tmpdir(), `${WORKER_DIR_PREFIX}${process.pid}-${session.id}-`));
    } catch (error) {
      // Out of descriptors or space: reported and replaced like any start that fails.
      this.#failToStart(
        worker,
        `its directory could not be made: ${error instanceof Error ? error.message : String(error)}`,
      );
      return;
    }
    const base = `${this.#baseUrl}/v2/${endpoint.id}`;
    worker.mark = newMark(session.id);
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "",
      HOME: worker.workdir,
      ...accountEnv.kept,
      ...workerWebhooks(base),
      RUNPOD_PING_INTERVAL: String(this.#options.pingIntervalMs),
      RUNPOD_AI_API_KEY: session.key ?? "",
      RUNPOD_POD_ID: session.id,
      RUNPOD_POD_HOSTNAME: session.id,
      RUNPOD_ENDPOINT_ID: endpoint.id,
      RUNPOD_GPU_COUNT: String(endpoint.gpuCount),
      RUNPOD_DC_ID: "LOCAL",
      RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true",
      RUNPOD_SKIP_GPU_CHECK: "true",
      // Last, so that no template or endpoint env can set it.
      [TREE_MARK]: worker.mark ?? "",
    };
    const tooLarge = envTooLarge(env);
    if (tooLarge !== null) {
      this.#failToStart(worker, tooLarge);
      return;
    }
    try {
      const child = this.#launcher.spawn(spec, env, worker.workdir, {
        heapBytes: this.#options.workerMemoryBytes,
      });
      worker.process = child;
      this.#capture(worker, child.stdout, "stdout");
      this.#capture(worker, child.stderr, "stderr");
      this.#logs.note(endpoint.id, session.id, "INFO", `worker started (${spec.kind} ${describe(spec)})`);
      if (accountEnv.dropped.length > 0) {
        this.#logs.note(
          endpoint.id,
          session.id,
          "WARN",
          `env ${accountEnv.dropped.join(", ")} ignored: a template or endpoint cannot set variables that change how a worker loads code, nor names with "=" or NUL, nor values with NUL`,
        );
      }
      worker.processGroup = spec.kind === "command";
      worker.startedAt = this.#clock.now();
      child.once("exit", (code, signal) => {
        killLeftovers(child.pid);
        // What left the group (setsid, a detached spawn, a daemon) still carries the worker's mark.
        if (worker.mark !== null) void this.#sweeper.sweep(worker.mark);
        // V8 at its heap limit says so on stderr, then aborts: its last lines may still be in the pipe.
        if (signal === "SIGABRT" && spec.kind === "module" && this.#options.workerMemoryBytes !== null)
          void outputEnded(child).then(() => this.#exited(worker, code, signal));
        else this.#exited(worker, code, signal);
      });
      child.once("error", (error) => {
        // No pid: the process never started (EMFILE, ENFILE, EAGAIN of a process limit). Node then sets
        // exitCode to the negative errno and emits no "exit": without this the worker stayed
        // "initializing" for good, and its endpoint's jobs in the queue.
        if (child.pid === undefined) this.#failToStart(worker, error.message);
        else this.#log(`worker ${session.id}: ${error.message}`);
      });
    } catch (error) {
      this.#failToStart(worker, error instanceof Error ? error.message : String(error));
    }
  }

  /**
   * The worker could not start: why, in its pod, in the service log and in its own logs (GET
   * /v2/{endpoint}/logs); it is replaced after the start back-off.
   */
  #failToStart(worker: ManagedWorker, why: string): void {
    const { session } = worker;
    worker.failure = why;
    this.#noteStartIssue(worker, `could not start: ${why}`);
    this.#log(`worker ${session.id} of endpoint ${session.endpointId} could not start: ${why}`);
    this.#logs.note(session.endpointId, session.id, "ERROR", `worker could not start: ${why}`);
    this.#exited(worker, null, null);
  }

  /**
   * The endpoint's env (secrets resolved) without the variables that change a worker's runtime, and
   * their names (in the service log once per endpoint version, and in each worker's logs).
   */
  #accountEnv(
    endpoint: EndpointSettings,
    env: Record<string, string>,
  ): { kept: Record<string, string>; dropped: string[] } {
    const { kept, dropped } = workerEnv(env);
    const seen = `${endpoint.id}@${endpoint.version}`;
    if (dropped.length > 0 && !this.#envWarned.has(seen)) {
      this.#envWarned.add(seen);
      this.#log(
        `endpoint ${endpoint.id}: its workers ignore env ${dropped.join(", ")} (variables that change how a worker's runtime loads code, and names or values no process environment can hold, are not taken from a template or endpoint; see SECURITY.md)`,
      );
    }
    return { kept, dropped };
  }

  /**
   * Each line the process prints goes to its logs (attributed to the job it holds), and maybe to
   * stderr: cut to the logs' line bound as it is read, and with its control characters made visible
   * on the way to a terminal (terminal.ts).
   */
  #capture(worker: ManagedWorker, from: Readable | null, stream: "stdout" | "stderr"): void {
    if (!from) return;
    const { session } = worker;
    const echo = this.#options.workerOutput === "inherit";
    const lines = new LineSplitter(
      this.#logs.maxLineBytes,
      (line, cutBytes) => {
        this.#logs.line(
          session.endpointId,
          session.id,
          stream,
          line,
          this.#logs.jobsOfLine(session),
          cutBytes,
        );
        if (session.readyAt === null) keepStartOutput(worker.startOutput, line);
        if (stream === "stderr" && HEAP_OUT_OF_MEMORY.test(line)) worker.heapOutOfMemory = true;
        if (echo) {
          const cut = cutBytes > 0 ? ` ...[cut ${cutBytes} bytes]` : "";
          this.#echo(worker, `[${session.id}] ${terminalSafe(line)}${cut}\n`);
        }
      },
      this.#logs.lineFlush,
    );
    from.on("data", (chunk: Buffer) => lines.push(chunk));
    from.once("end", () => lines.end());
  }

  /**
   * Writes a worker's line to the service's stderr within workerEchoBytesPerSecond, counted per second
   * (the line that reaches the bound is still written whole): a flooding handler wrote 83 MB in 15 s
   * there. Lines past it are counted, and the count said once, before the first line of a later second,
   * as that second ends, or as the worker exits: at most one note a second, not one per line let through.
   */
  #echo(worker: ManagedWorker, text: string): void {
    const echo = worker.echo;
    const now = this.#clock.now();
    if (now - echo.since >= 1_000 || now < echo.since) {
      echo.since = now;
      echo.used = 0;
    }
    if (echo.used >= this.#options.workerEchoBytesPerSecond) {
      echo.dropped++;
      // A flood that then stops is still counted without waiting for the worker's next line.
      echo.note ??= this.#clock.setTimer(echo.since + 1_000 - now, () => {
        echo.note = null;
        this.#echoDropped(worker);
      });
      return;
    }
    this.#echoDropped(worker);
    echo.used += Buffer.byteLength(text);
    process.stderr.write(text);
  }

  #echoDropped(worker: ManagedWorker): void {
    const { session, echo } = worker;
    echo.note?.cancel();
    echo.note = null;
    if (echo.dropped === 0) return;
    process.stderr.write(
      `[${session.id}] ...[${echo.dropped} line(s) not echoed here: over ${this.#options.workerEchoBytesPerSecond} bytes/s a worker (config.jobs.workerEchoBytesPerSecond); all are in its logs: runpodkit logs ${session.endpointId} --worker ${session.id}]\n`,
    );
    echo.dropped = 0;
  }

  #terminate(worker: ManagedWorker, signal: "SIGTERM" | "SIGKILL"): void {
    if (worker.coldStart) {
      worker.coldStart.cancel();
      worker.coldStart = null;
    }
    if (!worker.process || worker.process.exitCode !== null || worker.process.signalCode !== null) {
      this.#exited(worker, worker.process?.exitCode ?? null, worker.process?.signalCode ?? null);
      return;
    }
    this.#signal(worker, signal);
    if (signal === "SIGTERM") {
      worker.killTimer ??= this.#clock.setTimer(this.#options.killGraceMs, () =>
        this.#signal(worker, "SIGKILL"),
      );
    }
  }

  #signal(worker: ManagedWorker, signal: NodeJS.Signals): void {
    const child = worker.process;
    if (!child || child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    try {
      // Command workers run in their own process group: signal all of it.
      if (worker.processGroup) process.kill(-child.pid, signal);
      else child.kill(signal);
    } catch {
      child.kill(signal);
    }
  }

  #exited(worker: ManagedWorker, code: number | null, signal: NodeJS.Signals | null): void {
    const { session } = worker;
    if (this.#workers.get(session.id) !== worker) return;
    if (worker.heapOutOfMemory && signal === "SIGABRT" && this.#options.workerMemoryBytes !== null)
      this.#endForMemory(
        worker,
        `its JavaScript heap reached V8's limit of ${mib(this.#options.workerMemoryBytes)} (the process aborted)`,
      );
    this.#workers.delete(session.id);
    worker.killTimer?.cancel();
    worker.coldStart?.cancel();
    this.#echoDropped(worker);
    if (worker.process) {
      const unexpected = !worker.stopping;
      this.#logs.note(
        session.endpointId,
        session.id,
        unexpected ? "ERROR" : "INFO",
        `worker exited (code ${code}, signal ${signal})${unexpected ? " unexpectedly: replacing it" : ""}`,
        session.held.size === 1 ? ([...session.held.keys()][0] as string) : null,
      );
    }
    const failedToStart = worker.failure !== null;
    // Over its memory before its first call (a model too large for the bound): backs off as a crash.
    const crashed = (!worker.stopping || worker.overMemory !== null) && worker.process !== null;
    if (crashed || failedToStart) {
      if (!failedToStart && worker.overMemory === null) {
        this.#log(`worker ${session.id} exited unexpectedly (code ${code}, signal ${signal}): replacing it`);
      }
      if (session.readyAt === null) {
        // Died before its first request (a handler that fails to load, an unknown secret): back off
        // 1 s, 2 s, ... 60 s.
        const count = (this.#crashes.get(session.endpointId)?.count ?? 0) + 1;
        const until = this.#clock.now() + Math.min(60_000, 1_000 * 2 ** (count - 1));
        this.#crashes.set(session.endpointId, { count, until });
      }
    }
    if (session.readyAt !== null) this.#crashes.delete(session.endpointId);
    // A job failed for the loss says how the process ended (a handler's process.exit(3), an OOM's
    // SIGABRT): it said only "was lost", the cause left to the logs.
    const how = signal !== null ? `signal ${signal}` : `code ${code}`;
    this.#dispatcher.close(
      session,
      worker.process ? `its process exited (${how})` : undefined,
      worker.overMemory ?? undefined,
    );
    if (worker.workdir) {
      try {
        rmSync(worker.workdir, { recursive: true, force: true });
      } catch (error) {
        // Out of descriptors (EMFILE) or the like: the directory is left, never the service ended.
        this.#log(
          `worker ${worker.session.id}: its directory ${worker.workdir} could not be removed: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
    const pod = this.#pod(worker);
    try {
      this.#usage.stopped(pod, this.#clock.now());
    } catch (error) {
      // Billing's loss only: the worker's exit is still handled.
      this.#log(
        `worker ${session.id}: its running time could not be recorded: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const view = viewOf(pod, session);
    if (worker.process && !worker.stopping && !failedToStart && session.readyAt === null)
      this.#explainEarlyExit(worker, view, code, signal);
    else if (worker.overMemory !== null && session.readyAt === null) {
      worker.failure = worker.overMemory;
      view.failure = worker.overMemory;
      this.#noteStartIssue(worker, `was ended before its first call: ${worker.overMemory}`);
    }
    view.desiredStatus = worker.stopping === "idle" ? "EXITED" : "TERMINATED";
    view.stoppedAt = this.#clock.now();
    const past = this.#history.get(session.endpointId) ?? [];
    past.unshift(view);
    past.length = Math.min(past.length, this.#options.historyPerEndpoint);
    if (worker.stopping !== "deleted") this.#history.set(session.endpointId, past);
    worker.markExited();
    this.#events.emit("worker.changed", session.endpointId);
  }

  /**
   * A process that exited before its first call (a handler module that threw at import, a missing
   * dependency): why, from the last lines it printed, in its pod (lastStatusChange) and the endpoint's
   * /health. Read once its output has ended ("exit" may come before the last lines), within a second.
   */
  #explainEarlyExit(
    worker: ManagedWorker,
    view: WorkerView,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    const child = worker.process;
    const ended = [child?.stdout, child?.stderr].map(
      (stream) =>
        new Promise<void>((resolve) => {
          if (!stream || stream.readableEnded || stream.destroyed) return resolve();
          stream.once("end", resolve);
          stream.once("close", resolve);
          // An IO bound, not a time rule: a grandchild holding the pipe open must not hold this.
          setTimeout(resolve, 1_000).unref();
        }),
    );
    void Promise.all(ended).then(() => {
      const printed = summarizeStartOutput(worker.startOutput);
      const how = signal !== null ? `signal ${signal}` : `code ${code}`;
      const why = `its process exited (${how}) before its first call to the service${printed ? `: ${printed}` : ""}`;
      worker.failure = why;
      view.failure = why;
      this.#noteStartIssue(worker, why);
    });
  }

  #noteStartIssue(worker: ManagedWorker, reason: string): void {
    const { session } = worker;
    if (this.workersOf(session.endpointId).some((w) => w.session.readyAt !== null)) return;
    this.#startIssues.set(session.endpointId, {
      version: worker.endpoint.version,
      issue: {
        workerId: session.id,
        since: new Date(this.#clock.now()).toISOString(),
        reason: `worker ${session.id} ${reason}; its logs: runpodkit logs ${session.endpointId} --worker ${session.id}`,
      },
    });
  }

  #pod(worker: ManagedWorker): WorkerPod {
    const { session, endpoint } = worker;
    return {
      id: session.id,
      accountId: session.accountId,
      endpointId: session.endpointId,
      desiredStatus: "RUNNING",
      imageName: endpoint.imageName,
      templateId: endpoint.templateId,
      gpuCount: endpoint.gpuCount,
      createdAt: worker.createdAt,
      lastStartedAt: worker.startedAt,
      state: stateOf(session),
      ...(worker.failure !== null ? { failure: worker.failure } : {}),
    };
  }
}

/** What Node prints on stderr when V8 reaches the heap limit, before it aborts. */
const HEAP_OUT_OF_MEMORY = /^FATAL ERROR: .*JavaScript heap out of memory/;

/** The smallest memory bound: a bare Node worker holds ~40 MiB resident before its handler loads. */
const MIN_WORKER_MEMORY_BYTES = 64 * 1024 * 1024;

/** Why a worker was ended for its memory, with the setting to raise (in its jobs' error and its logs). */
function memoryFailure(what: string, bound: number): string {
  return `${what}, over the bound of ${mib(bound)} a worker (raise it if the handler needs more: --worker-memory <MiB>, config.jobs.workerMemoryBytes)`;
}

/** The pool's bounds are numbers a config file or an embedder gives: refused at start when unusable. */
function checkLimits(options: PoolOptions): void {
  const memory = options.workerMemoryBytes;
  if (memory !== null && (!Number.isSafeInteger(memory) || memory < MIN_WORKER_MEMORY_BYTES))
    throw new RangeError(
      `config.jobs.workerMemoryBytes: expected null or a whole number of bytes of at least ${MIN_WORKER_MEMORY_BYTES}, got ${String(memory)}`,
    );
  if (!Number.isFinite(options.memoryWatchMs) || options.memoryWatchMs < 10)
    throw new RangeError(
      `config.jobs.memoryWatchMs: expected at least 10, got ${String(options.memoryWatchMs)}`,
    );
  if (!Number.isFinite(options.workerEchoBytesPerSecond) || options.workerEchoBytesPerSecond < 0)
    throw new RangeError(
      `config.jobs.workerEchoBytesPerSecond: expected a number of at least 0, got ${String(options.workerEchoBytesPerSecond)}`,
    );
}

/** Resolves once the process's stdout and stderr have ended, or after a second (a grandchild may hold them). */
function outputEnded(child: ChildProcess): Promise<void> {
  return Promise.all(
    [child.stdout, child.stderr].map(
      (stream) =>
        new Promise<void>((resolve) => {
          if (!stream || stream.readableEnded || stream.destroyed) return resolve();
          stream.once("end", resolve);
          stream.once("close", resolve);
          // An IO bound, not a time rule (as #explainEarlyExit's).
          setTimeout(resolve, 1_000).unref();
        }),
    ),
  ).then(() => undefined);
}

/** Lines kept of what a worker printed before its first call: enough for a traceback's end. */
const START_OUTPUT_LINES = 40;
const START_OUTPUT_LINE_CHARS = 400;

function keepStartOutput(lines: string[], line: string): void {
  lines.push(line.length > START_OUTPUT_LINE_CHARS ? `${line.slice(0, START_OUTPUT_LINE_CHARS)}...` : line);
  if (lines.length > START_OUTPUT_LINES) lines.shift();
}

/**
 * The lines that say why a start failed: a stack's frames, a traceback's header, Node's version
 * footer and blank lines left out; the last three of the rest (the error and what did not load).
 */
function summarizeStartOutput(lines: readonly string[]): string {
  const telling = lines
    .map((line) => terminalSafe(line).trimEnd())
    .filter(
      (line) =>
        line !== "" &&
        !/^\s/.test(line) &&
        line !== "Traceback (most recent call last):" &&
        !/^Node\.js v\d/.test(line),
    );
  const text = telling.slice(-3).join(" | ");
  return text.length > 1_000 ? `${text.slice(0, 1_000)}...` : text;
}

function stateOf(session: WorkerSession): "initializing" | "idle" | "running" | "unhealthy" {
  if (session.unhealthy) return "unhealthy";
  if (session.readyAt === null) return "initializing";
  return session.held.size > 0 ? "running" : "idle";
}

function viewOf(pod: WorkerPod, session: WorkerSession): WorkerView {
  return {
    ...pod,
    managed: session.managed,
    readyAt: session.readyAt,
    coldStartMs: session.readyAt === null ? null : session.readyAt - pod.createdAt,
    jobsRun: session.jobsTaken,
  };
}

function podOf(view: WorkerView): WorkerPod {
  const { managed: _m, readyAt: _r, coldStartMs: _c, jobsRun: _j, ...pod } = view;
  return pod;
}

function describe(spec: LaunchSpec): string {
  return spec.kind === "module" ? spec.module : spec.command;
}

function externalPod(session: WorkerSession): WorkerPod {
  return {
    id: session.id,
    accountId: session.accountId,
    endpointId: session.endpointId,
    desiredStatus: "RUNNING",
    imageName: "external",
    templateId: "",
    gpuCount: 0,
    createdAt: session.readyAt ?? session.lastSeen,
    lastStartedAt: session.readyAt,
    state: stateOf(session),
  };
}

/**
 * The worker protocol's addresses a worker process is given (docs/worker-protocol.md, section 1), for
 * an endpoint's job API at `base` (`<origin>/v2/<endpoint id>`): the runtime fills in `$ID` and
 * `$RUNPOD_POD_ID`.
 */
export function workerWebhooks(base: string): Record<string, string> {
  return {
    RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID?gpu=LOCAL`,
    RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?gpu=LOCAL`,
    RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID?gpu=LOCAL`,
    RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID?gpu=LOCAL`,
  };
}

const WORKER_DIR_PREFIX = "runpodkit-worker-";
/** runpodkit-worker-<service pid>-<worker id>-<random>. */
const WORKER_DIR = /^runpodkit-worker-(\d+)-[a-z0-9]+-[A-Za-z0-9]+$/;

/**
 * Removes the worker directories of services that are gone: a worker's directory is removed when it
 * exits, but a service killed outright (SIGKILL, a crash) leaves its workers' behind, and a CI host
 * killing services would fill its temporary directory. A directory of a live process is left alone.
 */
function sweepWorkerDirectories(log: (message: string) => void): void {
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(WORKER_DIR.exec(name)?.[1] ?? Number.NaN);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || processExists(pid)) continue;
    try {
      rmSync(join(tmpdir(), name), { recursive: true, force: true });
    } catch (error) {
      log(
        `${name}: left by a stopped service, could not be removed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
}

/**
 * SIGKILLs what is left in the process group a worker led (launch.ts starts every worker in its own):
 * the children its handler started, as the real platform tears down a worker's whole container. Called
 * as its exit is seen, before anything else can be started, so the group's id is still its own.
 */
function killLeftovers(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Nothing left in the group (ESRCH).
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
