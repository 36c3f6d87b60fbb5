import { describe, expect, it } from "vitest";
import { RateLimitedError, TimeoutError } from "../../sdk/errors";
import { JobClient } from "../../sdk/jobs";
import { ManualClock } from "../../service/clock";
import { json, startScriptedServer } from "./scripted-server";
import { closeAfterEach, failure, stepClock } from "./support";

const KEY = "rpa_OUTAGEKEY0123456789abcdef";
const cleanup = closeAfterEach();

describe("waitFor through 429s", () => {
  it("waits a 429's Retry-After before polling again, and times out naming it as the cause", async () => {
    // A rate limit longer than the client lets its HTTP layer wait (maxRetryAfterMs 0) goes back to
    // waitFor, whose pauses and deadline run on the client's clock: the test moves it 10 ms a step.
    const server = await startScriptedServer((_hit, res) =>
      json(res, 429, { error: "slow down" }, { "retry-after": "5" }),
    );
    const clock = new ManualClock();
    const jobs = new JobClient({
      clock,
      apiKey: KEY,
      endpointId: "ep",
      baseUrl: `${server.url}/v2`,
      retries: 0,
      retry: { maxRetryAfterMs: 0 },
    });
    cleanup.push(
      () => server.close(),
      () => jobs.close({ force: true }),
    );
    let settled = false;
    const waiting = failure(jobs.waitFor("job-1", { timeoutMs: 12_000, pollIntervalMs: 10 })).finally(() => {
      settled = true;
    });
    // The next poll comes the 429's 5 s later, not pollIntervalMs (10 ms) nor the outage pause (250 ms).
    expect(await stepClock(clock, 10, () => server.hits.length > 1 || settled)).toBe(5_000);
    // Then every 5 s until the deadline (12 s): at 0, 5 and 10 s.
    expect(await stepClock(clock, 10, () => settled)).toBe(7_000);
    const error = await waiting;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.toJSON()).toMatchObject({ operation: "jobs.waitFor", jobId: "job-1", code: "TIMEOUT" });
    expect(error.cause).toBeInstanceOf(RateLimitedError);
    expect(error.message).toContain("not finished within 12000 ms");
    expect(error.message).toContain("the last polls failed: jobs.waitFor: slow down (HTTP 429)");
    // A held call refused with a 429 is not held again within a hold's length (90 s): /status is polled.
    expect(server.hits.map((hit) => hit.url.replace(/\?.*$/, ""))).toEqual([
      "/v2/ep/status-sync/job-1",
      "/v2/ep/status/job-1",
      "/v2/ep/status/job-1",
    ]);
  });
});

describe("waitFor against a service that never answers", () => {
  it("ends at its timeoutMs with a TimeoutError naming the job, not at a held call's longer budget", async () => {
    // A held call's budget is its hold plus the client's timeoutMs (60 s here): it must stay within the wait.
    // On real time (3 s): what ends this wait is the held call's HTTP attempt, whose budget (cut to
    // the wait's remainder) is a native timer of the HTTP layer, not the job client's clock.
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
