import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { request } from "undici";
import { z } from "zod";
import { LogEntry } from "../sdk/schemas/observe";

export const LOGS_USAGE =
  "usage: runpodkit logs <endpoint id> [--worker <id>] [--job <id>] [--since <ms|ISO time>] [--follow] [--json]\n" +
  "  reads RUNPOD_API_KEY and RUNPOD_BASE_URL (the job API base, default http://127.0.0.1:8080/v2)";

const KEY_UNSET = "RUNPOD_API_KEY is not set: export the account's API key (one of the service's keys)";
const Env = z.object({
  RUNPOD_API_KEY: z.string({ error: KEY_UNSET }).min(1, KEY_UNSET),
  RUNPOD_BASE_URL: z
    .url({ error: "RUNPOD_BASE_URL is not a URL: the job API base, e.g. http://127.0.0.1:8080/v2" })
    .default("http://127.0.0.1:8080/v2"),
});

/** One entry as a line for people: time, worker, job, level, message (a traceback keeps its lines). */
export function formatEntry(entry: LogEntry): string {
  const job = entry.requestId ? ` ${entry.requestId}` : "";
  return `${entry.time} ${entry.workerId}${job} ${entry.level.padEnd(5)} ${entry.message}`;
}

/**
 * `runpodkit logs <endpoint>`: prints the endpoint's captured worker lines (filtered by worker, job,
 * time), and with --follow keeps printing new ones until interrupted. The key goes in the
 * authorization header only; it is never printed.
 */
export async function logsCommand(args: string[], out: (line: string) => void = console.log): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      worker: { type: "string" },
      job: { type: "string" },
      since: { type: "string" },
      follow: { type: "boolean", short: "f", default: false },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    out(LOGS_USAGE);
    return;
  }
  const [endpointId, ...extra] = positionals;
  if (!endpointId || extra.length > 0)
    throw new Error(`logs: exactly one endpoint id is expected\n${LOGS_USAGE}`);
  const env = Env.safeParse(process.env);
  if (!env.success) throw new Error(`logs: ${env.error.issues.map((i) => i.message).join("; ")}`);
  const query = new URLSearchParams();
  if (values.worker) query.set("worker", values.worker);
  if (values.job) query.set("job", values.job);
  if (values.since) query.set("since", values.since);
  if (values.follow) query.set("follow", "1");
  const base = env.data.RUNPOD_BASE_URL.replace(/\/+$/, "");
  const url = `${base}/${encodeURIComponent(endpointId)}/logs?${query}`;
  const reply = await request(url, {
    method: "GET",
    headers: { authorization: `Bearer ${env.data.RUNPOD_API_KEY}` },
    // Followed replies stay open as long as the user wants.
    bodyTimeout: values.follow ? 0 : 30_000,
  });
  if (reply.statusCode !== 200) {
    const text = await reply.body.text();
    throw new Error(`logs: GET ${base}/${endpointId}/logs answered ${reply.statusCode}: ${messageOf(text)}`);
  }
  const lines = createInterface({ input: reply.body, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const entry = LogEntry.safeParse(safeJson(line));
    if (!entry.success)
      throw new Error(`logs: the service sent a line that is not a log entry: ${line.slice(0, 200)}`);
    out(values.json ? JSON.stringify(entry.data) : formatEntry(entry.data));
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function messageOf(text: string): string {
  const body = safeJson(text) as { error?: unknown; message?: unknown } | undefined;
  const message = body?.error ?? body?.message;
  return typeof message === "string" ? message : text.slice(0, 300);
}
