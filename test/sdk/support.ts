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
