import { hostname } from "node:os";
import type { JobResultBody } from "./types";

export const RUNTIME_VERSION = "runpodkit-0.1.0";

/**
 * A handler's return value as a job-done body, by the rules of the real worker library: a non-object
 * is `{output: v}`; an object is `{output: obj}` (not unwrapped) unless it has a truthy `error`
 * (failed, the rest becomes output) or `refresh_worker` (removed, adds stopPod); an empty object
 * sends no output.
 */
export function resultBody(value: unknown): JobResultBody {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { output: value };
  const { error, refresh_worker, ...rest } = value as Record<string, unknown>;
  const body: JobResultBody = {};
  if (Object.keys(rest).length > 0) body.output = rest;
  if (error) body.error = error;
  if (refresh_worker) body.stopPod = true;
  return body;
}

/** The error of a handler that threw: a JSON string, as the real worker library sends it. */
export function exceptionBody(error: unknown, workerId: string): JobResultBody {
  const err = error instanceof Error ? error : new Error(String(error));
  return {
    error: JSON.stringify({
      error_type: `<class '${err.name}'>`,
      error_message: err.message,
      error_traceback: err.stack ?? "",
      hostname: process.env.RUNPOD_POD_HOSTNAME ?? hostname(),
      worker_id: workerId,
      runpod_version: RUNTIME_VERSION,
    }),
  };
}

/** Is this a value a streaming handler produced (generator or async iterable, not a plain array)? */
export function isStream(value: unknown): value is AsyncIterable<unknown> | Iterable<unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const v = value as Record<symbol | string, unknown>;
  if (typeof v[Symbol.asyncIterator] === "function") return true;
  return typeof v[Symbol.iterator] === "function" && typeof v.next === "function";
}

/** Serialises a body, turning an output JSON cannot carry into a job error instead of losing it. */
export function serialise(body: JobResultBody): string {
  try {
    return JSON.stringify(body);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return JSON.stringify({
      error: `handler output is not JSON-serialisable: ${reason}`,
      stopPod: body.stopPod,
    });
  }
}
