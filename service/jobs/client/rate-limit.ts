import type { Clock } from "../../clock";
import { ServiceError } from "../../errors";
import { RATE_LIMITS, type RateLimit, type RateLimitedOperation } from "../policy";

export interface RateLimitOptions {
  enabled: boolean;
  /** The dynamic rule: the rate limit is at least running workers x this, per window. */
  requestsPerWorker: number;
  /** Per-operation overrides of the spec's table. */
  limits: Partial<Record<RateLimitedOperation, RateLimit>>;
}

export const DEFAULT_RATE_LIMIT_OPTIONS: RateLimitOptions = {
  enabled: true,
  requestsPerWorker: 100,
  limits: {},
};

interface Window {
  /** The window's length (the operation's), so an idle one can be told apart without its operation. */
  windowMs: number;
  start: number;
  count: number;
  previous: number;
  inFlight: number;
}

/**
 * Per endpoint and operation: a sliding-window request rate (the current and previous window,
 * weighted) and a count of requests in flight, both on the injected clock. Over either limit the
 * request is refused with RATE_LIMITED carrying when to retry.
 */
export class RateLimiter {
  readonly #windows = new Map<string, Window>();
  readonly #clock: Clock;
  readonly #options: RateLimitOptions;
  readonly #workersUp: (endpointId: string) => number;

  constructor(clock: Clock, options: RateLimitOptions, workersUp: (endpointId: string) => number) {
    this.#clock = clock;
    this.#options = options;
    this.#workersUp = workersUp;
  }

  /** False when the service runs without rate limits: admit() counts nothing then. */
  get enabled(): boolean {
    return this.#options.enabled;
  }

  /** Admits one request or throws RATE_LIMITED; call the returned function when it is answered. */
  admit(endpointId: string, operation: RateLimitedOperation): () => void {
    if (!this.#options.enabled) return noop;
    const limit = this.#options.limits[operation] ?? RATE_LIMITS[operation];
    const key = `${endpointId} ${operation}`;
    const now = this.#clock.now();
    let w = this.#windows.get(key);
    if (!w) {
      w = { windowMs: limit.windowMs, start: now, count: 0, previous: 0, inFlight: 0 };
      this.#windows.set(key, w);
    }
    w.windowMs = limit.windowMs;
    const elapsed = now - w.start;
    if (elapsed >= limit.windowMs) {
      // One window on: the current becomes the previous; more than one: both are empty.
      w.previous = elapsed < 2 * limit.windowMs ? w.count : 0;
      w.start = elapsed < 2 * limit.windowMs ? w.start + limit.windowMs : now;
      w.count = 0;
    }
    const sinceStart = now - w.start;
    const rate = Math.max(limit.requests, this.#workersUp(endpointId) * this.#options.requestsPerWorker);
    const estimated = w.previous * (1 - sinceStart / limit.windowMs) + w.count;
    if (estimated + 1 > rate) {
      throw new ServiceError(
        "RATE_LIMITED",
        `rate limit of ${rate} ${operation} requests per ${limit.windowMs / 1000} s exceeded for endpoint ${endpointId}`,
        { retryAfterMs: Math.max(1_000, Math.ceil(untilAdmitted(w, sinceStart, limit.windowMs, rate))) },
      );
    }
    if (limit.concurrent !== null && w.inFlight >= limit.concurrent) {
      throw new ServiceError(
        "RATE_LIMITED",
        `at most ${limit.concurrent} ${operation} requests may be in flight for endpoint ${endpointId}`,
        { retryAfterMs: 1_000 },
      );
    }
    w.count++;
    w.inFlight++;
    const window = w;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      window.inFlight--;
    };
  }

  /**
   * Forgets the windows that no longer weigh on anything: none of their requests in flight and both
   * their windows past (admit() would start them empty). One is made per endpoint and operation, and
   * nothing else removed them: a service whose endpoints come and go kept one for each, for good.
   */
  prune(): void {
    const now = this.#clock.now();
    for (const [key, w] of this.#windows) {
      if (w.inFlight === 0 && now - w.start >= 2 * w.windowMs) this.#windows.delete(key);
    }
  }

  /** Windows kept (endpoint and operation pairs). */
  get size(): number {
    return this.#windows.size;
  }
}

const noop = () => {};

/**
 * How long until one more request fits under `rate`, the window's counts staying as they are: while
 * the previous window's weight fades within this one, or else once this window has become the
 * previous one and faded enough. A Retry-After of "until this window ends" was too early: the full
 * window then still weighs on the next one, and a client that waited as told was refused again.
 */
function untilAdmitted(w: Window, sinceStart: number, windowMs: number, rate: number): number {
  const room = rate - 1 - w.count;
  if (room >= 0 && w.previous > 0) return windowMs * (1 - room / w.previous) - sinceStart;
  const intoNext = w.count > 0 ? windowMs * Math.max(0, 1 - (rate - 1) / w.count) : 0;
  return windowMs - sinceStart + intoNext;
}
