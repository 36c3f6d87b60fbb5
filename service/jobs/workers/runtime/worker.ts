import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import { Agent, type Dispatcher, interceptors } from "undici";
import { type HttpReply, NEVER_SENT_CODES, parseRetryAfter } from "../../../../sdk/dispatch-reply";
import { exchange } from "./http";
import { logLine } from "./log";
import {
  describeValue,
  exceptionBody,
  isStream,
  jsonlessKind,
  messageOf,
  RUNTIME_VERSION,
  resultBody,
  serialise,
  stackOf,
  toJson,
  tracebackOf,
} from "./result";
import type { HandlerContext, JobResultBody, StartOptions, WorkerJob } from "./types";

/** The worker's addresses and key, from the environment the platform sets (docs/worker-protocol.md, section 1). */
export interface WorkerEnv {
  workerId: string;
  key: string;
  takeUrl: string;
  doneTemplate: string;
  streamTemplate: string;
  pingUrl: string | null;
  pingIntervalMs: number;
}

export function workerEnvFrom(env: NodeJS.ProcessEnv): WorkerEnv | null {
  const take = env.RUNPOD_WEBHOOK_GET_JOB;
  if (!take) return null;
  const workerId = env.RUNPOD_POD_ID || `local-${process.pid}`;
  const ping = env.RUNPOD_WEBHOOK_PING;
  return {
    workerId,
    key: env.RUNPOD_AI_API_KEY ?? "",
    takeUrl: take.replaceAll("$ID", workerId),
    doneTemplate: (env.RUNPOD_WEBHOOK_POST_OUTPUT ?? "").replaceAll("$RUNPOD_POD_ID", workerId),
    streamTemplate: (env.RUNPOD_WEBHOOK_POST_STREAM ?? "").replaceAll("$RUNPOD_POD_ID", workerId),
    pingUrl: ping && env.RUNPOD_AI_API_KEY ? ping.replaceAll("$RUNPOD_POD_ID", workerId) : null,
    pingIntervalMs: Math.max(1_000, Number(env.RUNPOD_PING_INTERVAL ?? 10_000) || 10_000),
  };
}

/**
 * Connections a worker keeps to the service: the job-take and job-stop long-polls hold one each,
 * pings one now and then, results and stream chunks share the rest (more wait their turn).
 */
const WORKER_CONNECTIONS = 16;

/** Replies to a post that are tried again: 500, 502 and 504 as the real library retries them, and 503. */
const RETRIED_POST_STATUSES = new Set([500, 502, 503, 504]);
const NEVER_SENT = new Set(NEVER_SENT_CODES);
/** The wait before a failed post's second attempt: the real library's first backoff. */
const POST_FIRST_RETRY_MS = 2_000;
/** How long a 503's Retry-After may make a post wait, and the wait without one. */
const REFUSED_POST_MAX_WAIT_MS = 30_000;
const REFUSED_POST_WAIT_MS = 1_000;

/** The largest batch_size job-take-batch takes (sdk/schemas/job.ts), so the most jobs a worker runs at once. */
const MAX_CONCURRENCY = 1_000;

/** Appends query parameters whether or not the template already has a `?`. */
function withParams(url: string, params: Record<string, string>): string {
  const query = new URLSearchParams(params).toString();
  return `${url}${url.includes("?") ? "&" : "?"}${query}`;
}

interface Running {
  abort: AbortController;
}

/**
 * A queue worker speaking the real service's worker protocol: long-polls job-take (or job-take-batch),
 * runs the handler, posts progress and results to job-done and chunks to job-stream, listens on
 * job-stop, and pings. It runs unchanged against this service or the real one.
 */
export class QueueWorker {
  readonly #env: WorkerEnv;
  readonly #options: StartOptions;
  readonly #running = new Map<string, Running>();
  /**
   * Jobs whose handler is done and whose result is being posted. They no longer take a slot (the
   * next job-take goes out in parallel with the result) but the worker still holds them: they count
   * for job_in_progress and are listed in pings until the post ends.
   */
  readonly #posting = new Set<string>();
  /** Jobs with a progress post in flight, and the newest value to post after it (see #progress). */
  readonly #progressing = new Map<string, { next: string | null }>();
  /** Polls (job-take, job-stop, ping): never retried, so they skip the retry handler. */
  readonly #http: Agent;
  /** Results and chunks (POST) tried again after their first attempt failed (see #post), same connections. */
  readonly #retryPosts: Dispatcher;
  /** The job-done URL template with its isStream parameter, by isStream; "$ID" stands for the job. */
  readonly #doneUrls: { false: string; true: string };
  /** The job-stream URL template with isStream=false; "$ID" stands for the job. */
  readonly #streamUrl: string;
  /** Stops taking jobs. */
  readonly #shutdown = new AbortController();
  /** Ends the stop channel and pings, once the jobs in hand are done. */
  readonly #closing = new AbortController();
  #concurrency = 1;
  /** Problems with `concurrency` already logged. */
  readonly #concurrencyWarned = new Set<string>();
  #slotFreed: (() => void) | null = null;
  /** The single job-take URL, by job_in_progress ("0" / "1"): the same two strings every time. */
  readonly #takeOne: { "0": string; "1": string };
  readonly #authorization: Record<string, string>;
  readonly #postHeaders: Record<string, string>;

  constructor(env: WorkerEnv, options: StartOptions) {
    this.#env = env;
    this.#options = options;
    this.#authorization = { authorization: env.key };
    this.#postHeaders = { authorization: env.key, "content-type": "application/json" };
    this.#takeOne = {
      "0": withParams(env.takeUrl, { job_in_progress: "0" }),
      "1": withParams(env.takeUrl, { job_in_progress: "1" }),
    };
    this.#doneUrls = {
      false: withParams(env.doneTemplate, { isStream: "false" }),
      true: withParams(env.doneTemplate, { isStream: "true" }),
    };
    this.#streamUrl = withParams(env.streamTemplate, { isStream: "false" });
    // Results, progress and stream chunks are retried on 5xx only, like the real library (3
    // attempts, 2 s then 4 s apart); never on 4xx. A 503 is the service refusing for now (its memory
    // budget is used up, with Retry-After): that is retried far longer, waiting as Retry-After says
    // (at most 30 s), so a result or a chunk is not lost to a moment of full memory; the job stays
    // this worker's (listed in pings) meanwhile, and a stream waits for its refused chunk before the
    // next one. A post's first attempt goes to the pool as it is (#post); one that fails so takes
    // this retry path after the first wait, with the attempts left: undici's retry interceptors build
    // their handlers for every call they see, and nearly every post succeeds at once.
    // A bounded pool: posts wait for one of its connections rather than each opening its own. With
    // none, a burst of results from 32 workers opened connections faster than the service accepted
    // them, connects timed out and the results were dropped (bench/tools/burst-stuck.ts).
    this.#http = new Agent({ keepAliveTimeout: 60_000, connections: WORKER_CONNECTIONS });
    this.#retryPosts = this.#http.compose(
      interceptors.retry({
        maxRetries: 1,
        minTimeout: 2 * POST_FIRST_RETRY_MS,
        methods: ["POST"],
        statusCodes: [500, 502, 504],
        // A post that never reached the service (its connection was not set up) is sent again.
        errorCodes: [...NEVER_SENT_CODES],
        throwOnError: false,
      }),
      interceptors.retry({
        maxRetries: 599,
        minTimeout: REFUSED_POST_WAIT_MS,
        maxTimeout: REFUSED_POST_MAX_WAIT_MS,
        methods: ["POST"],
        statusCodes: [503],
        errorCodes: [],
        throwOnError: false,
      }),
    );
  }

  /** Runs until shutdown() (or SIGTERM) and the jobs in hand are finished. */
  async run(): Promise<void> {
    const loops = [this.#takeLoop(), this.#stopLoop(), this.#pingLoop()];
    await loops[0];
    while (this.#running.size > 0 || this.#posting.size > 0) await this.#nextSlot();
    this.#closing.abort();
    await Promise.allSettled(loops);
    await this.#http.close();
  }

  /** The job this worker runs, when it runs exactly one (lines printed now belong to it). */
  soleJob(): string | null {
    if (this.#running.size !== 1) return null;
    for (const id of this.#running.keys()) return id;
    return null;
  }

  /** Stops taking jobs; running ones finish and post their results. */
  shutdown(): void {
    this.#shutdown.abort();
    this.#slotFreed?.();
  }

  async #takeLoop(): Promise<void> {
    const signal = this.#shutdown.signal;
    while (!signal.aborted) {
      this.#concurrency = this.#nextConcurrency();
      const needed = this.#concurrency - this.#running.size;
      if (needed <= 0) {
        await this.#nextSlot();
        continue;
      }
      const inProgress = this.#running.size > 0 || this.#posting.size > 0 ? "1" : "0";
      const url =
        needed === 1
          ? this.#takeOne[inProgress]
          : withParams(this.#env.takeUrl.replaceAll("/job-take/", "/job-take-batch/"), {
              batch_size: String(needed),
              job_in_progress: inProgress,
            });
      try {
        const { status, text } = await exchange(this.#http, url, {
          method: "GET",
          headers: this.#authorization,
          signal,
          timeoutMs: 90_000,
        });
        if (status === 429) await sleep(5_000, undefined, { signal }).catch(() => {});
        else if (status === 200 && text) {
          for (const job of jobsOf(text)) this.#start(job);
          // The next take waits a turn of the event loop: a handler that answers at once has posted
          // its result by then, so the service reads the result (a /runsync's client waits on it)
          // before the next take, not after it (bench/HISTORY.md, "Ninth pass").
          await nextTurn();
        } else if (status !== 204 && status !== 400) await pause(signal);
      } catch {
        await pause(signal);
      }
    }
  }

  /**
   * The concurrency for the next take, from `concurrency` (a number, or a function of the current
   * value). A value that is not a number of at least 1 (a function that returns nothing, NaN, a
   * string) or a function that throws keeps the current value and is logged once: taken as it
   * was, it asked for `batch_size=NaN`, which the platform refuses, so the worker polled in a
   * tight loop and its jobs stayed IN_QUEUE. A fraction is rounded down; above the platform's
   * largest batch (Infinity) it is that batch.
   */
  #nextConcurrency(): number {
    const modifier = this.#options.concurrency;
    let value: unknown;
    try {
      value = typeof modifier === "function" ? modifier(this.#concurrency) : (modifier ?? 1);
    } catch (error) {
      // Logged once per message: the stack differs between calls (the first take is not awaited yet).
      const once = messageOf(error);
      return this.#warnConcurrency(`concurrency threw ${tracebackOf(error)}`, this.#concurrency, once);
    }
    if (typeof value !== "number" || Number.isNaN(value)) {
      return this.#warnConcurrency(
        `concurrency ${typeof modifier === "function" ? "returned" : "is"} ${typeof value === "string" ? JSON.stringify(value) : describeValue(value)}, not a number of at least 1`,
        this.#concurrency,
      );
    }
    if (value > MAX_CONCURRENCY) {
      return this.#warnConcurrency(
        `concurrency ${value} is above ${MAX_CONCURRENCY}, the largest batch a worker may take`,
        MAX_CONCURRENCY,
      );
    }
    return Math.max(1, Math.floor(value));
  }

  /**
   * Logs a wrong concurrency (once per problem, at most 16: the modifier is asked before every
   * take) and returns `kept`, the concurrency used instead.
   */
  #warnConcurrency(problem: string, kept: number, key = problem): number {
    if (!this.#concurrencyWarned.has(key) && this.#concurrencyWarned.size < 16) {
      this.#concurrencyWarned.add(key);
      logLine("ERROR", `${problem}: the worker takes ${kept} job(s) at a time`);
    }
    return kept;
  }

  async #stopLoop(): Promise<void> {
    if (!this.#env.takeUrl.includes("/job-take/")) return;
    const url = this.#env.takeUrl.replaceAll("/job-take/", "/job-stop/");
    // Keeps listening after shutdown while jobs still run, so they can still be stopped.
    const signal = this.#closing.signal;
    while (!signal.aborted) {
      const asked = Date.now();
      try {
        const { status, text } = await exchange(this.#http, url, {
          method: "GET",
          headers: this.#authorization,
          signal,
          timeoutMs: 90_000,
        });
        const ids = status === 200 ? stopIdsOf(text) : [];
        for (const id of ids) this.#stop(id);
        if (status === 429) await sleep(5_000, undefined, { signal }).catch(() => {});
        else if (ids.length === 0 && Date.now() - asked < 200) await pause(signal);
      } catch {
        await pause(signal);
      }
    }
  }

  async #pingLoop(): Promise<void> {
    const { pingUrl, pingIntervalMs } = this.#env;
    if (!pingUrl) return;
    const signal = this.#closing.signal;
    while (!signal.aborted) {
      const params: Record<string, string> = { runpod_version: RUNTIME_VERSION };
      const held = [...this.#running.keys(), ...this.#posting];
      if (held.length > 0) params.job_id = held.join(",");
      try {
        await exchange(this.#http, withParams(pingUrl, params), {
          method: "GET",
          headers: this.#authorization,
          timeoutMs: 2 * pingIntervalMs,
        });
      } catch {
        // A missed ping is only logged by the real library; the loop carries on.
      }
      await sleep(pingIntervalMs, undefined, { signal }).catch(() => {});
    }
  }

  #start(job: WorkerJob): void {
    if (this.#running.has(job.id)) return;
    const running: Running = { abort: new AbortController() };
    this.#running.set(job.id, running);
    void this.#runJob(job, running).finally(() => {
      this.#running.delete(job.id);
      this.#posting.delete(job.id);
      this.#slotFreed?.();
      if (this.#options.refreshWorker) this.shutdown();
    });
  }

  /** The handler is done: its slot frees now while the result is posted. */
  #handOver(jobId: string): void {
    if (!this.#running.delete(jobId)) return;
    this.#posting.add(jobId);
    this.#slotFreed?.();
  }

  /** A stopped job posts nothing; the handler sees its signal aborted. */
  #stop(jobId: string): void {
    const running = this.#running.get(jobId);
    if (!running) return;
    running.abort.abort(new Error(`job ${jobId} was stopped by the platform`));
    this.#running.delete(jobId);
    this.#slotFreed?.();
  }

  async #runJob(job: WorkerJob, running: Running): Promise<void> {
    const signal = running.abort.signal;
    const context: HandlerContext = {
      signal,
      progress: (value) => this.#progress(job.id, value),
    };
    let body: JobResultBody;
    let streamed = false;
    logLine("INFO", "Started.", job.id);
    try {
      const result = await this.#options.handler(job, context);
      if (isStream(result)) {
        streamed = true;
        body = await this.#streamOut(job, result, signal);
      } else {
        body = resultBody(result);
      }
    } catch (error) {
      // A handler that rejects with its aborted signal's reason was stopped, not failed: no traceback.
      if (!signal.aborted) logLine("ERROR", `Captured Handler Exception\n${tracebackOf(error)}`, job.id);
      body = streamed
        ? { error: `handler: ${describeValue(error)}` }
        : exceptionBody(error, this.#env.workerId);
    }
    if (signal.aborted) {
      logLine("INFO", "Stopped by the platform.", job.id);
      return;
    }
    logLine(
      body.error === undefined ? "INFO" : "ERROR",
      body.error === undefined ? "Finished." : "Failed.",
      job.id,
    );
    if (this.#options.refreshWorker) body.stopPod = true;
    else this.#handOver(job.id);
    await this.#post(this.#doneUrl(job.id, streamed), serialise(body), job.id);
  }

  /**
   * A progress update, posted in the background. A value JSON cannot carry (a BigInt, a circular
   * reference) is not sent, and the job goes on: serialised as a result, it became a job-done error
   * without the IN_PROGRESS status, which failed the job while its handler still ran.
   *
   * One post per job at a time, the newest value next: progress is only the job's output while it
   * runs, so a value overtaken by a newer one before it could be sent is of no use. Each call was a
   * post of its own: a handler reporting each of 100,000 steps queued 100,000 posts (750 MB in the
   * worker) ahead of its result, which reached the service 30 s after the handler returned, and
   * posts racing over several connections could leave an older value shown last. Once the handler is
   * done nothing more is sent: its result replaces progress.
   */
  #progress(jobId: string, value: unknown): void {
    if (!this.#running.has(jobId)) return;
    const json = toJson({ status: "IN_PROGRESS", output: value });
    if ("reason" in json) {
      logLine(
        "ERROR",
        `progress update not sent: its value is not JSON-serialisable (${json.reason})`,
        jobId,
      );
      return;
    }
    const sending = this.#progressing.get(jobId);
    if (sending) {
      sending.next = json.text;
      return;
    }
    const state: { next: string | null } = { next: null };
    this.#progressing.set(jobId, state);
    void (async () => {
      let text: string | null = json.text;
      while (text !== null) {
        await this.#post(this.#doneUrl(jobId, false), text, jobId);
        text = this.#running.has(jobId) ? state.next : null;
        state.next = null;
      }
      this.#progressing.delete(jobId);
    })();
  }

  async #streamOut(
    job: WorkerJob,
    chunks: AsyncIterable<unknown> | Iterable<unknown>,
    signal: AbortSignal,
  ): Promise<JobResultBody> {
    const all: unknown[] = [];
    let index = 0;
    try {
      for await (const yielded of chunks) {
        if (signal.aborted) break;
        const error =
          typeof yielded === "object" && yielded !== null
            ? (yielded as { error?: unknown }).error
            : undefined;
        // As the Python library's str(error): the value itself, not "[object Object]".
        if (error) return { error: describeValue(error) };
        // A yield with no value is Python's None: a null chunk (JSON would drop the key, and the
        // platform the chunk).
        const chunk = yielded === undefined ? null : yielded;
        const kind = jsonlessKind(chunk);
        const json = kind ? { reason: `it is ${kind}` } : toJson({ output: chunk });
        if ("reason" in json) {
          // Posted as it was, the chunk was dropped without a word and the job COMPLETED without it.
          const message = `stream chunk ${index} is not JSON-serialisable: ${json.reason}`;
          logLine("ERROR", message, job.id);
          return { error: `handler: ${message}` };
        }
        await this.#post(this.#streamUrlOf(job.id), json.text, job.id);
        if (this.#options.returnAggregateStream) all.push(chunk);
        index++;
      }
    } catch (error) {
      if (signal.aborted) return { output: all };
      logLine("ERROR", `Captured Handler Exception\n${tracebackOf(error)}`, job.id);
      return { error: `handler: ${messageOf(error)} \ntraceback: ${stackOf(error)}` };
    }
    return { output: all };
  }

  #doneUrl(jobId: string, isStreamed: boolean): string {
    return (isStreamed ? this.#doneUrls.true : this.#doneUrls.false).replaceAll("$ID", jobId);
  }

  #streamUrlOf(jobId: string): string {
    return this.#streamUrl.replaceAll("$ID", jobId);
  }

  /**
   * One POST to the platform, with the retry policy above: its first attempt straight to the pool,
   * a failed one waits as the policy says and the retry path makes the attempts left. An answer
   * that is still not a success once the retries are spent (a 4xx, or a 5xx for longer than they
   * last) drops what was posted, as the real library does, and says so in the job's log: a dropped
   * stream chunk never reaches the client's /stream, and the stream goes on with the next one.
   */
  async #post(url: string, body: string, jobId: string): Promise<void> {
    try {
      const request = { method: "POST", body, headers: this.#postHeaders } as const;
      const first = await exchange(this.#http, url, request).catch((error: unknown) => {
        if (NEVER_SENT.has((error as { code?: unknown } | null)?.code as string)) return null;
        throw error;
      });
      let status = first?.status ?? 0;
      if (first === null || RETRIED_POST_STATUSES.has(first.status)) {
        await sleep(firstRetryWait(first));
        status = (await exchange(this.#retryPosts, url, request)).status;
      }
      if (status >= 300) logLine("ERROR", `Failed to return job results. | HTTP ${status}`, jobId);
    } catch (error) {
      // In the job's log, as the answers above: on stderr it named no job (a chunk too large for
      // the platform, whose connection closes on it, showed only "write EPIPE").
      logLine("ERROR", `Failed to return job results. | ${String(error)}`, jobId);
    }
  }

  #nextSlot(): Promise<void> {
    return new Promise((resolve) => {
      this.#slotFreed = () => {
        this.#slotFreed = null;
        resolve();
      };
    });
  }
}

/** The wait before a failed post's second attempt (`reply` null: the post never reached the service). */
function firstRetryWait(reply: HttpReply | null): number {
  if (reply?.status !== 503) return POST_FIRST_RETRY_MS;
  const retryAfter = parseRetryAfter(reply.headers["retry-after"]);
  return Math.min(retryAfter ?? REFUSED_POST_WAIT_MS, REFUSED_POST_MAX_WAIT_MS);
}

function jobsOf(text: string): WorkerJob[] {
  try {
    const value: unknown = JSON.parse(text);
    const list = Array.isArray(value) ? value : [value];
    return list.filter(
      (job): job is WorkerJob =>
        typeof job === "object" && job !== null && typeof job.id === "string" && "input" in job,
    );
  } catch {
    return [];
  }
}

function stopIdsOf(text: string): string[] {
  try {
    const value = JSON.parse(text) as { jobsToStop?: unknown };
    return Array.isArray(value?.jobsToStop) ? value.jobsToStop.filter((id) => typeof id === "string") : [];
  } catch {
    return [];
  }
}

/** After an unexpected reply, wait a second instead of polling in a tight loop. */
const pause = (signal: AbortSignal) => sleep(1_000, undefined, { signal }).catch(() => {});
