import type { ChildProcess } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { dirname, extname, isAbsolute, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parse, quote } from "shell-quote";
import { BUILTIN_HANDLERS, FALLBACK_IMAGE } from "./handlers";
import { KILL_OWN_TREE_SOURCE } from "./runtime/tree";

/**
 * How a template's image runs here: a JS/TS handler module in the worker runtime, or a command line
 * (for example a Python handler using the real runpod library). Both get the same worker-protocol
 * environment, so the service treats them alike.
 */
export type LaunchSpec = { kind: "module"; module: string } | { kind: "command"; command: string };

const MODULE_EXTENSIONS = new Set([".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"]);

/**
 * Reads one handler target: `module:<path>` or `cmd:<command line>` explicitly; otherwise a single
 * word ending in .js/.mjs/.cjs/.ts/.mts/.cts is a module and anything else a command line; so is
 * a target with a space that, whole, names such a file (relative to `baseDir`, the service's directory).
 */
export function launchSpecOf(target: string, baseDir = process.cwd()): LaunchSpec {
  const value = target.trim();
  if (value.startsWith("module:")) return { kind: "module", module: value.slice("module:".length).trim() };
  if (value.startsWith("cmd:")) return { kind: "command", command: value.slice("cmd:".length).trim() };
  if (!MODULE_EXTENSIONS.has(extname(value))) return { kind: "command", command: value };
  if (!/\s/.test(value)) return { kind: "module", module: value };
  // `--handler "acme/w=./my handlers/w.mjs"`: read as a command line, the worker's shell ran `./my`
  // ("not found") at every start, and the start-up warning said to quote it, which ran the module
  // file itself as a program. A command ending in a module's name (`node w.js`) names no such file.
  if (isFile(resolve(baseDir, value))) return { kind: "module", module: value };
  return { kind: "command", command: value };
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** Parses the CLI flag value `<image>=<module-or-command>` (split at the first `=`). */
export function parseHandlerFlag(flag: string): [image: string, target: string] {
  const at = flag.indexOf("=");
  if (at <= 0 || at === flag.length - 1) {
    throw new Error(`--handler expects <image>=<module-or-command>, got "${flag}"`);
  }
  return [flag.slice(0, at).trim(), flag.slice(at + 1).trim()];
}

/**
 * The file a module target names (relative to `baseDir`, as workers load it) when no file is there;
 * null when it exists or the target is a command line.
 */
export function missingHandlerModule(target: string | LaunchSpec, baseDir = process.cwd()): string | null {
  const spec = typeof target === "string" ? launchSpecOf(target, baseDir) : target;
  if (spec.kind !== "module") return null;
  const path = resolve(baseDir, spec.module);
  return existsSync(path) ? null : path;
}

/**
 * Files a command line names by a path relative to `baseDir` (words such as `handler.py` or
 * `src/main.py` that are files there): a command worker runs in its own directory, where they are
 * not. Words with a variable (`$PWD/...`, expanded by the worker's shell) or an option are left out.
 */
export function relativeFilesIn(command: string, baseDir = process.cwd()): string[] {
  const VARIABLE = "\0";
  const files: string[] = [];
  for (const word of parse(command, () => VARIABLE)) {
    if (typeof word !== "string" || word.includes(VARIABLE) || isAbsolute(word) || /^[-~]/.test(word))
      continue;
    try {
      if (statSync(resolve(baseDir, word)).isFile()) files.push(word);
    } catch {
      // Not a file there.
    }
  }
  return files;
}

/** The most words of a command line taken as one path split at its spaces: bounds the checks. */
const MAX_SPLIT_WORDS = 8;

/**
 * Paths with a space that a command line gives unquoted (`node /home/jo doe/w.mjs`, as
 * `"python3 $PWD/h.py"` is when the directory holds one): the worker's shell splits them into words,
 * the first of which names nothing. Each such run of words whose join, relative to `baseDir`, exists,
 * with that path. Words with a variable or an operator between them are not joined.
 */
export function splitPathsIn(
  command: string,
  baseDir = process.cwd(),
): Array<{ words: string; path: string }> {
  const VARIABLE = "\0";
  const words = parse(command, () => VARIABLE);
  const exists = (word: string) => existsSync(resolve(baseDir, word));
  const found: Array<{ words: string; path: string }> = [];
  for (let i = 0; i < words.length; i++) {
    const first = words[i];
    if (typeof first !== "string" || first.includes(VARIABLE) || /^-/.test(first) || exists(first)) continue;
    for (let j = i + 1; j < words.length && j < i + MAX_SPLIT_WORDS; j++) {
      const run = words.slice(i, j + 1);
      if (run.some((w) => typeof w !== "string" || w.includes(VARIABLE))) break;
      const joined = run.join(" ");
      if (exists(joined)) {
        found.push({ words: joined, path: resolve(baseDir, joined) });
        i = j;
        break;
      }
    }
  }
  return found;
}

/** The image name without its tag or digest: `repo/name:1.0` and `repo/name@sha256:..` -> `repo/name`. */
export function imageBase(imageName: string): string {
  const noDigest = imageName.split("@")[0] ?? imageName;
  const slash = noDigest.lastIndexOf("/");
  const colon = noDigest.lastIndexOf(":");
  return colon > slash ? noDigest.slice(0, colon) : noDigest;
}

export interface ResolvedLaunch {
  spec: LaunchSpec;
  /** True when the image was unknown and runs the echo handler instead. */
  fallback: boolean;
}

/**
 * Maps images to launch specs: the configured `handlers` first (exact name, then without tag), then
 * the built-in `runpodkit/*` handlers; any other image runs the echo handler, with a warning once.
 */
export class Launcher {
  readonly #handlers: Map<string, LaunchSpec>;
  readonly #warned = new Set<string>();
  readonly #warn: (message: string) => void;
  readonly #baseDir: string;

  constructor(
    handlers: Readonly<Record<string, string>>,
    warn: (message: string) => void,
    baseDir = process.cwd(),
  ) {
    this.#warn = warn;
    this.#baseDir = baseDir;
    this.#handlers = new Map(
      Object.entries(handlers).map(([image, target]) => [image, launchSpecOf(target, baseDir)]),
    );
    // Paths that cannot work, said at start rather than by workers failing over and over.
    for (const [image, spec] of this.#handlers) {
      const missing = missingHandlerModule(spec, baseDir);
      if (missing)
        warn(`handler of image "${image}": ${missing} does not exist; its workers fail until it does`);
      if (spec.kind !== "command") continue;
      // The fixes quote the path: the directory the service starts in may hold a space.
      for (const file of relativeFilesIn(spec.command, baseDir)) {
        warn(
          `handler of image "${image}": the command names ${file} by a relative path, but a command runs in its worker's own directory, where there is no such file: name it ${quote([resolve(baseDir, file)])} (in your shell, --handler "${image}=${spec.command.replace(file, `'$PWD/${file}'`)}")`,
        );
      }
      for (const { words, path } of splitPathsIn(spec.command, baseDir)) {
        warn(
          `handler of image "${image}": the command names ${path} unquoted, and its shell splits the path at the space (its workers would be given ${words.split(" ")[0]}): quote it in the command line, --handler "${image}=${spec.command.replace(words, quote([path]))}"`,
        );
      }
    }
  }

  resolve(imageName: string): ResolvedLaunch {
    const configured = this.#handlers.get(imageName) ?? this.#handlers.get(imageBase(imageName));
    if (configured) return { spec: this.#absolute(configured), fallback: false };
    const builtin = BUILTIN_HANDLERS[imageBase(imageName)];
    if (builtin) return { spec: { kind: "module", module: builtin }, fallback: false };
    if (!this.#warned.has(imageName)) {
      this.#warned.add(imageName);
      this.#warn(
        `no handler is configured for image "${imageName}": its workers run ${FALLBACK_IMAGE} (configure one with --handler ${imageName}=<module-or-command>)`,
      );
    }
    return { spec: { kind: "module", module: BUILTIN_HANDLERS[FALLBACK_IMAGE] as string }, fallback: true };
  }

  /**
   * Starts a worker process for the spec with the given environment, in its own directory. Its
   * stdout and stderr are pipes: the pool reads them into the worker's logs.
   */
  spawn(
    spec: LaunchSpec,
    env: Record<string, string>,
    cwd: string,
    limits: { heapBytes: number | null } = { heapBytes: null },
  ): ChildProcess {
    // node:child_process loads with the first worker, not at start.
    const { spawn } = process.getBuiltinModule("node:child_process");
    const stdio = "pipe";
    if (spec.kind === "module") {
      // V8's own default (a share of the machine's memory, ~4.5 GB on 24 GB) let a JS-heap leak grow
      // far past the worker's memory bound before the watch of its resident memory saw it.
      const heap =
        limits.heapBytes === null
          ? []
          : [`--max-old-space-size=${Math.max(1, Math.floor(limits.heapBytes / (1024 * 1024)))}`];
      const args = [...heap, ...pnpArgs(), ...loaderArgs(spec.module), RUNTIME_MAIN, spec.module];
      return spawn(process.execPath, args, {
        env,
        cwd,
        // Its own process group, as a command's: what the handler spawns (a model server, ffmpeg) is
        // in it, and goes with the worker (WorkerPool kills the group when the worker exits, the
        // runtime when the service dies). In the service's group such children outlived the worker,
        // and the service, for good. One that leaves the group (setsid, detached) is found by the
        // worker's mark in its environment instead (runtime/tree.ts). (On Windows, where process groups are not this, detached
        // would only give each worker a console window of its own.)
        detached: process.platform !== "win32",
        // The IPC channel lets the worker notice when the service dies, and exit.
        stdio: ["ignore", stdio, stdio, "ipc"],
      });
    }
    // A small Node guard runs the command line: in its own process group (so that signalling the
    // worker reaches all the command started), and with an IPC channel to the service, so that the
    // whole group dies with the service, even when the service is killed with SIGKILL.
    return spawn(process.execPath, ["-e", COMMAND_GUARD, spec.command], {
      env,
      cwd,
      detached: true,
      stdio: ["ignore", stdio, stdio, "ipc"],
    });
  }

  #absolute(spec: LaunchSpec): LaunchSpec {
    if (spec.kind !== "module" || isAbsolute(spec.module)) return spec;
    return { kind: "module", module: resolve(this.#baseDir, spec.module) };
  }
}

/**
 * The guard of a command worker (`node -e COMMAND_GUARD <command line>`), the leader of the worker's
 * process group. It runs the command line in a shell in the same group and passes its exit status on.
 * A stop signal from the service reaches the whole group; the guard waits for the command. When the
 * service is gone (its IPC channel closes, or the guard's parent changes) it SIGKILLs the whole group,
 * itself included, and first what the command started outside the group (runtime/tree.ts, by the worker's
 * mark): a command worker never outlives the service. When the command ends by itself (a
 * crash, os._exit), what it left running in the group (the Python library's heartbeat process, a
 * server it started) is SIGKILLed before the guard passes the status on, as the real platform tears
 * down the whole container: read from /proc on Linux; elsewhere the group gets SIGTERM, which the
 * guard ignores.
 */
export const COMMAND_GUARD = `
const { spawn } = require("node:child_process");
const { readdirSync, readFileSync } = require("node:fs");
${KILL_OWN_TREE_SOURCE}
const killGroup = () => { try { killOwnTree(); process.kill(-process.pid, "SIGKILL"); } finally { process.exit(1); } };
const groupMembers = () => {
  const members = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const stat = readFileSync("/proc/" + entry + "/stat", "utf8");
      // After "(comm) ": state, ppid, pgrp.
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) === process.pid) members.push(pid);
    } catch {}
  }
  return members;
};
const killLeftovers = () => {
  try {
    for (const pid of groupMembers()) try { process.kill(pid, "SIGKILL"); } catch {}
  } catch {
    try { process.kill(-process.pid, "SIGTERM"); } catch {}
  }
};
process.once("disconnect", killGroup);
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) killGroup(); }, 500).unref();
const passed = ["SIGTERM", "SIGINT", "SIGHUP"];
for (const signal of passed) process.on(signal, () => {});
const child = spawn(process.argv[1], { shell: true, stdio: "inherit" });
child.once("error", (error) => {
  process.stderr.write("runpodkit: command worker could not start: " + error.message + "\\n");
  process.exit(127);
});
child.once("exit", (code, signal) => {
  killLeftovers();
  if (signal) {
    for (const s of passed) process.removeAllListeners(s);
    process.kill(process.pid, signal);
  }
  process.exit(code === null ? 1 : code);
});
`;

const RUNTIME_MAIN = join(__dirname, "runtime", `main${extname(__filename)}`);

const TS_EXTENSIONS = new Set([".ts", ".mts", ".cts"]);

/**
 * Under Yarn Plug'n'Play (`yarn runpodkit`) this package and its dependencies sit in zip archives only
 * PnP's runtime reads, and a worker gets no NODE_OPTIONS (environment.ts): without the same runtime the
 * service runs with (the project's .pnp.cjs, and its ESM loader beside it), a worker could not load
 * even the runtime's main and died at every start. These are the operator's files, not an account's.
 */
function pnpArgs(): string[] {
  if (!(process.versions as Record<string, string | undefined>).pnp) return [];
  let pnpFile: string;
  try {
    pnpFile = require.resolve("pnpapi");
  } catch {
    return [];
  }
  const loader = join(dirname(pnpFile), ".pnp.loader.mjs");
  return [
    "--require",
    pnpFile,
    ...(existsSync(loader) ? ["--experimental-loader", pathToFileURL(loader).href] : []),
  ];
}

/**
 * TypeScript (the runtime from sources, or a user's .ts handler) loads through tsx when there is one:
 * the handler's own project's first (a user's devDependency; this package does not ship tsx), then
 * one this package resolves. Without it Node's own type stripping runs it (runtime/load-hint.ts says
 * what that refuses).
 */
function loaderArgs(module: string): string[] {
  if (!TS_EXTENSIONS.has(extname(__filename)) && !TS_EXTENSIONS.has(extname(module))) return [];
  for (const from of [dirname(module), __dirname]) {
    try {
      return ["--import", pathToFileURL(require.resolve("tsx", { paths: [from] })).href];
    } catch {
      // Not installed there.
    }
  }
  return [];
}
