import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { running, type StartOptions, start } from "./index";
import { loadHint } from "./load-hint";
import { KILL_OWN_TREE_SOURCE, killOwnTree } from "./tree";

/**
 * Entry of a worker process the service starts for a handler module: `main <module>`. The module
 * either calls `serverless.start(...)` itself, or exports `handler` (or a default function) and
 * optionally `config` (the other start options), and this starts it.
 */
async function main(): Promise<void> {
  // Started by the service with an IPC channel: when the service goes, so does the worker.
  if (process.send) {
    process.once("disconnect", serviceGone);
    // stdout and stderr are pipes only the service reads. A write once it is dead fails with EPIPE,
    // and that error, unhandled, crashed the worker before it read that its IPC channel closed (the
    // runtime's "Finished." line, written 20 ms after a job, did when the service died just then):
    // neither "disconnect" nor the watchdog, which dies with the process, then ended the group, and
    // what the handler started outlived the service for good.
    process.stdout.on("error", serviceGone);
    process.stderr.on("error", serviceGone);
    watchParent();
  }
  const target = process.argv[2];
  if (!target) throw new Error("usage: main <handler module>");
  const path = isAbsolute(target) ? target : resolve(target);
  const mod = await load(path);
  const started = running();
  if (started) return started;
  const exported =
    handlerOf(mod) ?? handlerOf(mod.default) ?? handlerOf((mod.default as Record<string, unknown>)?.default);
  if (typeof exported !== "function") {
    throw new Error(`${target} neither starts a worker nor exports a handler function`);
  }
  const config = (mod.config ?? (mod.default as Record<string, unknown>)?.config ?? {}) as Omit<
    StartOptions,
    "handler"
  >;
  await start({ ...config, handler: exported as StartOptions["handler"] });
}

/** Imports the handler module; a failure Node's loader gives is rethrown with what to change (load-hint.ts). */
async function load(path: string): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    const hint = loadHint(
      error,
      path,
      process.execArgv.some((arg) => TSX_LOADER.test(arg)),
    );
    if (hint === null) throw new UnexplainedLoadError(path, error);
    throw new HandlerLoadError(
      `the handler module ${path} did not load: ${error instanceof Error ? error.message : String(error)}\n${hint}`,
      { cause: error },
    );
  }
}

/** A handler module that did not load, with what to change; `cause`: what Node threw. */
class HandlerLoadError extends Error {}

/** A handler module that did not load for a reason load-hint.ts does not know; `thrown`: what Node threw. */
class UnexplainedLoadError extends Error {
  readonly thrown: unknown;
  constructor(modulePath: string, thrown: unknown) {
    super(`the handler module ${modulePath} did not load`);
    this.thrown = thrown;
  }
}

/** The `--import` the service gives a worker when it found tsx (launch.ts). */
const TSX_LOADER = /[\\/]tsx[\\/]/;

/**
 * A handler that loops on the CPU blocks this process's event loop, so "disconnect" is never seen if
 * the service dies. A watchdog thread, which such a loop cannot block, ends the process once its
 * parent is gone. It checks once a second by sleeping in Atomics.wait, never through its own event
 * loop: a setInterval there woke a whole timer and microtask cycle each second, a third of an idle
 * worker's CPU (bench/tools/idle-cpu.ts); a wait costs one futex wake-up and a getppid.
 */
function watchParent(): void {
  const watchdog = new Worker(
    `${KILL_OWN_TREE_SOURCE}
     const parent = process.ppid;
     const cell = new Int32Array(new SharedArrayBuffer(4));
     for (;;) {
       Atomics.wait(cell, 0, 0, 1000);
       if (process.ppid !== parent) {
         killOwnTree();
         try { process.kill(-process.pid, "SIGKILL"); } catch {}
         process.kill(process.pid, "SIGKILL");
       }
     }`,
    { eval: true },
  );
  watchdog.unref();
}

/** The service is gone (or can no longer hear the worker): the worker ends, with its group. */
function serviceGone(): void {
  killOwnGroup();
  process.exit(0);
}

/**
 * The service is gone: what the handler started goes too. The service starts a worker as the leader of
 * its own process group (launch.ts), so the group holds the handler's children; they would outlive
 * the service otherwise, as nothing else is left to end them. Not a leader (run by hand): no such group.
 */
function killOwnGroup(): void {
  // What left the group (setsid, a detached spawn) carries the worker's mark: it goes first, as
  // nothing is left to end it after this process (tree.ts).
  killOwnTree();
  try {
    process.kill(-process.pid, "SIGKILL");
  } catch {
    // No group of this id: nothing to end.
  }
}

/** The worker finished (SIGTERM or refresh): let the process end. */
function done(): void {
  process.removeAllListeners("disconnect");
  process.disconnect?.();
}

/** `handler`, or a default export that is a function (CommonJS interop nests it one level). */
function handlerOf(value: unknown): unknown {
  if (typeof value === "function") return value;
  if (typeof value !== "object" || value === null) return undefined;
  const record = value as Record<string, unknown>;
  return typeof record.handler === "function" ? record.handler : undefined;
}

main().then(done, (error: unknown) => {
  if (error instanceof UnexplainedLoadError && isCompileError(error.thrown)) {
    // Thrown again uncaught, so Node prints it as it does for a program it runs: with the file, the
    // line and a caret under the fault. Its stack has only Node's loader frames: printed here, it
    // named no file at all. Node then exits with code 1.
    process.stderr.write(`runpodkit worker: ${error.message}:\n`);
    setImmediate(() => {
      throw error.thrown;
    });
    return;
  }
  process.stderr.write(`runpodkit worker: ${describe(error)}\n`);
  process.exit(1);
});

/** A SyntaxError of Node's compiler (not one the module's code threw): its stack names no file of code. */
function isCompileError(error: unknown): error is SyntaxError {
  if (!(error instanceof SyntaxError)) return false;
  const frames = (error.stack ?? "").split("\n").filter((line) => /^\s+at /.test(line));
  return frames.every((frame) => /\(node:|^\s+at node:/.test(frame));
}

/** An error's stack; with a hint (load), the hint's message first, then the stack of what Node threw. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error instanceof HandlerLoadError && error.cause instanceof Error)
    return `${error.message}\n${error.cause.stack ?? ""}`;
  if (error instanceof UnexplainedLoadError)
    return `${error.message}:\n${error.thrown instanceof Error ? (error.thrown.stack ?? error.thrown.message) : String(error.thrown)}`;
  return error.stack ?? error.message;
}
