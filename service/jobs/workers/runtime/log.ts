/**
 * The worker's own log lines, in the shapes the real worker library prints (docs/worker-protocol.md,
 * section 6, "Logs"): with RUNPOD_ENDPOINT_ID set (a platform's worker), one JSON object per line
 * `{"requestId", "message", "level"}`; otherwise `LEVEL  | <job id> | message`. The service reads the
 * job id from them to attribute the line to its job.
 *
 * Lines of one turn of the event loop go out in one write, in order, at the end of that turn (a
 * no-op job's "Started." and "Finished." are one write to the pipe instead of two, and one read for
 * the service). Anything else written to stdout (a handler's console.log) first writes what is
 * pending, so lines keep their order; whatever is pending is written before the process exits.
 */
export type LogLevel = "DEBUG" | "INFO" | "WARN" | "ERROR";

let pending = "";
let flushQueued = false;
let hooked = false;
type Write = (...args: unknown[]) => boolean;
/** stdout's own write, once hooked. */
let write: Write | null = null;

function flush(): void {
  flushQueued = false;
  if (pending === "") return;
  const text = pending;
  pending = "";
  (write ?? process.stdout.write).call(process.stdout, text);
}

/** Other writers to stdout go after the pending lines. */
function hook(): void {
  hooked = true;
  process.once("exit", flush);
  const own = process.stdout.write as Write;
  write = own;
  process.stdout.write = function (this: typeof process.stdout, ...args: unknown[]): boolean {
    flush();
    return own.apply(this, args);
  } as typeof process.stdout.write;
}

export function logLine(level: LogLevel, message: string, jobId: string | null = null): void {
  const line = process.env.RUNPOD_ENDPOINT_ID
    ? JSON.stringify({ requestId: jobId, message, level })
    : `${level.padEnd(7)}| ${jobId ? `${jobId} | ` : ""}${message}`;
  pending += `${line}\n`;
  if (!hooked) hook();
  if (!flushQueued) {
    flushQueued = true;
    setImmediate(flush);
  }
}
