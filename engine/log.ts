/** What a deployment prints: engine diagnostics, the program's Engine.Log calls and its output, the provider host's output. */
export type LogSource = "engine" | "program" | "provider";
export type LogSeverity = "debug" | "info" | "warning" | "error";

export interface LogEntry {
  source: LogSource;
  severity: LogSeverity;
  message: string;
  urn?: string;
}

export type LogSink = (entry: LogEntry) => void;

export function formatLog(entries: readonly LogEntry[]): string {
  return entries.map((e) => `[${e.source}:${e.severity}]${e.urn ? ` ${e.urn}` : ""} ${e.message}`).join("\n");
}
