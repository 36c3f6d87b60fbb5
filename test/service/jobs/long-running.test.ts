import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { ACCOUNT, eventually, type Harness, startHarness } from "./harness";

const MINUTE = 60_000;

/*
 * A service left running for days (a team's shared dev service, a CI farm's): endpoints come and
 * go, workers start and stop, time moves on. What the service keeps for an endpoint is released
 * with it, and what it keeps over time is bounded, on the service's clock (a ManualClock here).
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** What the job plane keeps per endpoint, counted from its parts. */
function perEndpoint(harness: Harness) {
  const { plane } = harness;
  return {
    book: plane.book.endpointCount,
    takerLines: plane.dispatcher.takerLines,
    logs: plane.logs.endpointCount,
    series: plane.series.endpointCount,
    pool: plane.pool.endpointEntries,
    rateWindows: plane.limiter.size,
  };
}

const NOTHING = { book: 0, takerLines: 0, logs: 0, series: 0, pool: 0, rateWindows: 0 };

describe("an endpoint created and deleted again and again", () => {
  it("leaves nothing of it behind: queues, lines of polls, logs, chart, worker history, rate windows", async () => {
    const clock = new ManualClock();
    h = await startHarness({ clock });
    const harness = h;
    expect(perEndpoint(harness)).toEqual(NOTHING);
    for (let round = 0; round < 3; round++) {
      const endpoint = harness.endpoint("runpodkit/echo", { workersMin: 0, workersMax: 1, idleTimeout: 5 });
      const run = await harness.call("POST", `/v2/${endpoint.id}/run`, { body: { input: { round } } });
      expect(run.status).toBe(200);
      const id = (run.body as { id: string }).id;
      // The worker process runs in real time; the clock moves the scaler and the worker's cold start on.
      const done = await eventually(async () => {
        await clock.advance(100);
        const status = await harness.call("GET", `/v2/${endpoint.id}/status/${id}`);
        const body = status.body as { status: string; output?: unknown };
        return body.status === "COMPLETED" ? body : undefined;
      });
      expect(done.output).toEqual({ round });
      for (const path of ["health", "logs", "metrics", "jobs", "workers"]) {
        expect((await harness.call("GET", `/v2/${endpoint.id}/${path}`)).status).toBe(200);
      }
      harness.management.endpoints.update(ACCOUNT, endpoint.id, { workersMin: 0, workersMax: 0 });
      harness.management.endpoints.delete(ACCOUNT, endpoint.id);
      await eventually(async () => {
        await clock.advance(100);
        return harness.plane.pool.workersOf(endpoint.id).length === 0 &&
          harness.plane.dispatcher.sessions(endpoint.id).length === 0
          ? true
          : undefined;
      });
      // Its worker's exit came after the endpoint's deletion: nothing may be made for it again.
      await eventually(async () => {
        await clock.advance(100);
        const kept = perEndpoint(harness);
        return kept.book === 0 && kept.takerLines === 0 && kept.logs === 0 && kept.series === 0
          ? true
          : undefined;
      });
    }
    // Two rate windows on (10 s each) and a sweep later, the endpoints' rate windows are gone too.
    await clock.advance(30_000);
    expect(perEndpoint(harness)).toEqual(NOTHING);
    expect(await harness.call("GET", `/v2/nope/health`)).toMatchObject({ status: 404 });
    expect(perEndpoint(harness)).toEqual(NOTHING);
  }, 60_000);
});

describe("an endpoint whose workers never start, deleted", () => {
  it("leaves no start back-off or env warning behind", async () => {
    const clock = new ManualClock();
    h = await startHarness({ clock, config: { handlers: { "acme/broken": "/nonexistent/handler.js" } } });
    const harness = h;
    // LD_PRELOAD is dropped from a worker's env (and warned about once per endpoint version).
    const endpoint = harness.endpoint("acme/broken", {
      workersMin: 1,
      workersMax: 1,
      env: { LD_PRELOAD: "x" },
    });
    // Its worker dies before its first request: the endpoint backs off before the next start.
    await eventually(async () => {
      await clock.advance(100);
      return harness.plane.pool.mayStart(endpoint.id) ? undefined : true;
    });
    expect(harness.plane.pool.endpointEntries).toBe(1);
    harness.management.endpoints.update(ACCOUNT, endpoint.id, { workersMin: 0, workersMax: 0 });
    harness.management.endpoints.delete(ACCOUNT, endpoint.id);
    await eventually(async () => {
      await clock.advance(100);
      return harness.plane.pool.workersOf(endpoint.id).length === 0 ? true : undefined;
    });
    await eventually(async () => {
      await clock.advance(100);
      return harness.plane.pool.endpointEntries === 0 ? true : undefined;
    });
  }, 60_000);
});

describe("finished jobs over days", () => {
  it("results leave /status and the store at their retention, in batches that follow each other at once", async () => {
    const clock = new ManualClock();
    h = await startHarness({
      clock,
      config: { rateLimits: { enabled: false, requestsPerWorker: 1, limits: {} } },
    });
    const harness = h;
    // No managed worker: this test is the worker (hand-run, over the worker protocol).
    const endpoint = harness.endpoint("runpodkit/echo", { workersMin: 0, workersMax: 0 });
    const total = 2_500; // more than one sweep's batch (2,000)
    const ids: string[] = [];
    for (let i = 0; i < total; i += 100) {
      const replies = await Promise.all(
        Array.from({ length: 100 }, (_, k) =>
          harness.call("POST", `/v2/${endpoint.id}/run`, { body: { input: { n: i + k } } }),
        ),
      );
      for (const reply of replies) ids.push((reply.body as { id: string }).id);
    }
    for (let left = total; left > 0; ) {
      const take = await harness.call("GET", `/v2/${endpoint.id}/job-take-batch/w1?batch_size=1000`);
      const jobs = take.body as { id: string; input: unknown }[];
      for (let i = 0; i < jobs.length; i += 100) {
        await Promise.all(
          jobs.slice(i, i + 100).map((job) =>
            harness.call("POST", `/v2/${endpoint.id}/job-done/w1/${job.id}`, {
              body: { output: job.input },
            }),
          ),
        );
      }
      left -= jobs.length;
    }
    const health = async () =>
      ((await harness.call("GET", `/v2/${endpoint.id}/health`)).body as { jobs: { completed: number } }).jobs;
    expect((await health()).completed).toBe(total);
    await clock.advance(30 * MINUTE - 1);
    expect((await harness.call("GET", `/v2/${endpoint.id}/status/${ids[0]}`)).body).toMatchObject({
      status: "COMPLETED",
      output: { n: 0 },
    });
    // Past the retention, the one sweep within an interval deletes every one of them (a batch, then
    // the next at once; not one batch an interval).
    await clock.advance(harness.plane.config.sweepIntervalMs);
    expect((await health()).completed).toBe(0);
    expect(harness.plane.store.counts()).toEqual([]);
    expect((await harness.call("GET", `/v2/${endpoint.id}/status/${ids[total - 1]}`)).status).toBe(404);
  }, 120_000);
});
