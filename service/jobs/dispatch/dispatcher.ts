import type { JobDoneBody, StreamChunk } from "../../../sdk/schemas/job";
import type { Clock, Timer } from "../../clock";
import { memberTooDeep } from "../../edge/body";
import { workerJobNotFound } from "../../errors";
import type { Emitter } from "../../event-bus";
import type { JobBook } from "../book/book";
import { Deque, without } from "../book/collections";
import type { Reservation } from "../book/memory";
import type { Job } from "../model/job";
import { JOB_POLICY } from "../policy";
import { splitChunk } from "./chunks";

/** One worker as the protocol sees it: what it holds, its pending polls, what it must stop. */
export interface WorkerSession {
  readonly id: string;
  readonly accountId: string;
  readonly endpointId: string;
  /** Started by this service's pool (false: a worker someone runs by hand with the account key). */
  readonly managed: boolean;
  /** The per-worker key (managed workers). */
  readonly key: string | null;
  /** Jobs handed to the worker and not yet finished by it, with when they were handed over. */
  held: Map<string, number>;
  /** Stopped jobs it still holds: how many pings in a row have not listed them. */
  readonly unlisted: Map<string, number>;
  /** Jobs the worker must stop, sent on its job-stop polls (again and again while it still holds them). */
  readonly stopping: Map<string, StopState>;
  take: PendingPoll<Job[]> | null;
  /** Listed among its endpoint's waiting takers (at most once). */
  inLine: boolean;
  stopPoll: PendingPoll<string[]> | null;
  /** Being shut down: no more jobs, polls answered at once. */
  draining: boolean;
  /** First request from the worker (null: still starting). */
  readyAt: number | null;
  lastSeen: number;
  /** Pings received so far (orders pings against stop deliveries), and when the last one came (null: none yet). */
  pings: number;
  lastPingAt: number | null;
  /** Since when it has held no job. */
  idleSince: number;
  /**
   * The job it held last, when its last held job ended (with idleSince): a line it prints just after
   * (the handler's own async work, or a line still in the pipe as the job-done arrived) belongs to it.
   */
  lastJob: string | null;
  unhealthy: boolean;
  sdkVersion: string | null;
  /** Jobs handed to it so far. */
  jobsTaken: number;
}

/** A stop the worker has to honour. */
export interface StopState {
  /** When it was last sent on a job-stop poll (null: not yet). */
  sentAt: number | null;
  /** session.pings when it was first sent (null: not yet): later pings were sent after it was. */
  sentAtPing: number | null;
  /** The stop grace has passed and the worker still held the job. */
  overdue: boolean;
}

interface PendingPoll<T> {
  max: number;
  resolve(value: T): void;
}

/** What the dispatcher announces about workers (the job plane routes these to the pool and the scaler). */
export interface DispatchEvents {
  /** A worker made contact: one this service started, or one run by hand (session.managed false). */
  "worker.opened": [session: WorkerSession];
  /** Something changed that may matter to the scaler: a worker ready, busy or gone. */
  "worker.changed": [endpointId: string];
  /** The worker asked to be replaced (stopPod). */
  "worker.replace": [session: WorkerSession];
  /** The worker did not stop a job in time: kill and replace it. */
  "worker.unresponsive": [session: WorkerSession];
}

export interface DispatchOptions {
  /** How long job-take and job-stop polls are held when there is nothing to give (< 90 s). */
  pollHoldMs: number;
  /** How long a worker has to stop a cancelled or timed-out job before it is replaced. */
  stopGraceMs: number;
  /** A stop the worker still holds the job of is sent again this long after the last time. */
  stopResendMs: number;
  /** A worker that has not pinged for this long is silent (past a stop grace: killed). */
  heartbeatGraceMs: number;
  /** A job whose worker is lost is requeued until it has been retried this many times, then FAILED. */
  maxRetries: number;
  /** Largest stream chunk, bytes. */
  streamChunkBytes: number;
}

/**
 * The worker side of the job plane: hands queued jobs to waiting job-take polls, takes results,
 * progress and chunks, delivers stop signals, and recovers jobs of lost workers.
 */
export class Dispatcher {
  readonly #sessions = new Map<string, WorkerSession>();
  /** The same sessions by endpoint, then worker id: lookups and per-endpoint reads without a key string or a copy. */
  readonly #byEndpoint = new Map<string, Map<string, WorkerSession>>();
  readonly #takers = new Map<string, Deque<WorkerSession>>();
  readonly #book: JobBook;
  readonly #clock: Clock;
  readonly #options: DispatchOptions;
  readonly #events: Emitter<DispatchEvents>;
  readonly #graceTimers = new Set<Timer>();
  /** Workers already reported unresponsive (reported once). */
  readonly #condemned = new WeakSet<WorkerSession>();

  constructor(book: JobBook, clock: Clock, options: DispatchOptions, events: Emitter<DispatchEvents>) {
    this.#book = book;
    this.#clock = clock;
    this.#options = options;
    this.#events = events;
  }

  /**
   * A worker's session on an endpoint. Sessions are found by endpoint and worker id together, so a
   * caller only ever reaches the sessions of an endpoint it was allowed to name (see WorkerAccess).
   */
  session(endpointId: string, workerId: string): WorkerSession | undefined {
    return this.#byEndpoint.get(endpointId)?.get(workerId);
  }

  /** The endpoint's sessions, oldest first, read in place (not to be changed while iterated). */
  sessionsOf(endpointId: string): Iterable<WorkerSession> {
    return this.#byEndpoint.get(endpointId)?.values() ?? NO_SESSIONS;
  }

  /** Endpoints with a line of job-take polls (released with their last worker). */
  get takerLines(): number {
    return this.#takers.size;
  }

  sessions(endpointId?: string): WorkerSession[] {
    if (endpointId === undefined) return [...this.#sessions.values()];
    return [...this.sessionsOf(endpointId)];
  }

  open(spec: { id: string; accountId: string; endpointId: string; managed: boolean; key: string | null }) {
    const now = this.#clock.now();
    const session: WorkerSession = {
      ...spec,
      held: new Map(),
      unlisted: new Map(),
      stopping: new Map(),
      take: null,
      inLine: false,
      stopPoll: null,
      draining: false,
      readyAt: null,
      lastSeen: now,
      pings: 0,
      lastPingAt: null,
      idleSince: now,
      lastJob: null,
      unhealthy: false,
      sdkVersion: null,
      jobsTaken: 0,
    };
    this.#sessions.set(sessionKey(spec.endpointId, spec.id), session);
    let ofEndpoint = this.#byEndpoint.get(spec.endpointId);
    if (!ofEndpoint) {
      ofEndpoint = new Map();
      this.#byEndpoint.set(spec.endpointId, ofEndpoint);
    }
    ofEndpoint.set(spec.id, session);
    this.#events.emit("worker.opened", session);
    return session;
  }

  /** Stop giving the worker jobs and answer its polls now; it goes once it holds nothing. */
  drain(session: WorkerSession): void {
    session.draining = true;
    this.#answerTake(session, []);
    // A worker shutting down exits once its polls return: nothing left to stop, so answer now.
    if (session.held.size === 0) this.#answerStop(session, []);
  }

  /**
   * The worker is gone (process exit, killed, silent): its jobs are recovered. `why` (its process
   * exited with code 3) ends the error of a job that fails for it. `fatal`: the worker was ended for
   * what its jobs did (over its memory bound); they end FAILED with it, as a retry would do the same.
   */
  close(session: WorkerSession, why?: string, fatal?: string): void {
    if (!this.#live(session)) return;
    this.#sessions.delete(sessionKey(session.endpointId, session.id));
    const ofEndpoint = this.#byEndpoint.get(session.endpointId);
    ofEndpoint?.delete(session.id);
    if (ofEndpoint?.size === 0) this.#byEndpoint.delete(session.endpointId);
    // Out of its endpoint's line of job-take polls: a closed session was held there (its maps of
    // jobs with it) until a job came, and a deleted endpoint's line was kept for good.
    const takers = this.#takers.get(session.endpointId);
    if (takers && session.inLine) takers.remove(session);
    session.inLine = false;
    if (takers?.size === 0) this.#takers.delete(session.endpointId);
    this.#answerTake(session, []);
    this.#answerStop(session, []);
    for (const jobId of [...session.held.keys()]) this.#lost(session, jobId, why, fatal);
    this.#events.emit("worker.changed", session.endpointId);
  }

  /** job-take / job-take-batch: resolves with up to `max` jobs, or none after the hold. */
  take(
    session: WorkerSession,
    max: number,
    holdsJobs: boolean | undefined,
    signal: AbortSignal,
  ): Promise<Job[]> {
    const now = this.#clock.now();
    this.#seen(session, now);
    // A worker saying it holds nothing proves that jobs handed before this request are lost.
    if (holdsJobs === false) for (const jobId of [...session.held.keys()]) this.#lost(session, jobId);
    // A closed session (its worker gone) joins no line: nothing would take it out again.
    if (session.draining || !this.#live(session)) return Promise.resolve([]);
    this.#answerTake(session, []);
    const jobs = this.#pull(session, max);
    if (jobs.length > 0) return Promise.resolve(jobs);
    return new Promise<Job[]>((resolve) => {
      const timer = this.#clock.setTimer(this.#options.pollHoldMs, () => finish([]));
      const onAbort = () => finish([]);
      const finish = (value: Job[]) => {
        timer.cancel();
        signal.removeEventListener("abort", onAbort);
        if (session.take === poll) session.take = null;
        resolve(value);
      };
      const poll: PendingPoll<Job[]> = { max, resolve: finish };
      session.take = poll;
      if (!session.inLine) {
        session.inLine = true;
        this.#takersOf(session.endpointId).push(session);
      }
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** The take reply never reached the worker: its jobs go back to the head of the queue. */
  undelivered(session: WorkerSession, jobs: Job[]): void {
    for (const job of jobs) {
      session.held = without(session.held, job.id);
      if (job.status === "IN_PROGRESS" && runsOn(job, session)) this.#book.requeue(job);
    }
  }

  /** A job entered the queue: hand it to the longest-waiting poll of its endpoint. */
  offer(endpointId: string): void {
    const takers = this.#takers.get(endpointId);
    while (takers && takers.size > 0) {
      const session = takers.shift() as WorkerSession;
      session.inLine = false;
      const poll = session.take;
      if (!poll || !this.#live(session) || session.draining) continue;
      const jobs = this.#pull(session, poll.max);
      if (jobs.length === 0) {
        session.inLine = true;
        takers.unshift(session);
        return;
      }
      this.#answerTake(session, jobs);
    }
  }

  /**
   * job-stop: resolves with ids to stop, or none after the hold. A stop is sent again, at most every
   * stopResendMs, for as long as the worker still holds its job: the Python library ignores a stop for
   * a job still waiting in its local queue, and honours the same stop once the job has started.
   */
  stopSignals(session: WorkerSession, signal: AbortSignal): Promise<string[]> {
    const now = this.#clock.now();
    this.#seen(session, now);
    this.#answerStop(session, []);
    const due = this.#dueStops(session, now);
    if (due.length > 0 || session.draining) return Promise.resolve(this.#sendStops(session, due));
    const resendIn = this.#nextResendIn(session, now);
    return new Promise<string[]>((resolve) => {
      const timer =
        resendIn < this.#options.pollHoldMs
          ? this.#clock.setTimer(resendIn, () => finish(this.#sendStops(session, this.#dueStops(session))))
          : this.#clock.setTimer(this.#options.pollHoldMs, () => finish([]));
      const onAbort = () => finish([]);
      const finish = (value: string[]) => {
        timer.cancel();
        signal.removeEventListener("abort", onAbort);
        if (session.stopPoll === poll) session.stopPoll = null;
        resolve(value);
      };
      const poll: PendingPoll<string[]> = { max: 0, resolve: finish };
      session.stopPoll = poll;
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * A running job must stop on this worker. The stop goes out on its job-stop poll, and again while
   * the worker still holds the job. Past the stop grace the worker is replaced only if it still
   * reports the job (a later ping lists it) or has gone silent (no ping for the heartbeat grace).
   */
  requestStop(job: Job, workerId: string): void {
    const session = this.session(job.endpointId, workerId);
    if (!session) return;
    if (!session.stopping.has(job.id))
      session.stopping.set(job.id, { sentAt: null, sentAtPing: null, overdue: false });
    if (session.stopPoll) this.#answerStop(session, this.#sendStops(session, this.#dueStops(session)));
    this.#after(this.#options.stopGraceMs, () => {
      const stop = this.#live(session) && session.held.has(job.id) ? session.stopping.get(job.id) : undefined;
      if (!stop) return;
      stop.overdue = true;
      this.#watchSilence(session, job.id);
    });
  }

  /**
   * The job a worker's session names, when it is a job of the session's endpoint: a job of another
   * endpoint (of this account or another) is not found, as an unknown id, so no worker learns of it.
   */
  #jobOf(session: WorkerSession, jobId: string): Job | undefined {
    const job = this.#book.find(jobId);
    return job?.endpointId === session.endpointId ? job : undefined;
  }

  /** job-done: a final result, or a progress update (top-level status IN_PROGRESS). */
  done(session: WorkerSession, jobId: string, body: JobDoneBody): void {
    this.#seen(session, this.#clock.now());
    const job = this.#jobOf(session, jobId);
    if (body.status === "IN_PROGRESS") {
      if (!job) throw workerJobNotFound(jobId);
      if (runsOn(job, session)) this.#book.progress(job, body.output);
      return;
    }
    // An id the service does not know (or none) is refused before anything changes: no job of this
    // worker's is released, and its stopPod is not acted on (docs/worker-protocol.md, job-done).
    if (!job) throw workerJobNotFound(jobId);
    this.#release(session, jobId);
    if (body.stopPod === true) this.#events.emit("worker.replace", session);
    // Late results (after cancel, timeout, or on another worker's job) never resurrect a job.
    if (job.status !== "IN_PROGRESS" || !runsOn(job, session)) return;
    if (body.error !== undefined && body.error !== null && body.error !== false && body.error !== "") {
      const error = keptError(typeof body.error === "string" ? body.error : JSON.stringify(body.error));
      this.#book.finish(job, "FAILED", { output: body.output, error });
    } else {
      this.#book.finish(job, "COMPLETED", { output: body.output });
    }
  }

  /**
   * job-stream: one chunk, split to the size limit; the reservation its body held while read (if any)
   * is handed over to the chunks kept (JobBook.appendChunks), and stays the caller's otherwise.
   */
  stream(
    session: WorkerSession,
    jobId: string,
    chunk: StreamChunk,
    reservation: Reservation | null = null,
  ): void {
    this.#seen(session, this.#clock.now());
    const job = this.#jobOf(session, jobId);
    if (!job) throw workerJobNotFound(jobId);
    if (!runsOn(job, session)) return;
    this.#book.appendChunks(job, splitChunk(chunk, this.#options.streamChunkBytes), reservation);
  }

  /** ping: liveness, SDK version, health report and the jobs the worker says it holds. */
  ping(session: WorkerSession, report: { jobIds: string[]; version?: string; unhealthy: boolean }): void {
    const now = this.#clock.now();
    this.#seen(session, now);
    session.pings++;
    session.lastPingAt = now;
    if (report.version) session.sdkVersion = report.version;
    if (report.unhealthy) session.unhealthy = true;
    const listed = new Set(report.jobIds);
    for (const [jobId, handedAt] of [...session.held]) {
      const stop = session.stopping.get(jobId);
      if (listed.has(jobId)) {
        session.unlisted.delete(jobId);
        // Past the stop grace and still running the stopped job: the worker is replaced.
        if (stop?.overdue) this.#unresponsive(session);
        continue;
      }
      const job = this.#book.find(jobId);
      if (job && runsOn(job, session) && job.status === "IN_PROGRESS") {
        session.unlisted.delete(jobId);
        continue;
      }
      // A stopped job that a ping sent after the stop reached the worker no longer lists is gone: it
      // is released at once. A ping that came within stopResendMs of the handover may have been sent
      // before the job reached the worker; then, and for a job that ended without a stop being
      // delivered, two pings in a row must not list it.
      const sentBefore =
        stop?.sentAtPing !== null && stop?.sentAtPing !== undefined && session.pings > stop.sentAtPing;
      if (sentBefore && now - handedAt >= this.#options.stopResendMs) {
        this.#release(session, jobId);
        continue;
      }
      const missed = (session.unlisted.get(jobId) ?? 0) + 1;
      session.unlisted.set(jobId, missed);
      if (missed >= 2) this.#release(session, jobId);
    }
  }

  stop(): void {
    for (const timer of this.#graceTimers) timer.cancel();
    this.#graceTimers.clear();
    for (const session of this.#sessions.values()) {
      session.draining = true;
      this.#answerTake(session, []);
      this.#answerStop(session, []);
    }
  }

  #pull(session: WorkerSession, max: number): Job[] {
    const jobs: Job[] = [];
    while (jobs.length < max) {
      const job = this.#book.nextQueued(session.endpointId);
      if (!job) break;
      this.#book.start(job, session.id);
      session.held.set(job.id, this.#clock.now());
      session.jobsTaken++;
      jobs.push(job);
    }
    if (jobs.length > 0) this.#events.emit("worker.changed", session.endpointId);
    return jobs;
  }

  /** A job the worker no longer has: requeue it, or fail it once it was retried enough. */
  #lost(session: WorkerSession, jobId: string, why?: string, fatal?: string): void {
    this.#release(session, jobId);
    const job = this.#book.find(jobId);
    if (job?.status !== "IN_PROGRESS" || !runsOn(job, session)) return;
    if (fatal !== undefined)
      this.#book.finish(job, "FAILED", {
        error: `worker ${session.id} was ended while running the job: ${fatal}`,
      });
    else if (job.lostRetries < this.#options.maxRetries) this.#book.requeue(job);
    else
      this.#book.finish(job, "FAILED", {
        error: `worker ${session.id} was lost while running the job${why ? `: ${why}` : ""}`,
      });
  }

  #release(session: WorkerSession, jobId: string): void {
    session.unlisted.delete(jobId);
    session.stopping.delete(jobId);
    if (!session.held.has(jobId)) return;
    session.held = without(session.held, jobId);
    if (session.held.size === 0) {
      session.idleSince = this.#clock.now();
      session.lastJob = jobId;
    }
  }

  /** Stops to send on a job-stop poll now: never sent, or sent stopResendMs ago and the job still held. */
  #dueStops(session: WorkerSession, now = this.#clock.now()): string[] {
    const due: string[] = [];
    for (const [jobId, stop] of session.stopping) {
      if (stop.sentAt === null || now - stop.sentAt >= this.#options.stopResendMs) due.push(jobId);
    }
    return due;
  }

  /** How long until a stop is due again (Infinity: none pending). */
  #nextResendIn(session: WorkerSession, now: number): number {
    let next = Number.POSITIVE_INFINITY;
    for (const stop of session.stopping.values()) {
      if (stop.sentAt !== null) next = Math.min(next, stop.sentAt + this.#options.stopResendMs - now);
    }
    return Math.max(0, next);
  }

  /** The ids go out now. A stop for a job the worker no longer holds is sent once, then forgotten. */
  #sendStops(session: WorkerSession, jobIds: string[]): string[] {
    const now = this.#clock.now();
    for (const jobId of jobIds) {
      const stop = session.stopping.get(jobId);
      if (!stop) continue;
      stop.sentAt = now;
      stop.sentAtPing ??= session.pings;
      if (!session.held.has(jobId)) session.stopping.delete(jobId);
    }
    return jobIds;
  }

  /** Past the grace, a worker that stays silent for the heartbeat grace is replaced. */
  #watchSilence(session: WorkerSession, jobId: string): void {
    if (!this.#live(session) || !session.stopping.get(jobId)?.overdue) return;
    const silentSince = session.lastPingAt ?? session.readyAt ?? session.lastSeen;
    const left = silentSince + this.#options.heartbeatGraceMs - this.#clock.now();
    if (left <= 0) this.#unresponsive(session);
    else this.#after(left, () => this.#watchSilence(session, jobId));
  }

  #unresponsive(session: WorkerSession): void {
    if (this.#condemned.has(session) || !this.#live(session)) return;
    this.#condemned.add(session);
    this.#events.emit("worker.unresponsive", session);
  }

  #live(session: WorkerSession): boolean {
    return this.#byEndpoint.get(session.endpointId)?.get(session.id) === session;
  }

  /** A timer cancelled when the dispatcher stops. */
  #after(ms: number, run: () => void): void {
    const timer = this.#clock.setTimer(ms, () => {
      this.#graceTimers.delete(timer);
      run();
    });
    this.#graceTimers.add(timer);
  }

  #seen(session: WorkerSession, now: number): void {
    session.lastSeen = now;
    if (session.readyAt === null) {
      session.readyAt = now;
      session.idleSince = now;
      this.#events.emit("worker.changed", session.endpointId);
    }
  }

  #answerTake(session: WorkerSession, jobs: Job[]): void {
    const poll = session.take;
    session.take = null;
    poll?.resolve(jobs);
  }

  #answerStop(session: WorkerSession, ids: string[]): void {
    const poll = session.stopPoll;
    session.stopPoll = null;
    poll?.resolve(ids);
  }

  #takersOf(endpointId: string): Deque<WorkerSession> {
    let takers = this.#takers.get(endpointId);
    if (!takers) {
      takers = new Deque();
      this.#takers.set(endpointId, takers);
    }
    return takers;
  }
}

const NO_SESSIONS: readonly WorkerSession[] = [];

/** The key of a session: its endpoint and worker id (an endpoint id never holds a NUL). */
function sessionKey(endpointId: string, workerId: string): string {
  return `${endpointId}\u0000${workerId}`;
}

/**
 * The job runs on this session: handed to a worker of this id on this endpoint. Worker ids are the
 * workers' own (a worker run by hand picks its id), so an id alone may name a worker of another
 * endpoint or account.
 */
function runsOn(job: Job, session: WorkerSession): boolean {
  return job.workerId === session.id && job.endpointId === session.endpointId;
}

/**
 * A worker's error as the job keeps it: at most about JOB_POLICY.errorChars. The Python library's
 * error is the JSON text of an object (error_type, error_message, error_traceback, ...) that clients
 * and the console parse: a longer one keeps that shape, each long string member cut to its share,
 * saying so. Any other error past the bound keeps its first JOB_POLICY.errorChars characters.
 */
export function keptError(error: string): string {
  const max = JOB_POLICY.errorChars;
  if (error.length <= max) return error;
  const members = jsonObjectOf(error);
  if (members !== null) {
    const strings = Object.keys(members).filter((key) => typeof members[key] === "string");
    const share = Math.floor(max / Math.max(strings.length, 1)) - 100;
    for (const key of strings) {
      const value = members[key] as string;
      if (value.length > share) {
        members[key] =
          `${value.slice(0, share)}… (cut: ${value.length} characters; the service keeps the first ${share})`;
      }
    }
    const kept = JSON.stringify(members);
    if (kept.length <= max + 1_000) return kept;
  }
  return `${error.slice(0, max)}… (cut: the error was ${error.length} characters; the service keeps the first ${max})`;
}

/** The members of an error that is the JSON text of an object, or null (a deep one is not parsed). */
function jsonObjectOf(error: string): Record<string, unknown> | null {
  if (!error.startsWith("{") || memberTooDeep(error) !== null) return null;
  try {
    const value: unknown = JSON.parse(error);
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
