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
