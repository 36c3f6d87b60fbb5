import { describe, expect, it } from "vitest";
import { RateLimitedError, TimeoutError } from "../../sdk/errors";
import { JobClient } from "../../sdk/jobs";
import { json, startScriptedServer } from "./scripted-server";
import { closeAfterEach, failure } from "./support";

const KEY = "rpa_OUTAGEKEY0123456789abcdef";
const cleanup = closeAfterEach();

describe("waitFor through 429s", () => {
  it("waits a 429's Retry-After before polling again, and times out naming it as the cause", async () => {
    // A rate limit longer than the client lets its HTTP layer wait (maxRetryAfterMs 0) goes back to waitFor.
    const server = await startScriptedServer((_hit, res) =>
      json(res, 429, { error: "slow down" }, { "retry-after": "5" }),
    );
    const jobs = new JobClient({
      apiKey: KEY,
      endpointId: "ep",
      baseUrl: `${server.url}/v2`,
      retries: 0,
      retry: { maxRetryAfterMs: 0 },
    });
    cleanup.push(
      () => server.close(),
      () => jobs.close(),
    );
    const error = await failure(jobs.waitFor("job-1", { timeoutMs: 1_000, pollIntervalMs: 10 }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.toJSON()).toMatchObject({ operation: "jobs.waitFor", jobId: "job-1", code: "TIMEOUT" });
    expect(error.cause).toBeInstanceOf(RateLimitedError);
    expect(error.message).toContain("the last polls failed: jobs.waitFor: slow down (HTTP 429)");
    // One poll: the next would have come 5 s later, past the wait's end (not every 10 ms).
    expect(server.hits).toHaveLength(1);
  });
});

describe("waitFor against a service that never answers", () => {
  it("ends at its timeoutMs with a TimeoutError naming the job, not at a held call's longer budget", async () => {
    // A held call's budget is its hold plus the client's timeoutMs (60 s here): it must stay within the wait.
    const server = await startScriptedServer(() => undefined);
    const jobs = new JobClient({
      apiKey: KEY,
      endpointId: "ep",
      baseUrl: `${server.url}/v2`,
      timeoutMs: 60_000,
    });
    cleanup.push(
      () => server.close(),
      () => jobs.close({ force: true }),
    );
    const error = await failure(jobs.waitFor("job-2", { timeoutMs: 3_000, maxOutageMs: 0 }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.toJSON()).toMatchObject({ operation: "jobs.waitFor", jobId: "job-2", code: "TIMEOUT" });
    expect(server.hits[0]?.url).toMatch(/\/status-sync\/job-2\?wait=\d+$/);
  }, 15_000);
});
