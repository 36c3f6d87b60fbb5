/**
 * The worker's own log lines, in the shapes the real worker library prints (docs/worker-protocol.md,
 * section 6, "Logs"): with RUNPOD_ENDPOINT_ID set (a platform's worker), one JSON object per line
 * `{"requestId", "message", "level"}`; otherwise `LEVEL  | <job id> | message`. The service reads the
 * job id from them to attribute the line to its job.
 *
 * Lines go out together, in order, at most `LOG_WRITE_DELAY_MS` after the first of them (or once
 * `LOG_WRITE_BYTES` are pending): a worker running jobs back to back writes the pipe once for many
 * jobs' "Started." and "Finished." instead of once a job, and the service reads it once; each read
 * was work on the service's main thread beside the job's own requests (bench/HISTORY.md, tenth pass).
 * Anything else written to stdout or stderr (a handler's console.log, console.error, a progress bar)
 * first writes what is pending, so lines keep their order (a handler's stderr came before its job's
 * "Started." in the logs); whatever is pending is written before the process exits (stdout to a pipe is
 * written synchronously on Linux and macOS). A worker killed outright loses its last lines.
 */
export type LogLevel = "DEBUG" | "INFO" | "WARN" | "ERROR";

/** How long the runtime's own lines may wait to be written with the next ones. */
export const LOG_WRITE_DELAY_MS = 20;
/** Pending lines past this many characters are written at once. */
export const LOG_WRITE_BYTES = 64 * 1024;

let pending = "";
let flushTimer: NodeJS.Timeout | null = null;
let hooked = false;
type Write = (...args: unknown[]) => boolean;
/** stdout's own write, once hooked. */
let write: Write | null = null;

function flush(): void {
  if (flushTimer !== null) clearTimeout(flushTimer);
  flushTimer = null;
  if (pending === "") return;
  const text = pending;
  pending = "";
  (write ?? process.stdout.write).call(process.stdout, text);
}

/** Other writers to stdout and stderr go after the pending lines. */
function hook(): void {
  hooked = true;
  process.once("exit", flush);
  const own = process.stdout.write as Write;
  write = own;
  process.stdout.write = function (this: typeof process.stdout, ...args: unknown[]): boolean {
    flush();
    return own.apply(this, args);
  } as typeof process.stdout.write;
  const ownErr = process.stderr.write as Write;
  process.stderr.write = function (this: typeof process.stderr, ...args: unknown[]): boolean {
    flush();
    return ownErr.apply(this, args);
  } as typeof process.stderr.write;
}

/** The JSON line shape (a platform's worker), read from the environment once. */
let jsonLines: boolean | null = null;

export function logLine(level: LogLevel, message: string, jobId: string | null = null): void {
  jsonLines ??= Boolean(process.env.RUNPOD_ENDPOINT_ID);
  const line = jsonLines
    ? JSON.stringify({ requestId: jobId, message, level })
    : `${level.padEnd(7)}| ${jobId ? `${jobId} | ` : ""}${message}`;
  pending += `${line}\n`;
  if (!hooked) hook();
  if (pending.length >= LOG_WRITE_BYTES) flush();
  else if (flushTimer === null) flushTimer = setTimeout(flush, LOG_WRITE_DELAY_MS).unref();
}
