/**
 * Sends jobs to a deployed queue endpoint with the runpodkit SDK and prints each step:
 *   1. run a job and wait for its final status,
 *   2. stream a job's output chunk by chunk,
 *   3. cancel a long job, then show that its worker is free again (the next job runs on it).
 * Written for an endpoint running the `runpodkit/stream` image (the quickstart with
 * `imageName runpodkit/stream:1.0`): it streams the words of `input.text`, or `input.count` tokens,
 * `input.delayMs` apart. Returns what it observed, so a test can assert on it.
 */
import { JobClient } from "runpodkit/sdk";
import { z } from "zod";

type Health = Awaited<ReturnType<JobClient["health"]>>;

export interface SendJobsOptions {
  apiKey: string;
  endpointId: string;
  /** The job API base, without the endpoint id (default https://api.runpod.ai/v2). */
  baseUrl?: string;
  /** Where each step is printed (default: stdout). */
  log?: (line: string) => void;
  /** Longest wait for any one job, ms (default 60 s). */
  timeoutMs?: number;
}

export interface SentJobs {
  run: { id: string; submitted: string; status: string; output: unknown; chunks: string[] };
  stream: { id: string; words: string[]; ended: boolean; status: string };
  cancel: {
    id: string;
    /** The chunk seen before cancelling: proof that the job was running. */
    firstChunk: string;
    reply: string;
    status: string;
    workerId: string | undefined;
  };
  /** A short job sent after the cancel: it runs on the cancelled job's worker, which stopped. */
  next: { id: string; status: string; workerId: string | undefined; output: unknown };
  /** The cancelled job's status once the next job finished (a cancel is final). */
  cancelledLater: string;
  health: Health;
}

/** One chunk of runpodkit/stream: `{text, index}`. */
const Token = z.object({ text: z.string(), index: z.int() });

/**
 * A job that ended without a chunk: the endpoint's worker does not stream (the quickstart's default
 * image, runpodkit/echo, answers once). Without this the steps went on and printed a cancel of a job
 * that had long completed, and exited 0.
 */
function notStreaming(jobId: string, status: string): Error {
  return new Error(
    `job ${jobId} ended ${status} without a stream chunk: this endpoint's worker does not stream. ` +
      "The jobs example is written for the runpodkit/stream image: in examples/quickstart, " +
      "`pulumi config set imageName runpodkit/stream:1.0`, then `pulumi up`",
  );
}

export const STREAM_TEXT = "the quick brown fox jumps over the lazy dog";

export async function sendJobs(options: SendJobsOptions): Promise<SentJobs> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const timeoutMs = options.timeoutMs ?? 60_000;
  const waitOptions = { timeoutMs, pollIntervalMs: 200 };
  const jobs = new JobClient({
    apiKey: options.apiKey,
    endpointId: options.endpointId,
    baseUrl: options.baseUrl,
  });
  try {
    // 1. run + waitFor: /run answers at once with the id; waitFor waits on /status-sync until a final status.
    const input = { text: "hello from runpodkit" };
    const submitted = await jobs.run({ input });
    log(`run      ${submitted.id} ${submitted.status}  input ${JSON.stringify(input)}`);
    const done = await jobs.waitFor(submitted.id, waitOptions);
    log(`waitFor  ${done.id} ${done.status}  output ${JSON.stringify(done.output)}`);
    // A streaming worker's results are its chunks (the status output aggregates them only when the
    // handler asks to): /stream hands over the buffered ones even after the job ended.
    const result: string[] = [];
    for await (const chunk of jobs.stream(submitted.id)) result.push(Token.parse(chunk.output).text);
    if (result.length === 0) throw notStreaming(submitted.id, done.status);
    log(`  its chunks: ${result.join(" ")}`);

    // 2. stream: the iterator yields chunks as the worker produces them and ends with the job.
    const streamed = await jobs.run({ input: { text: STREAM_TEXT, delayMs: 20 } });
    log(`stream   ${streamed.id} ${streamed.status}`);
    const words: string[] = [];
    for await (const chunk of jobs.stream(streamed.id, { pollIntervalMs: 100 })) {
      const token = Token.parse(chunk.output);
      words.push(token.text);
      log(`  chunk ${token.index}: ${token.text}`);
    }
    const afterStream = await jobs.status(streamed.id);
    log(`  stream ended: ${afterStream.status}`);

    // 3. cancel: a job that would stream for ~15 minutes; cancel it once it has produced a chunk.
    const long = await jobs.run({ input: { count: 9_000, delayMs: 100 } });
    log(`cancel   ${long.id} ${long.status}  (9000 tokens, 100 ms apart)`);
    let firstChunk = "";
    for await (const chunk of jobs.stream(long.id, { pollIntervalMs: 100 })) {
      firstChunk = Token.parse(chunk.output).text;
      break; // leaving the loop ends the iterator; the job keeps running
    }
    if (firstChunk === "") throw notStreaming(long.id, (await jobs.status(long.id)).status);
    log(`  running: first chunk ${firstChunk}`);
    const reply = await jobs.cancel(long.id);
    log(`  POST /cancel -> ${reply.status}`);
    const cancelled = await jobs.waitFor(long.id, waitOptions);
    log(`  status ${cancelled.status} (worker ${cancelled.workerId ?? "none"})`);

    // The worker runs one job at a time: the next job running on it shows that it dropped the old one.
    const next = await jobs.runSync({ input: { text: "after the cancel" } }, { wait: timeoutMs });
    const nextDone = next.status === "COMPLETED" ? next : await jobs.waitFor(next.id, waitOptions);
    log(`next     ${nextDone.id} ${nextDone.status} on worker ${nextDone.workerId ?? "none"}`);
    const cancelledLater = (await jobs.status(long.id)).status;
    const health = await jobs.health();
    log(`health   jobs ${JSON.stringify(health.jobs)} workers ${JSON.stringify(health.workers)}`);
    log(`         cancelled job still ${cancelledLater}`);

    return {
      run: {
        id: submitted.id,
        submitted: submitted.status,
        status: done.status,
        output: done.output,
        chunks: result,
      },
      stream: { id: streamed.id, words, ended: true, status: afterStream.status },
      cancel: {
        id: long.id,
        firstChunk,
        reply: reply.status,
        status: cancelled.status,
        workerId: cancelled.workerId,
      },
      next: {
        id: nextDone.id,
        status: nextDone.status,
        workerId: nextDone.workerId,
        output: nextDone.output,
      },
      cancelledLater,
      health,
    };
  } finally {
    await jobs.close();
  }
}
