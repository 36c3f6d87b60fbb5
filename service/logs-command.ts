import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { request } from "undici";
import { z } from "zod";
import { LogEntry, LogsQuery } from "../sdk/schemas/observe";
import { terminalSafe, terminalSafeJson } from "./jobs/logs/terminal";
import { defaultDataPath, readServiceAddress } from "./service-address";

export const LOGS_USAGE =
  "usage: runpodkit logs <endpoint id> [--worker <id>] [--job <id>] [--since <ms|ISO time>] [--limit <n>] [--follow] [--json] [--url <job API base> | --data <file>]\n" +
  "  prints the newest --limit kept lines (default and at most 10000), oldest first; --follow keeps printing new ones\n" +
  "  reads RUNPOD_API_KEY; the service is --url (the job API base, e.g. http://127.0.0.1:8080/v2), else RUNPOD_BASE_URL,\n" +
  "  else the service running on --data (default .data/runpodkit.sqlite: the address it wrote beside it), else http://127.0.0.1:8080/v2\n" +
  "  if a runpodkit service answers there (asked without the key first: the key is never sent to another server)";

/** Where no --url, RUNPOD_BASE_URL or running service of the store says otherwise. */
const FALLBACK_BASE_URL = "http://127.0.0.1:8080/v2";
const KEY_UNSET = "RUNPOD_API_KEY is not set: export the account's API key (one of the service's keys)";
const Env = z.object({
  // A CI secret pasted with its line end is the same key; in a header the newline fails the request
  // before it is sent, which read as "cannot reach the service".
  RUNPOD_API_KEY: z.string({ error: KEY_UNSET }).trim().min(1, KEY_UNSET),
  RUNPOD_BASE_URL: jobApiBase("RUNPOD_BASE_URL").optional(),
});
const UrlFlag = jobApiBase("--url");

/**
 * A job API base named by `source`. Only http(s): `localhost:8080` parses as a URL of the scheme
 * `localhost:`, which failed later as "Invalid URL protocol", naming neither the flag nor the fix.
 */
function jobApiBase(source: string) {
  return z.url({
    protocol: /^https?$/,
    error: `${source} is not an http(s) URL: the job API base, e.g. http://127.0.0.1:8080/v2`,
  });
}

/**
 * How the fallback address is confirmed before the key goes there: its unauthenticated
 * /v1/openapi.json names a runpodkit service (service/management/rest/openapi.ts's title). Bounded
 * in time and size: whatever listens there may be anything.
 */
const PROBE_PATH = "/v1/openapi.json";
const PROBE_TITLE = "runpodkit local service";
const PROBE_TIMEOUT_MS = 5_000;
const PROBE_MAX_BYTES = 2 * 1024 * 1024;
const OpenApiTitle = z.object({ info: z.object({ title: z.string().max(200) }) });

/** Options for tests: the address tried when nothing names the service (default http://127.0.0.1:8080/v2). */
export interface LogsOptions {
  fallbackBaseUrl?: string;
}

/** The route's largest `limit`: the CLI asks for all it may by default ("what is kept"). */
const MAX_LIMIT = 10_000;

/**
 * One entry as a line for people: time, worker, job, level, message (a traceback keeps its lines).
 * Control characters a handler printed are shown escaped, never sent to the terminal (terminal.ts).
 */
export function formatEntry(entry: LogEntry): string {
  const job = entry.requestId ? ` ${terminalSafe(entry.requestId)}` : "";
  return `${entry.time} ${terminalSafe(entry.workerId)}${job} ${terminalSafe(entry.level).padEnd(5)} ${terminalSafe(entry.message, { keepNewlines: true })}`;
}

/** `--json`: the entry as one JSON line, with what JSON leaves raw but a terminal may act on escaped. */
export function formatJson(entry: LogEntry): string {
  return terminalSafeJson(JSON.stringify(entry));
}

/** How a `runpodkit logs` run ends, other than by an error thrown. */
export interface LogsOutcome {
  /** Printed on stderr: why a followed stream ended. */
  notice?: string;
  exitCode: number;
}

/**
 * `runpodkit logs <endpoint>`: prints the endpoint's captured worker lines (filtered by worker, job,
 * time), and with --follow keeps printing new ones until interrupted; when the service ends a followed
 * stream (it stopped, or the endpoint was deleted) it says so and exits 1. The key goes in the
 * authorization header only; it is never printed.
 */
export async function logsCommand(
  args: string[],
  out: (line: string) => void = console.log,
  warn: (line: string) => void = console.error,
  options: LogsOptions = {},
): Promise<LogsOutcome> {
  const { values, positionals } = parseLogsArgs(args);
  if (values.help) {
    out(LOGS_USAGE);
    return { exitCode: 0 };
  }
  const [endpointId, ...extra] = positionals;
  if (!endpointId || extra.length > 0)
    throw new Error(`logs: exactly one endpoint id is expected\n${LOGS_USAGE}`);
  const env = Env.safeParse(process.env);
  if (!env.success) throw new Error(`logs: ${env.error.issues.map((i) => i.message).join("; ")}`);
  // The flags through the route's own query schema: a bad one is refused here, named as the flag.
  const flags = {
    worker: values.worker,
    job: values.job,
    since: values.since,
    limit: values.limit ?? String(MAX_LIMIT),
    ...(values.follow ? { follow: "1" } : {}),
  };
  const checked = LogsQuery.safeParse(flags);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new Error(
      `logs: --${String(issue?.path[0] ?? "")}: ${issue?.message ?? "not valid"}\n${LOGS_USAGE}`,
    );
  }
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(flags)) if (value !== undefined) query.set(name, value);
  const fallback = options.fallbackBaseUrl ?? FALLBACK_BASE_URL;
  const { base: given, source } = serviceBase(
    values.url,
    values.data,
    env.data.RUNPOD_BASE_URL,
    fallback,
    warn,
  );
  const base = given.replace(/\/+$/, "");
  // Nothing the user gave or trusts names this address: whatever listens there (another user's
  // process, any local server) gets the key only once it has answered as a runpodkit service.
  if (source === "fallback") {
    const origin = new URL(base).origin;
    const doubt = await notRunpodkit(origin);
    if (doubt !== null)
      throw new Error(
        `logs: RUNPOD_API_KEY was not sent to ${origin}: ${doubt}, so it is not known to be a runpodkit service (give --url <job API base> to name the service, or --data <file> for the store it was started with)`,
      );
    warn(
      `runpodkit: logs: ${origin} answers as a runpodkit service (its ${PROBE_PATH}); reading the logs there`,
    );
  }
  const url = `${base}/${encodeURIComponent(endpointId)}/logs?${query}`;
  const reply = await request(url, {
    method: "GET",
    headers: { authorization: `Bearer ${env.data.RUNPOD_API_KEY}` },
    // Followed replies stay open as long as the user wants.
    bodyTimeout: values.follow ? 0 : 30_000,
  }).catch((error: unknown) => {
    throw new Error(
      `logs: cannot reach the service at ${base}: ${messageOfError(error)} (is it running? --url or RUNPOD_BASE_URL names its job API base; without them, --data names its store)`,
    );
  });
  if (reply.statusCode !== 200) {
    const text = await reply.body.text();
    const hint =
      reply.statusCode === 401
        ? " (RUNPOD_API_KEY must hold one of this service's account keys)"
        : reply.statusCode === 404 && source !== undefined && !/\/v2$/.test(new URL(base).pathname)
          ? // The ready line's queue= and runpodkit:queueUrl are the host without /v2: the likeliest paste.
            ` (${source} is the job API base, which ends in /v2: ${base}/v2)`
          : "";
    throw new Error(
      `logs: GET ${base}/${endpointId}/logs answered ${reply.statusCode}: ${messageOf(text)}${hint}`,
    );
  }
  let last: LogEntry | null = null;
  try {
    const lines = createInterface({ input: reply.body, crlfDelay: Number.POSITIVE_INFINITY });
    for await (const line of lines) {
      if (!line.trim()) continue;
      const entry = LogEntry.safeParse(safeJson(line));
      if (!entry.success)
        throw new Error(
          `logs: the service sent a line that is not a log entry: ${terminalSafe(line.slice(0, 200))}`,
        );
      last = entry.data;
      out(values.json ? formatJson(entry.data) : formatEntry(entry.data));
    }
  } catch (error) {
    if (!values.follow || (error instanceof Error && error.message.startsWith("logs: "))) throw error;
    return { notice: ended(base, last, messageOfError(error)), exitCode: 1 };
  }
  // A read without --follow ends when the kept lines are sent; a followed one only when the service ends it.
  return values.follow ? { notice: ended(base, last, null), exitCode: 1 } : { exitCode: 0 };
}

/**
 * The job API base: --url, else RUNPOD_BASE_URL, else the address the service running on the store
 * (--data, else the CLI's default) wrote beside it, else 8080 with a word on how to point elsewhere.
 */
function serviceBase(
  url: string | undefined,
  data: string | undefined,
  envUrl: string | undefined,
  fallback: string,
  warn: (line: string) => void,
): { base: string; source?: "--url" | "RUNPOD_BASE_URL" | "fallback" } {
  if (url !== undefined) {
    if (data !== undefined) throw new Error(`logs: give --url or --data, not both\n${LOGS_USAGE}`);
    const checked = UrlFlag.safeParse(url);
    if (!checked.success) throw new Error(`logs: ${checked.error.issues[0]?.message}\n${LOGS_USAGE}`);
    return { base: checked.data, source: "--url" };
  }
  if (envUrl !== undefined && data === undefined) return { base: envUrl, source: "RUNPOD_BASE_URL" };
  const lookup = readServiceAddress(data ?? defaultDataPath());
  if ("address" in lookup) return { base: `${lookup.address.queueUrl}/v2` };
  warn(
    `runpodkit: logs: ${lookup.missing}; trying ${fallback} if a runpodkit service answers there (give --url <job API base> for another service, or --data <file> for the store the service was started with)`,
  );
  return { base: fallback, source: "fallback" };
}

/**
 * Null when `origin` answers GET /v1/openapi.json (no key sent) as a runpodkit service; else what it
 * did instead. Never throws.
 */
async function notRunpodkit(origin: string): Promise<string | null> {
  try {
    const reply = await request(`${origin}${PROBE_PATH}`, {
      method: "GET",
      headersTimeout: PROBE_TIMEOUT_MS,
      bodyTimeout: PROBE_TIMEOUT_MS,
    });
    if (reply.statusCode !== 200) {
      await reply.body.dump();
      return `GET ${PROBE_PATH} answered ${reply.statusCode}`;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of reply.body) {
      size += (chunk as Buffer).length;
      if (size > PROBE_MAX_BYTES) {
        reply.body.destroy();
        return `GET ${PROBE_PATH} answered more than ${PROBE_MAX_BYTES} bytes`;
      }
      chunks.push(chunk as Buffer);
    }
    const spec = OpenApiTitle.safeParse(safeJson(Buffer.concat(chunks).toString("utf8")));
    return spec.success && spec.data.info.title.startsWith(PROBE_TITLE)
      ? null
      : `GET ${PROBE_PATH} did not answer a runpodkit service's API description`;
  } catch (error) {
    return `it cannot be reached (${messageOfError(error)})`;
  }
}

/** What to tell the user when the service ended a followed stream, and how to read on. */
function ended(base: string, last: LogEntry | null, error: string | null): string {
  const how = error
    ? `the connection to ${base} broke (${error})`
    : `the service at ${base} ended the stream`;
  const resume = last
    ? `; the last line printed was seq ${last.seq} at ${last.time} (--since ${last.time} reads on from there)`
    : "";
  return `logs: following stopped: ${how}: it stopped or restarted, or the endpoint was deleted${resume}`;
}

/** The flags; an unknown one or a missing value is refused with the usage. */
function parseLogsArgs(args: string[]) {
  try {
    return parseArgs({
      args,
      options: {
        worker: { type: "string" },
        job: { type: "string" },
        since: { type: "string" },
        limit: { type: "string" },
        follow: { type: "boolean", short: "f", default: false },
        json: { type: "boolean", default: false },
        url: { type: "string" },
        data: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new Error(`logs: ${messageOfError(error)}\n${LOGS_USAGE}`);
  }
}

function messageOfError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
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
