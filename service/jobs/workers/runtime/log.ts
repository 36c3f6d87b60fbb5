/**
 * The worker's own log lines, in the shapes the real worker library prints (docs/worker-protocol.md,
 * section 6, "Logs"): with RUNPOD_ENDPOINT_ID set (a platform's worker), one JSON object per line
 * `{"requestId", "message", "level"}`; otherwise `LEVEL  | <job id> | message`. The service reads the
 * job id from them to attribute the line to its job.
 */
export type LogLevel = "DEBUG" | "INFO" | "WARN" | "ERROR";

export function logLine(level: LogLevel, message: string, jobId: string | null = null): void {
  const line = process.env.RUNPOD_ENDPOINT_ID
    ? JSON.stringify({ requestId: jobId, message, level })
    : `${level.padEnd(7)}| ${jobId ? `${jobId} | ` : ""}${message}`;
  process.stdout.write(`${line}\n`);
}
