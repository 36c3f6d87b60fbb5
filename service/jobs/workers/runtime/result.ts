import { hostname } from "node:os";
import { inspect } from "node:util";
import type { JobResultBody } from "./types";

export const RUNTIME_VERSION = "runpodkit-0.1.0";

/**
 * A handler's return value as a job-done body, by the rules of the real worker library: a non-object
 * is `{output: v}`; an object is `{output: obj}` (not unwrapped) unless it has a truthy `error`
 * (failed, the rest becomes output) or `refresh_worker` (removed, adds stopPod); an empty object
 * sends no output.
 */
export function resultBody(returned: unknown): JobResultBody {
  // A value with toJSON (a Date, a Buffer, a decimal or a record class) is what JSON makes of it,
  // as JSON.stringify would send it: its own fields alone were an empty output or its internals.
  const converted = jsonView(returned);
  if ("reason" in converted) return { error: `handler output is not JSON-serialisable: ${converted.reason}` };
  const value = converted.value;
  // Nothing returned is Python's None: `{"output": null}` (JSON would drop the key: no output at all).
  if (value === undefined) return { output: null };
  const notJson = jsonlessKind(value);
  if (notJson) return { error: `handler output is not JSON-serialisable: it is ${notJson}` };
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { output: value };
  const { error, refresh_worker, ...rest } = value as Record<string, unknown>;
  const body: JobResultBody = {};
  if (Object.keys(rest).length > 0) body.output = rest;
  if (error) body.error = error;
  if (refresh_worker) body.stopPod = true;
  return body;
}

/** The value as JSON.stringify first sees it: the result of its toJSON, when it has one. */
function jsonView(value: unknown): { value: unknown } | { reason: string } {
  const toJSON = (value as { toJSON?: unknown } | null | undefined)?.toJSON;
  if (typeof toJSON !== "function") return { value };
  try {
    return { value: toJSON.call(value, "") };
  } catch (error) {
    return { reason: error instanceof Error ? error.message : String(error) };
  }
}

/** The error of a handler that threw: a JSON string, as the real worker library sends it. */
export function exceptionBody(error: unknown, workerId: string): JobResultBody {
  // A thrown non-Error (a string, an object, undefined) has no stack of its own: the traceback is
  // empty rather than the runtime's frames, and the message shows the value, not "[object Object]".
  const isError = isErrorValue(error);
  return {
    error: JSON.stringify({
      error_type: `<class '${isError ? (textOf(() => error.name) ?? "Error") : kindOf(error)}'>`,
      error_message: isError ? (textOf(() => error.message) ?? describeValue(error)) : describeValue(error),
      error_traceback: isError ? (textOf(() => error.stack) ?? "") : "",
      hostname: process.env.RUNPOD_POD_HOSTNAME ?? hostname(),
      worker_id: workerId,
      runpod_version: RUNTIME_VERSION,
    }),
  };
}

/** The longest text a thrown or yielded non-Error value is shown as. */
export const DESCRIBED_VALUE_CHARS = 4_096;

/**
 * A value a handler threw or yielded as an error, as text: a string as it is, anything else as
 * util.inspect shows it (circular references and BigInts included, unlike JSON), cut to a bound.
 */
export function describeValue(value: unknown): string {
  let text: string;
  try {
    text =
      typeof value === "string" ? value : inspect(value, { depth: 4, breakLength: Number.POSITIVE_INFINITY });
  } catch {
    // A Proxy whose traps throw, say.
    text = textOf(() => Object.prototype.toString.call(value)) ?? "[a value that cannot be shown]";
  }
  return text.length > DESCRIBED_VALUE_CHARS ? `${text.slice(0, DESCRIBED_VALUE_CHARS)}…` : text;
}

/** An Error's stack, or a thrown non-Error value described. */
export function tracebackOf(error: unknown): string {
  if (!isErrorValue(error)) return describeValue(error);
  return (
    textOf(() => error.stack) ??
    `${textOf(() => error.name) ?? "Error"}: ${textOf(() => error.message) ?? describeValue(error)}`
  );
}

/** An Error's message, or a thrown non-Error value described. */
export function messageOf(error: unknown): string {
  return (isErrorValue(error) ? textOf(() => error.message) : undefined) ?? describeValue(error);
}

/** An Error's stack, or "" (a non-Error value, or one whose stack cannot be read). */
export function stackOf(error: unknown): string {
  return (isErrorValue(error) ? textOf(() => error.stack) : undefined) ?? "";
}

/**
 * A thrown Error's own text can throw as it is read: a getter, a Proxy's trap, a `name` that is a
 * Symbol (V8 formats `stack` with it on first read). Reading it so made the runtime's own failure
 * path throw: the job got no result, ran again on the same worker as if its worker were lost, and
 * ended FAILED "worker ... was lost" after its retries. Such a part is shown as missing instead.
 */
function textOf(read: () => unknown): string | undefined {
  try {
    const value = read();
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

function isErrorValue(value: unknown): value is Error {
  try {
    return value instanceof Error;
  } catch {
    // A Proxy whose getPrototypeOf trap throws.
    return false;
  }
}

function kindOf(value: unknown): string {
  return value === null ? "null" : typeof value;
}

/** Is this a value a streaming handler produced (generator or async iterable, not a plain array)? */
export function isStream(value: unknown): value is AsyncIterable<unknown> | Iterable<unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const v = value as Record<symbol | string, unknown>;
  if (typeof v[Symbol.asyncIterator] === "function") return true;
  return typeof v[Symbol.iterator] === "function" && typeof v.next === "function";
}

/**
 * "a function" or "a symbol" for a value JSON.stringify drops without an error (as an output or a
 * chunk it vanished: COMPLETED with no output, a chunk the platform never got); else null.
 */
export function jsonlessKind(value: unknown): string | null {
  if (typeof value === "function") return "a function";
  if (typeof value === "symbol") return "a symbol";
  return null;
}

/** JSON text of `value`, or why JSON cannot carry it (a BigInt, a circular reference, a throwing toJSON). */
export function toJson(value: unknown): { text: string } | { reason: string } {
  try {
    return { text: JSON.stringify(value) };
  } catch (error) {
    return { reason: error instanceof Error ? error.message : String(error) };
  }
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
