import type { EndpointSettings } from "../../planes";

/** A worker as the scaler sees it. */
export interface ScalerWorker {
  id: string;
  /** Cold start or process start under way (no request from it yet). */
  starting: boolean;
  /** Holds at least one job. */
  busy: boolean;
  /** Since when it has held nothing (ms). */
  idleSince: number;
}

export interface ScalerInput {
  endpoint: Pick<
    EndpointSettings,
    "workersMin" | "workersMax" | "scalerType" | "scalerValue" | "idleTimeout"
  >;
  now: number;
  /** Workers that take jobs (not draining). */
  workers: ScalerWorker[];
  /** Queued jobs that may trigger scaling (lowPriority ones never do). */
  queued: number;
  inProgress: number;
  /** When the oldest of those queued jobs entered the queue. */
  oldestQueuedAt: number | undefined;
}

export interface ScalerDecision {
  /** Workers to start. */
  start: number;
  /** Workers to stop (idle ones, or busy ones to drain when above workersMax). */
  stop: string[];
}

/**
 * How many workers an endpoint wants, from its settings and its queue:
 * - workersMin are always up, never more than workersMax;
 * - QUEUE_DELAY: with no worker at all, a queued job starts one; after that one more is added each
 *   time the oldest queued job has waited scalerValue seconds while no worker is idle or starting;
 * - REQUEST_COUNT: ceil((queued + in progress) / scalerValue) workers;
 * - a worker above the target stops once it has been idle idleTimeout seconds; above workersMax
 *   (settings lowered) idle workers stop at once and busy ones drain.
 */
export function decideScale(input: ScalerInput): ScalerDecision {
  const { endpoint, now, workers } = input;
  const count = workers.length;
  const busy = workers.filter((w) => w.busy).length;
  const idle = workers.filter((w) => !w.busy && !w.starting).length;
  const starting = workers.filter((w) => w.starting).length;
  let target = Math.max(endpoint.workersMin, busy);

  if (endpoint.scalerType === "REQUEST_COUNT") {
    const perWorker = Math.max(1, endpoint.scalerValue);
    target = Math.max(target, Math.ceil((input.queued + input.inProgress) / perWorker));
  } else if (input.queued > 0) {
    const waited = input.oldestQueuedAt === undefined ? 0 : now - input.oldestQueuedAt;
    if (count === 0) target = Math.max(target, 1);
    else if (idle === 0 && starting === 0 && waited >= endpoint.scalerValue * 1_000)
      target = Math.max(target, count + 1);
    else target = Math.max(target, count - idle + Math.min(idle, input.queued));
  }
  target = Math.min(target, endpoint.workersMax);

  if (count < target) return { start: target - count, stop: [] };
  const stop: string[] = [];
  const excess = count - target;
  if (excess > 0) {
    const overMax = Math.max(0, count - endpoint.workersMax);
    const idleTimeoutMs = endpoint.idleTimeout * 1_000;
    // Starting workers first (above workersMax), then the longest idle.
    const candidates = [...workers]
      .filter((w) => !w.busy)
      .sort((a, b) => rank(a) - rank(b) || a.idleSince - b.idleSince);
    for (const worker of candidates) {
      if (stop.length >= excess) break;
      const expired = !worker.starting && now - worker.idleSince >= idleTimeoutMs;
      if (stop.length < overMax || expired) stop.push(worker.id);
    }
    // Still above workersMax: drain busy workers too.
    for (const worker of workers) {
      if (stop.length >= overMax) break;
      if (worker.busy) stop.push(worker.id);
    }
  }
  return { start: 0, stop };
}

const rank = (worker: ScalerWorker): number => (worker.starting ? 0 : 1);
