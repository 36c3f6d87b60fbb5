import { afterEach, expect } from "vitest";
import { RunpodkitError } from "../../sdk/errors";

/** The error a call rejected with, asserted to be one of the SDK's coded errors. */
export async function failure(promise: Promise<unknown>): Promise<RunpodkitError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(RunpodkitError);
  return error as RunpodkitError;
}

/** A list of closers run after each test, the last pushed first (clients before their servers). */
export function closeAfterEach(): Array<() => Promise<void>> {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    const pending = closers.splice(0).reverse();
    for (const close of pending) await close();
  });
  return closers;
}

/** A stream read to its end: its chunks' outputs, and its return value or the error it threw. */
export async function drain(stream: AsyncGenerator<{ output: unknown }, string, undefined>) {
  const outputs: unknown[] = [];
  try {
    for (;;) {
      const next = await stream.next();
      if (next.done) return { outputs, ended: next.value };
      outputs.push(next.value.output);
    }
  } catch (error) {
    return { outputs, ended: error as RunpodkitError };
  }
}

/** Until `check` holds, over real time (bounded): a real socket's round trip takes a few turns. */
export async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("condition not met in time");
}

/** What stepClock moves: a ManualClock (service/clock.ts) given to the job client as `clock`. */
interface SteppedClock {
  readonly pending: number;
  advance(ms: number): Promise<void>;
}

/**
 * Moves a job client's own clock `stepMs` at a time until `done()` holds (at most `maxSteps`
 * steps), each step once the client sleeps on it again (`pending`): between its pauses the client
 * makes real HTTP calls, which one advance() does not wait for. Returns the client time moved.
 */
export async function stepClock(
  clock: SteppedClock,
  stepMs: number,
  done: () => boolean,
  maxSteps = 1_000,
): Promise<number> {
  for (let step = 0; step < maxSteps; step++) {
    await until(() => done() || clock.pending > 0);
    if (done()) return step * stepMs;
    await clock.advance(stepMs);
  }
  throw new Error(`not done after ${maxSteps} steps of ${stepMs} ms`);
}
