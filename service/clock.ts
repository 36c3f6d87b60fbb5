/**
 * The one source of time for the service. Every duration the service applies (retention, ttl,
 * timeouts, webhook spacing, idle timeout, cold start, rate windows) goes through a Clock, so tests
 * use a ManualClock and advance it instead of sleeping.
 */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` once, `ms` milliseconds from now. */
  setTimer(ms: number, fn: () => void): Timer;
  /** Resolves after `ms`; rejects with the signal's reason if aborted first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function sleepWith(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      timer.cancel();
      reject(signal?.reason);
    };
    const timer = clock.setTimer(ms, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Where a SystemClock reads time: the wall clock once, a monotonic clock for every reading after. */
export interface TimeSources {
  /** Milliseconds since the epoch (the system's wall clock, which an operator or NTP may step). */
  wall(): number;
  /** Milliseconds from an arbitrary origin, never stepped (CLOCK_MONOTONIC). */
  monotonic(): number;
}

const SYSTEM_TIME: TimeSources = { wall: () => Date.now(), monotonic: () => performance.now() };

/**
 * The system's time: the wall clock as it was when the clock was made, moved on by the monotonic
 * clock. Every rule of the service compares times it read from here (ttl, executionTimeout,
 * idleTimeout, retention, delayTime, executionTime, billed time): read from the wall clock, a step of
 * the system's clock (an operator setting it, NTP correcting it, a VM resumed) would fail every running
 * job on its executionTimeout, expire queued jobs, stop idle workers at once, or make durations
 * negative. A step is seen at the next start. Timers never keep the process alive on their own.
 */
export class SystemClock implements Clock {
  readonly #sources: TimeSources;
  readonly #origin: number;

  constructor(sources: TimeSources = SYSTEM_TIME) {
    this.#sources = sources;
    this.#origin = sources.wall() - sources.monotonic();
  }

  now(): number {
    return Math.round(this.#origin + this.#sources.monotonic());
  }

  setTimer(ms: number, fn: () => void): Timer {
    const handle = setTimeout(fn, Math.max(0, ms));
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, ms, signal);
  }
}

interface PendingTimer {
  due: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * A clock that moves only when told to. `advance` fires due timers in order, letting promise
 * callbacks settle between them, so chains like "sleep then retry" complete within one advance.
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: PendingTimer[] = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimer(ms: number, fn: () => void): Timer {
    const timer: PendingTimer = { due: this.#now + Math.max(0, ms), seq: this.#seq++, fn, cancelled: false };
    this.#timers.push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
      },
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, ms, signal);
  }

  /** Number of timers still waiting to fire. */
  get pending(): number {
    return this.#timers.filter((t) => !t.cancelled).length;
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    await settle();
    for (;;) {
      const next = this.#nextDue(target);
      if (!next) break;
      this.#timers.splice(this.#timers.indexOf(next), 1);
      this.#now = next.due;
      next.fn();
      await settle();
    }
    this.#now = target;
    await settle();
  }

  #nextDue(limit: number): PendingTimer | undefined {
    this.#timers = this.#timers.filter((t) => !t.cancelled);
    let best: PendingTimer | undefined;
    for (const t of this.#timers) {
      if (t.due > limit) continue;
      if (!best || t.due < best.due || (t.due === best.due && t.seq < best.seq)) best = t;
    }
    return best;
  }
}

/** Lets pending promise callbacks and I/O callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
