import type { Clock } from "../../clock";
import { Deque } from "../book/collections";

/** Queue depth and workers of an endpoint at one moment (ms since the epoch). */
export interface SeriesPoint {
  t: number;
  inQueue: number;
  inProgress: number;
  /** Workers up or starting (idle, running, initializing, unhealthy). */
  workers: number;
}

export interface SeriesSource {
  jobs(endpointId: string): { inQueue: number; inProgress: number };
  workers(endpointId: string): number;
}

/**
 * The console chart's history: a point per change of an endpoint's queue depth, running jobs or
 * workers (recorded as the plane's events announce them, so no timer runs), at most `maxPoints` per
 * endpoint; a point that changes nothing is not recorded.
 */
export class EndpointSeries {
  readonly #points = new Map<string, Deque<SeriesPoint>>();
  /** The newest point of each endpoint (the deque's back). */
  readonly #last = new Map<string, SeriesPoint>();
  readonly #clock: Clock;
  readonly #source: SeriesSource;
  readonly #maxPoints: number;

  constructor(clock: Clock, source: SeriesSource, maxPoints: number) {
    this.#clock = clock;
    this.#source = source;
    this.#maxPoints = maxPoints;
  }

  record(endpointId: string): void {
    const jobs = this.#source.jobs(endpointId);
    const point: SeriesPoint = {
      t: this.#clock.now(),
      inQueue: jobs.inQueue,
      inProgress: jobs.inProgress,
      workers: this.#source.workers(endpointId),
    };
    let points = this.#points.get(endpointId);
    if (!points) {
      points = new Deque();
      this.#points.set(endpointId, points);
    }
    const last = this.#last.get(endpointId);
    if (
      last &&
      last.inQueue === point.inQueue &&
      last.inProgress === point.inProgress &&
      last.workers === point.workers
    )
      return;
    points.push(point);
    this.#last.set(endpointId, point);
    while (points.size > this.#maxPoints) points.shift();
  }

  /** The recorded points (those at or after `since`, when given), oldest first, then the values now. */
  points(endpointId: string, since?: number): SeriesPoint[] {
    const recorded = [...(this.#points.get(endpointId) ?? [])];
    const points = since === undefined ? recorded : recorded.filter((point) => point.t >= since);
    const jobs = this.#source.jobs(endpointId);
    points.push({
      t: this.#clock.now(),
      inQueue: jobs.inQueue,
      inProgress: jobs.inProgress,
      workers: this.#source.workers(endpointId),
    });
    return points;
  }

  /** Endpoints with a recorded history (released when an endpoint is deleted). */
  get endpointCount(): number {
    return this.#points.size;
  }

  deleteEndpoint(endpointId: string): void {
    this.#points.delete(endpointId);
    this.#last.delete(endpointId);
  }
}
