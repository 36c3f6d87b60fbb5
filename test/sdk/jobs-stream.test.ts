import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobFailedError, type RunpodkitError } from "../../sdk/errors";
import { JobClient, type JobClientOptions } from "../../sdk/jobs";
import type { ManualClock } from "../../service/clock";
import { type Harness, KEY, startHarness } from "../service/jobs/harness";
import { ProtocolWorker } from "../service/jobs/protocol-worker";

/**
 * JobClient.stream against the whole service on a ManualClock: the service's /stream hold (10 s)
 * ends only when the test says, so what a held poll does to the client's budget is seen without
 * waiting the hold out.
 */

let h: Harness;
const clients: JobClient[] = [];

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  for (const client of clients) await client.close();
  await h?.close();
});

function clientFor(image: string, workersMax: number, options: Partial<JobClientOptions> = {}) {
  const endpoint = h.endpoint(image, { workersMax });
  const client = new JobClient({ apiKey: KEY, endpointId: endpoint.id, baseUrl: `${h.url}/v2`, ...options });
  clients.push(client);
  return client;
}

describe("JobClient.stream and the client's timeoutMs", () => {
  it("a poll the service holds is not timed out by a client timeoutMs shorter than the hold", async () => {
    // No worker: the job stays queued, so the service holds each /stream poll (its clock never moves).
    const jobs = clientFor("runpodkit/echo", 0, { timeoutMs: 100 });
    // The run and the cancel get a budget of their own: 100 ms timed a run out once on a loaded machine.
    const { id } = await jobs.run({ input: {} }, { timeoutMs: 10_000 });
    const stream = jobs.stream(id, { pollIntervalMs: 20 });
    const first = stream.next().then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    // Real time, for the client's real-time budget (undici's timers): well past 100 ms (and past
    // undici's coarse timer tick), while the service still holds the poll.
    await sleep(1_500);
    await jobs.cancel(id, { timeoutMs: 10_000 });
    // The poll ended with the cancel, not with a TimeoutError.
    const { error } = (await first) as { error: RunpodkitError };
    expect(error).toBeInstanceOf(JobFailedError);
    expect(error.toJSON()).toMatchObject({ operation: "jobs.stream", jobId: id, jobStatus: "CANCELLED" });
  });

  it("accepts its own timeoutMs (a budget on top of the hold) and refuses a bad one", async () => {
    const jobs = clientFor("runpodkit/echo", 0);
    const { id } = await jobs.run({ input: {} });
    const stream = jobs.stream(id, { timeoutMs: 50 });
    const first = stream.next().catch((error: unknown) => error);
    await sleep(1_500);
    await jobs.cancel(id);
    expect(await first).toMatchObject({ code: "JOB_FAILED", jobStatus: "CANCELLED" });
    await expect(jobs.stream(id, { timeoutMs: -1 }).next()).rejects.toMatchObject({
      code: "VALIDATION",
      operation: "jobs.stream",
      field: "timeoutMs",
    });
  });
});

/** The README's loop: what it collected, and how it ended. */
async function consume(stream: AsyncIterable<{ output: unknown }>) {
  const outputs: unknown[] = [];
  try {
    for await (const chunk of stream) outputs.push(chunk.output);
    return { outputs, error: undefined };
  } catch (error) {
    return { outputs, error: error as RunpodkitError };
  }
}

describe("JobClient.stream ends by throwing on every final status but COMPLETED", () => {
  it("TIMED_OUT: the chunks, then a JobFailedError with the job id and the final status", async () => {
    const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const worker = new ProtocolWorker(h, endpoint.id, "w-stream-timeout");
    const jobs = new JobClient({ apiKey: KEY, endpointId: endpoint.id, baseUrl: `${h.url}/v2` });
    clients.push(jobs);
    const { id } = await jobs.run({ input: {}, policy: { executionTimeout: 5_000 } });
    expect((await worker.take()).body).toMatchObject({ id });
    await worker.streamChunk(id, { text: "one" });
    await worker.streamChunk(id, { text: "two" });
    const streamed = consume(jobs.stream(id, { pollIntervalMs: 20 }));
    await (h.clock as ManualClock).advance(5_000);
    const { outputs, error } = await streamed;
    expect(outputs).toEqual([{ text: "one" }, { text: "two" }]);
    expect(error).toBeInstanceOf(JobFailedError);
    expect(error?.toJSON()).toMatchObject({
      code: "JOB_FAILED",
      operation: "jobs.stream",
      jobId: id,
      jobStatus: "TIMED_OUT",
    });
    expect(error?.message).toBe(
      `jobs.stream: job ${id} TIMED_OUT: job exceeded its execution timeout of 5000 ms`,
    );
    expect((await jobs.status(id)).status).toBe("TIMED_OUT");
  });

  it("CANCELLED while running: the chunks so far, then a JobFailedError naming CANCELLED", async () => {
    const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const worker = new ProtocolWorker(h, endpoint.id, "w-stream-cancel");
    const jobs = new JobClient({ apiKey: KEY, endpointId: endpoint.id, baseUrl: `${h.url}/v2` });
    clients.push(jobs);
    const { id } = await jobs.run({ input: {} });
    await worker.take();
    await worker.streamChunk(id, { text: "first" });
    const streamed = consume(jobs.stream(id, { pollIntervalMs: 20 }));
    await jobs.cancel(id);
    const { outputs, error } = await streamed;
    expect(outputs).toEqual([{ text: "first" }]);
    expect(error).toBeInstanceOf(JobFailedError);
    expect(error?.toJSON()).toMatchObject({ jobId: id, jobStatus: "CANCELLED" });
    expect(error?.message).toBe(`jobs.stream: job ${id} CANCELLED`);
  });
});
