// First: on a Node older than engines.node, one line instead of undici failing to load (worker.ts needs it).
import "../../../../sdk/node-guard";
import { existsSync, readFileSync } from "node:fs";
import { isStream, resultBody } from "./result";
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
  if (!env) {
    process.exitCode = await runLocalTest(options);
    return;
  }
  const worker = new QueueWorker(env, options);
  const onSignal = () => worker.shutdown();
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  await worker.run();
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
}

export const serverless = { start };

/** Local test mode: one job from --test_input or test_input.json, result printed, exit code 0/1. */
async function runLocalTest(options: StartOptions): Promise<number> {
  const flag = process.argv.indexOf("--test_input");
  const text =
    flag >= 0
      ? process.argv[flag + 1]
      : existsSync("test_input.json")
        ? readFileSync("test_input.json", "utf8")
        : null;
  if (!text) {
    process.stderr.write(
      "RUNPOD_WEBHOOK_GET_JOB is not set and there is no --test_input or test_input.json\n",
    );
    return 1;
  }
  const given = JSON.parse(text) as Partial<WorkerJob>;
  const job: WorkerJob = { ...given, id: given.id ?? "local_test", input: given.input ?? null };
  try {
    const signal = new AbortController().signal;
    let value = await options.handler(job, { signal, progress: () => {} });
    if (isStream(value)) {
      const chunks: unknown[] = [];
      for await (const chunk of value) chunks.push(chunk);
      value = chunks;
    }
    const body = resultBody(value);
    process.stdout.write(`${JSON.stringify(body)}\n`);
    return body.error ? 1 : 0;
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  }
}
