#!/usr/bin/env node
// First: Node's module compile cache (see compile-cache.ts; safe on any Node), so what follows loads from it.
import "./compile-cache";
// Then: on an unsupported Node.js, one line naming the required version instead of a crash below.
import "../sdk/node-guard";
// Second, before the service's modules load: a lighter start (see lean-start.ts).
import "./lean-start";
import { parseArgs } from "node:util";
import { packageVersion } from "../sdk/package-manifest";
import { API_KEYS_ENV, readApiKeys, redactFurtherKey, redactKey } from "./api-keys";
import type { StoreOpenError } from "./db";
import { DEFAULT_JOB_PLANE_CONFIG } from "./jobs/config";
import { BUILTIN_HANDLERS, FALLBACK_IMAGE } from "./jobs/workers/handlers";
import { missingHandlerModule, parseHandlerFlag } from "./jobs/workers/launch";
import { LOGS_USAGE, logsCommand } from "./logs-command";
import { STORE_KEY_ENV } from "./management/store/sealing";
import { defaultDataPath } from "./service-address";

/** The most --max-workers may say: each worker is a process (a fork and ~50 MB), so a typo is refused. */
const MAX_WORKERS_LIMIT = 4096;
const MIB = 1024 * 1024;
/** The pool's smallest bound (workers/pool.ts), in MiB; the most a flag may say: 1 TiB, to refuse a typo. */
const MIN_WORKER_MEMORY_MIB = 64;
const MAX_WORKER_MEMORY_MIB = 1024 * 1024;
const USAGE = `usage: ${API_KEYS_ENV}=<k1>,<k2> runpodkit [serve] [--port <p>] [--host <address>] [--allowed-host <name> ...] [--api-key-file <file>] [--api-key <k> ...] [--data <file>|:memory:] [--handler <image>=<module-or-command> ...] [--max-workers <n>] [--worker-memory <MiB>|none]
       ${LOGS_USAGE.replace(/^usage: /, "")}
  Account keys come from ${API_KEYS_ENV} (comma-separated), --api-key-file (one key per line) or
  --api-key (visible to every user of the machine in \`ps\`); at least one is required. A key file's
  line "<further key> = <account key>" gives that account a further key (to rehearse a key rotation).
  --port: default 0, a free port (the ready line on stdout names it).
  --host: the address to listen on (default 127.0.0.1; any other is warned about, see SECURITY.md).
  --allowed-host: a further name (or address) requests may be addressed to (their Host header); repeatable.
  Bound to loopback, the service answers only localhost (and *.localhost), 127.0.0.1, [::1] and these
  (others: 421), so a web page that points its own name at 127.0.0.1 (DNS rebinding) reads nothing;
  elsewhere, any given switch that check on.
  --data: the SQLite store (default .data/runpodkit.sqlite), one service at a time; :memory: keeps nothing.
  Once listening, the service writes its URLs (never a key) to <store>.address.json, where runpodkit logs finds them.
  ${STORE_KEY_ENV}: the key sealing the store's secrets (default: the key file <store>.key, made 0600).
  --handler: runs a template's image (exact name, else without its tag) as a module (.js/.mjs/.cjs/.ts/.mts/.cts,
  relative to this directory) or a command line (run in the worker's own directory: name files by
  absolute path); repeatable. Built in: ${Object.keys(BUILTIN_HANDLERS).join(", ")}; any other image runs ${FALLBACK_IMAGE}.
  --max-workers: worker processes at once over every endpoint and account (default ${DEFAULT_JOB_PLANE_CONFIG.maxWorkers}, at most ${MAX_WORKERS_LIMIT});
  past it, further workers wait and their jobs stay IN_QUEUE.
  --worker-memory: resident memory one worker (its process group) may use, MiB (default ${(DEFAULT_JOB_PLANE_CONFIG.workerMemoryBytes ?? 0) / MIB}, at least ${MIN_WORKER_MEMORY_MIB};
  none: no bound); past it the worker is killed and its jobs FAIL.
  A flag given twice counts once, its last value (a wrapper's default, then yours), except the
  repeatable ones (--allowed-host, --api-key, --api-key-file, --handler), whose values add up.
  --version: prints the installed package's version (runpodkit <version>); --help: this text.`;
const DEFAULT_DATA = defaultDataPath();

/**
 * The CLI: `RUNPODKIT_API_KEYS=k1,k2 runpodkit [serve] --port 8080 [--data file]` (from a checkout:
 * `npm run serve -- --port 8080`) serves in the
 * foreground (keys are never printed: stderr shows each account in a redacted form);
 * `runpodkit logs <endpoint id> ...` reads an endpoint's worker logs from a running service.
 */
async function main(): Promise<void> {
  const command = process.argv[2];
  if (command === "logs") {
    const outcome = await logsCommand(process.argv.slice(3));
    if (outcome.notice) console.error(`runpodkit: ${outcome.notice}`);
    process.exitCode = outcome.exitCode;
    return;
  }
  // `runpodkit serve ...` names the default command; `runpodkit ...` alone serves as well.
  const args = process.argv.slice(command === "serve" ? 3 : 2);
  const { values } = parseFlags(args);
  if (values.help) {
    console.log(USAGE);
    return;
  }
  // Which package a project's `npx runpodkit` runs (a tarball, a registry release, a global install).
  if (values.version) {
    console.log(`runpodkit ${packageVersion()}`);
    return;
  }
  // Digits only: Number() read "" (an unset $PORT) as 0, a free port, and "0x50" or " 80" as 80.
  const port = /^\d{1,5}$/.test(values.port) ? Number(values.port) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(
      `--port: expected a whole number from 0 to 65535 (0 picks a free one), got "${values.port}"\n${USAGE}`,
    );
  const {
    keys: apiKeys,
    sameAccountKeys,
    warnings,
  } = readApiKeys({
    env: process.env[API_KEYS_ENV],
    files: values["api-key-file"],
    flags: values["api-key"],
  });
  if (apiKeys.length === 0) throw new Error(`no API key given\n${USAGE}`);
  const storeKey = process.env[STORE_KEY_ENV];
  // Read once; no child process of the service inherits them.
  delete process.env[API_KEYS_ENV];
  delete process.env[STORE_KEY_ENV];
  for (const warning of warnings) console.error(`runpodkit: warning: ${warning}`);

  // Which workers a template's imageName starts: a handler module or a command line, per image.
  const handlers = Object.fromEntries((values.handler ?? []).map(parseHandlerFlag));
  const maxWorkers = values["max-workers"] === undefined ? undefined : Number(values["max-workers"]);
  if (
    maxWorkers !== undefined &&
    (!/^\d+$/.test(values["max-workers"] ?? "") || maxWorkers < 1 || maxWorkers > MAX_WORKERS_LIMIT)
  ) {
    throw new Error(
      `--max-workers: expected a whole number from 1 to ${MAX_WORKERS_LIMIT}, got "${values["max-workers"]}"\n${USAGE}`,
    );
  }
  const memoryFlag = values["worker-memory"];
  const workerMemoryBytes =
    memoryFlag === undefined ? undefined : memoryFlag === "none" ? null : Number(memoryFlag) * MIB;
  if (
    memoryFlag !== undefined &&
    memoryFlag !== "none" &&
    (!/^\d+$/.test(memoryFlag) ||
      Number(memoryFlag) < MIN_WORKER_MEMORY_MIB ||
      Number(memoryFlag) > MAX_WORKER_MEMORY_MIB)
  ) {
    throw new Error(
      `--worker-memory: expected a whole number of MiB from ${MIN_WORKER_MEMORY_MIB} to ${MAX_WORKER_MEMORY_MIB}, or none, got "${memoryFlag}"\n${USAGE}`,
    );
  }
  for (const [image, target] of Object.entries(handlers)) {
    const missing = missingHandlerModule(target);
    if (missing) {
      throw new Error(
        `--handler ${image}=${target}: ${missing} does not exist (a module path is taken from the directory the service starts in; cmd:<command line> runs a command instead)`,
      );
    }
  }
  // Loaded for serve only: the store's node:sqlite prints Node 22's ExperimentalWarning as it loads,
  // which --help, --version and `logs` (a client of a running service) have no business printing.
  const { startService } = require("./index") as typeof import("./index");
  const service = await startService({
    apiKeys,
    sameAccountKeys,
    port,
    host: values.host,
    data: values.data,
    storeKey,
    config: {
      allowedHosts: values["allowed-host"] ?? [],
      jobs: {
        handlers,
        ...(maxWorkers === undefined ? {} : { maxWorkers }),
        ...(workerMemoryBytes === undefined ? {} : { workerMemoryBytes }),
      },
    },
  });
  // Before the ready line: a script that reads it and stops the service at once (SIGTERM) must reach
  // this handler, not Node's default, which left the store's lock and skipped the graceful close.
  const stop = (signal: string) => {
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(
          `runpodkit: error while closing on ${signal}: ${error instanceof Error ? error.message : error}`,
        );
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
  // The terminal it ran in closed (an ssh session dropped): stopped as SIGTERM stops it. Node's
  // default ended the process at once, leaving its workers' jobs unwritten, the WAL and the
  // address file behind. There is nothing to reload.
  process.once("SIGHUP", () => stop("SIGHUP"));

  console.error(`runpodkit: ${apiKeys.length} account(s): ${apiKeys.map(redactKey).join(", ")}`);
  const furtherKeys = Object.entries(sameAccountKeys);
  if (furtherKeys.length > 0) {
    const shown = furtherKeys.map(([key, of]) => redactFurtherKey(key, of));
    console.error(`runpodkit: ${furtherKeys.length} further key(s): ${shown.join(", ")}`);
  }
  // One line, so scripts can read the three base URLs.
  console.log(
    `runpodkit service ready: rest=${service.restUrl} graphql=${service.graphqlUrl} queue=${service.queueUrl}`,
  );
}

/** The serve command's flags; a word or flag it does not know is refused with the usage. */
function parseFlags(args: string[]) {
  try {
    return parseArgs({
      args,
      options: {
        port: { type: "string", default: "0" },
        host: { type: "string", default: "127.0.0.1" },
        "allowed-host": { type: "string", multiple: true },
        "api-key": { type: "string", multiple: true },
        "api-key-file": { type: "string", multiple: true },
        data: { type: "string", default: DEFAULT_DATA },
        handler: { type: "string", multiple: true },
        "max-workers": { type: "string" },
        "worker-memory": { type: "string" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean" },
      },
      strict: true,
    });
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
  }
}

/** db.ts's StoreOpenError, told by its name: importing db.ts to compare classes would load node:sqlite. */
function isStoreOpenError(error: unknown): error is StoreOpenError {
  return error instanceof Error && error.name === "StoreOpenError";
}

main().catch((error: unknown) => {
  // The store is what --data names: said so, with the reason alone (the path is in the flag).
  const message = isStoreOpenError(error)
    ? `--data ${error.path}: the store cannot be opened there: ${error.reason}`
    : error instanceof Error
      ? error.message
      : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  // What listen's errors mean for the flags that caused them.
  const hint =
    code === "EADDRINUSE"
      ? " (another process listens there: choose another --port; 0 picks a free one)"
      : code === "EADDRNOTAVAIL" || code === "ENOTFOUND" || code === "EAI_AGAIN"
        ? " (--host is an address or name of this machine to listen on, e.g. 127.0.0.1, ::1 or 0.0.0.0, without brackets or a port: the port is --port)"
        : "";
  console.error(`runpodkit: ${message}${hint}`);
  process.exit(1);
});
