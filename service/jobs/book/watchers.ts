import type { Clock } from "../../clock";
import { without } from "./collections";

/**
 * Long-polls on jobs (/runsync, /status-sync, /stream): a waiter is woken on every change of its job
 * and decides for itself whether it is done; holds end on the injected clock or when the client leaves.
 */
interface Waiter {
  /** Re-checks readiness after a change. */
  wake(): void;
  /** Ends the hold now with what is there. */
  end(): void;
}

export class Watchers {
  #byJob = new Map<string, Set<Waiter>>();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Wakes everyone waiting on this job. */
  notify(jobId: string): void {
    const set = this.#byJob.get(jobId);
    if (!set) return;
    for (const waiter of [...set]) waiter.wake();
  }

  /**
   * Resolves true once `ready()` holds (checked now and on each change), false when `ms` pass or the
   * signal aborts first.
   */
  waitUntil(jobId: string, ms: number, ready: () => boolean, signal?: AbortSignal): Promise<boolean> {
    if (ready()) return Promise.resolve(true);
    if (ms <= 0 || signal?.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      let set = this.#byJob.get(jobId);
      if (!set) {
        set = new Set();
        this.#byJob.set(jobId, set);
      }
      const finish = (result: boolean) => {
        timer.cancel();
        signal?.removeEventListener("abort", onAbort);
        set.delete(waiter);
        if (set.size === 0 && this.#byJob.get(jobId) === set) this.#byJob = without(this.#byJob, jobId);
        resolve(result);
      };
      const waiter: Waiter = {
        wake: () => {
          if (ready()) finish(true);
        },
        end: () => finish(ready()),
      };
      const onAbort = () => finish(false);
      const timer = this.#clock.setTimer(ms, () => finish(ready()));
      set.add(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Ends every hold (service stopping): each waiter answers with what it has. */
  releaseAll(): void {
    for (const set of [...this.#byJob.values()]) for (const waiter of [...set]) waiter.end();
  }

  get waiting(): number {
    let n = 0;
    for (const set of this.#byJob.values()) n += set.size;
    return n;
  }
}
