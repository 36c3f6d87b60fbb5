import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobClient, type JobClientOptions } from "../../sdk/jobs";
import { type Harness, KEY, startHarness } from "../service/jobs/harness";

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
    const { id } = await jobs.run({ input: {} });
    const stream = jobs.stream(id, { pollIntervalMs: 20 });
    const first = stream.next().then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
    // Real time, for the client's real-time budget (undici's timers): well past 100 ms (and past
    // undici's coarse timer tick), while the service still holds the poll.
    await sleep(1_500);
    await jobs.cancel(id);
    const outcome = await first;
    expect(outcome).not.toHaveProperty("error");
    expect(outcome).toEqual({ result: { done: true, value: "CANCELLED" } });
  });

  it("accepts its own timeoutMs (a budget on top of the hold) and refuses a bad one", async () => {
    const jobs = clientFor("runpodkit/echo", 0);
    const { id } = await jobs.run({ input: {} });
    const stream = jobs.stream(id, { timeoutMs: 50 });
    const first = stream.next();
    await sleep(1_500);
    await jobs.cancel(id);
    expect(await first).toEqual({ done: true, value: "CANCELLED" });
    await expect(jobs.stream(id, { timeoutMs: -1 }).next()).rejects.toMatchObject({
      code: "VALIDATION",
      operation: "jobs.stream",
      field: "timeoutMs",
    });
  });
});
