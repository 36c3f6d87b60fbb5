import type { Clock, Timer } from "../../clock";
import type { EndpointSettings } from "../../planes";
import type { JobBook } from "../book/book";
import { emptied } from "../book/collections";
import type { Dispatcher } from "../dispatch/dispatcher";
import type { CachedEndpoints } from "../model/endpoints";
import type { WorkerPool } from "./pool";
import { decideScale } from "./scaler";

export interface SupervisorOptions {
  /** How often every endpoint is re-evaluated (queue delay, idle timeouts), ms. */
  intervalMs: number;
  /** A hand-run worker silent this long is considered gone and its jobs recovered, ms. */
  externalWorkerTimeoutMs: number;
  /** Endpoints are followed through events; every this often they are also all re-read, ms. */
  resyncMs: number;
}

/**
 * Applies the scaler to each queue endpoint: on a timer (time-based rules) and right after anything
 * changes (a job queued, a worker ready or gone). Also replaces workers whose endpoint's template or
 * env changed, stops drained workers, and forgets silent hand-run workers.
 */
export class Supervisor {
  readonly #clock: Clock;
  readonly #pool: WorkerPool;
  readonly #dispatcher: Dispatcher;
  readonly #book: JobBook;
  readonly #endpoints: CachedEndpoints;
  readonly #options: SupervisorOptions;
  readonly #known = new Map<string, EndpointSettings>();
  #dirty = new Set<string>();
  #timer: Timer | null = null;
  #lastResync = Number.NEGATIVE_INFINITY;
  #scheduled = false;
  #running = false;

  constructor(deps: {
    clock: Clock;
    pool: WorkerPool;
    dispatcher: Dispatcher;
    book: JobBook;
    endpoints: CachedEndpoints;
    options: SupervisorOptions;
  }) {
    this.#clock = deps.clock;
    this.#pool = deps.pool;
    this.#dispatcher = deps.dispatcher;
    this.#book = deps.book;
    this.#endpoints = deps.endpoints;
    this.#options = deps.options;
  }

  start(): void {
    this.#running = true;
    this.#tick();
  }

  stop(): void {
    this.#running = false;
    this.#timer?.cancel();
    this.#timer = null;
  }

  /** Re-evaluates the endpoint soon (once per event-loop turn, however many changes). */
  nudge(endpointId: string, accountId?: string): void {
    if (!this.#known.has(endpointId) && accountId) {
      const settings = this.#endpoints.get(accountId, endpointId);
      if (settings) this.#known.set(endpointId, settings);
    }
    this.#dirty.add(endpointId);
    if (this.#scheduled || !this.#running) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      for (const id of this.#dirty) {
        const settings = this.#known.get(id);
        if (settings) this.#evaluate(settings);
      }
      this.#dirty = emptied(this.#dirty, () => new Set());
    });
  }

  /** The endpoint was created or changed: new settings apply now. */
  endpointSaved(accountId: string, endpointId: string): void {
    this.#endpoints.invalidate(accountId, endpointId);
    const settings = this.#endpoints.get(accountId, endpointId);
    if (!settings) return;
    this.#known.set(endpointId, settings);
    this.nudge(endpointId);
  }

  /** The endpoint is gone: its workers stop and its jobs are deleted. */
  async endpointDeleted(accountId: string, endpointId: string): Promise<void> {
    this.#endpoints.invalidate(accountId, endpointId);
    this.#known.delete(endpointId);
    this.#book.deleteEndpoint(endpointId);
    for (const session of this.#dispatcher.sessions(endpointId)) {
      if (!session.managed) this.#dispatcher.close(session);
    }
    await this.#pool.stopEndpoint(endpointId);
  }

  #tick(): void {
    if (!this.#running) return;
    const now = this.#clock.now();
    if (now - this.#lastResync >= this.#options.resyncMs) {
      this.#lastResync = now;
      this.#known.clear();
      for (const settings of this.#endpoints.listAll()) this.#known.set(settings.id, settings);
    }
    for (const settings of [...this.#known.values()]) this.#evaluate(settings);
    this.#forgetSilentWorkers();
    this.#timer = this.#clock.setTimer(this.#options.intervalMs, () => this.#tick());
  }

  #evaluate(settings: EndpointSettings): void {
    if (settings.type !== "QB" || !this.#pool.canStart) return;
    const now = this.#clock.now();
    for (const worker of this.#pool.workersOf(settings.id)) {
      const stale =
        worker.endpoint.version !== settings.version || worker.endpoint.imageName !== settings.imageName;
      if (stale && !worker.stopping) this.#pool.stop(worker.session.id, "replace");
    }
    this.#pool.reapDrained();
    const live = this.#pool.workersOf(settings.id);
    const active = live.filter((w) => !w.stopping);
    const counts = this.#book.counts(settings.id);
    const decision = decideScale({
      endpoint: settings,
      now,
      workers: active.map((w) => ({
        id: w.session.id,
        starting: w.session.readyAt === null,
        busy: w.session.held.size > 0,
        idleSince: w.session.idleSince,
      })),
      queued: counts.inQueueScaling,
      inProgress: counts.inProgress,
      oldestQueuedAt: this.#book.oldestScalingQueuedAt(settings.id),
    });
    // A worker being stopped takes no jobs but is still a process (up to killGraceMs when it ignores
    // SIGTERM; until its jobs end when it drains): it counts against workersMax, as a worker of the
    // real service counts until it is gone. Its exit re-evaluates the endpoint (worker.changed).
    const room = Math.max(0, settings.workersMax - live.length);
    const start = Math.min(decision.start, room);
    if (start > 0 && this.#pool.mayStart(settings.id)) this.#pool.startUpTo(settings, start);
    for (const id of decision.stop) this.#pool.stop(id, "idle");
  }

  #forgetSilentWorkers(): void {
    const cutoff = this.#clock.now() - this.#options.externalWorkerTimeoutMs;
    for (const session of this.#dispatcher.sessions()) {
      if (!session.managed && session.lastSeen < cutoff && !session.take && !session.stopPoll) {
        this.#dispatcher.close(session);
      }
    }
  }
}
