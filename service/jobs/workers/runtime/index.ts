// First: on a Node older than engines.node, one line instead of undici failing to load (worker.ts needs it).
import "../../../../sdk/node-guard";
import { existsSync, readFileSync } from "node:fs";
import { logLine } from "./log";
import { isStream, resultBody, serialise, tracebackOf } from "./result";
import type { StartOptions, WorkerJob } from "./types";
import { QueueWorker, workerEnvFrom } from "./worker";

export type { Handler, HandlerContext, StartOptions, WorkerJob } from "./types";

/**
 * The worker runtime, usable on its own: a module calls `serverless.start({ handler })` (as Python
 * workers call `runpod.serverless.start`), and the process then works as a queue worker of the
 * endpoint named by the RUNPOD_WEBHOOK_* environment, here or on the real service. Without that
 * environment it runs one local test job (`--test_input '<json>'` or ./test_input.json) and exits.
 */

// One marker per process, on globalThis: the service's launcher must know whether the user's
// module started the worker itself, even if it imported the runtime through another path.
const STARTED = Symbol.for("runpodkit.worker.started");
type Marked = typeof globalThis & { [STARTED]?: Promise<void> };

/** The running worker of this process, if a module started one. */
export function running(): Promise<void> | undefined {
  return (globalThis as Marked)[STARTED];
}

/** Starts the worker of this process (once; later calls return the same run). */
export function start(options: StartOptions): Promise<void> {
  const marked = globalThis as Marked;
  marked[STARTED] ??= run(options);
  return marked[STARTED];
}

async function run(options: StartOptions): Promise<void> {
  const env = workerEnvFrom(process.env);
  // --test_input selects local test mode even with the platform's environment set, as in the
  // Python library (WORKER-PROTOCOL section 13): a worker's own shell may well have it exported.
  if (!env || process.argv.includes("--test_input")) {
    process.exitCode = await runLocalTest(options);
    return;
  }
  const worker = new QueueWorker(env, options);
  const onSignal = () => worker.shutdown();
  // A promise a handler let reject unhandled (a fire-and-forget call) ended the whole process by
  // Node's default: the job was lost, run again up to its retries on fresh workers, then FAILED as
  // "worker lost", the cause only in the logs. As in the Python library (asyncio logs a task's
  // exception nobody retrieved), it is logged, in the job's log while one job runs, and the
  // worker goes on.
  const onRejection = (reason: unknown) =>
    logLine(
      "ERROR",
      `Unhandled promise rejection (the worker goes on)\n${tracebackOf(reason)}`,
      worker.soleJob(),
    );
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  process.on("unhandledRejection", onRejection);
  await worker.run();
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
  process.off("unhandledRejection", onRejection);
}

export const serverless = { start };

/** Local test mode: one job from --test_input or test_input.json, result printed, exit code 0/1. */
async function runLocalTest(options: StartOptions): Promise<number> {
  const flag = process.argv.indexOf("--test_input");
  const source = flag >= 0 ? "--test_input" : "test_input.json";
  const text =
    flag >= 0
      ? process.argv[flag + 1]
      : existsSync("test_input.json")
        ? readFileSync("test_input.json", "utf8")
        : null;
  if (!text) {
    process.stderr.write(
      flag >= 0
        ? "--test_input needs a JSON job after it, e.g. --test_input '{\"input\": {}}'\n"
        : "RUNPOD_WEBHOOK_GET_JOB is not set and there is no --test_input or test_input.json\n",
    );
    return 1;
  }
  let given: Partial<WorkerJob>;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw new Error("not a JSON object");
    given = parsed as Partial<WorkerJob>;
  } catch (error) {
    // One line naming where the job came from, not an unhandled rejection's stack.
    process.stderr.write(
      `${source} is not a JSON job object ({"input": ...}): ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 1;
  }
  const job: WorkerJob = { ...given, id: given.id ?? "local_test", input: given.input ?? null };
  try {
    const signal = new AbortController().signal;
    let value = await options.handler(job, { signal, progress: () => {} });
    if (isStream(value)) {
      const chunks: unknown[] = [];
      for await (const chunk of value) chunks.push(chunk);
      value = chunks;
    }
    // serialise: an output JSON cannot carry is the job's error, as on a platform.
    const line = serialise(resultBody(value));
    process.stdout.write(`${line}\n`);
    return (JSON.parse(line) as { error?: unknown }).error ? 1 : 0;
  } catch (error) {
    process.stderr.write(`${tracebackOf(error)}\n`);
    return 1;
  }
}
