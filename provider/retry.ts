import { setTimeout as delay } from "node:timers/promises";
import { ProviderError } from "./errors";

/**
 * Time as the provider sees it. The provider runs in Pulumi's host, outside the service, so the
 * default is wall-clock time; tests pass a virtual pause that advances instantly.
 */
export interface Pause {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const wallClock: Pause = {
  now: () => Date.now(),
  sleep: (ms) => delay(ms),
};

export interface RetryWithin {
  /** The operation and resource, for the error when the bound is exceeded, e.g. "delete endpoint abc". */
  operation: string;
  /** Total time allowed for all attempts, in milliseconds. */
  boundMs: number;
  /**
   * When the bound began (pause.now()), if before this call: a wait inside an operation shares the
   * operation's bound (customTimeouts) rather than starting one of its own. Default: now.
   */
  startedAt?: number;
  /** Whether a failure is a refusal worth waiting out (e.g. "in use"); anything else is thrown at once. */
  retryable: (error: unknown) => boolean;
  pause: Pause;
  /** First wait between attempts; doubles up to maxDelayMs. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Called before each wait, e.g. to log progress. */
  onRetry?: (error: unknown, attempt: number, waitMs: number) => void;
  /** The least wait a failure asks for (a 429's Retry-After), when longer than the backoff. */
  waitAtLeast?: (error: unknown) => number | undefined;
  /** Appended to the error raised past the bound: what to do about it. */
  hint?: string;
}

/**
 * Runs `attempt` until it succeeds, retrying refusals with exponential backoff while the total time
 * stays within the bound. The wait is capped so the last attempt happens at the bound, and the error
 * raised past it names the bound and the last refusal. (Maintained retry libraries sleep on real
 * timers only; this loop takes an injected Pause so the bound is testable without waiting.)
 */
export async function retryWithin<T>(attempt: () => Promise<T>, options: RetryWithin): Promise<T> {
  const { pause, boundMs } = options;
  const started = options.startedAt ?? pause.now();
  let wait = options.initialDelayMs ?? 1_000;
  const maxDelay = options.maxDelayMs ?? 15_000;
  for (let attemptNumber = 1; ; attemptNumber++) {
    try {
      return await attempt();
    } catch (error) {
      if (!options.retryable(error)) throw error;
      const remaining = started + boundMs - pause.now();
      if (remaining <= 0) {
        throw new ProviderError(
          "TIMEOUT",
          `${options.operation}: still refused after ${attemptNumber} attempts within the bound of ${formatMs(boundMs)}: ${messageOf(error)}${options.hint ? ` ${options.hint}` : ""}`,
          {
            operation: options.operation,
            cause: error,
          },
        );
      }
      const thisWait = Math.min(Math.max(wait, options.waitAtLeast?.(error) ?? 0), remaining);
      options.onRetry?.(error, attemptNumber, thisWait);
      await pause.sleep(thisWait);
      wait = Math.min(wait * 2, maxDelay);
    }
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
