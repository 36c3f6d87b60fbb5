/**
 * Reading one line a worker process printed. Workers of the real worker library print, when
 * RUNPOD_ENDPOINT_ID is set (the pool always sets it), one JSON object per line
 * `{"requestId": <job id or null>, "message": "...", "level": "INFO"}`, and otherwise text lines
 * `LEVEL  | <job id> | message` (docs/worker-protocol.md, section 6, "Logs"); the runpodkit/worker runtime prints
 * the same shapes. Any other line is kept as it is.
 */

export interface ParsedLine {
  level: string;
  /** The job the line names; null when it names none. */
  requestId: string | null;
  message: string;
}

const LEVELS = new Set(["DEBUG", "INFO", "WARN", "WARNING", "ERROR", "TIP", "TRACE"]);

/**
 * A level as one shared string: a known level is answered with the constant here, not with a string
 * of the line's own (a ring buffer keeps thousands of lines, each its level).
 */
function levelName(given: string): string {
  for (const level of LEVELS) if (level === given) return level;
  const upper = given.toUpperCase();
  for (const level of LEVELS) if (level === upper) return level;
  return upper;
}
const TEXT_LINE = /^([A-Z]+)\s*\| (.*)$/s;
const JOB_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{7,}$/;

export function parseWorkerLine(line: string, stream: "stdout" | "stderr"): ParsedLine {
  const fallbackLevel = stream === "stderr" ? "ERROR" : "INFO";
  if (line.startsWith("{")) {
    const value = parseObject(line);
    if (value && typeof value.message === "string") {
      return {
        level: typeof value.level === "string" ? levelName(value.level) : fallbackLevel,
        requestId: typeof value.requestId === "string" && value.requestId ? value.requestId : null,
        message: value.message,
      };
    }
  }
  const text = TEXT_LINE.exec(line);
  if (text && LEVELS.has(text[1] as string)) {
    const level = levelName(text[1] as string);
    const rest = text[2] as string;
    const bar = rest.indexOf(" | ");
    const id = bar > 0 ? rest.slice(0, bar) : "";
    if (JOB_ID.test(id)) return { level, requestId: id, message: rest.slice(bar + 3) };
    return { level, requestId: null, message: rest };
  }
  return { level: fallbackLevel, requestId: null, message: line };
}

function parseObject(line: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
