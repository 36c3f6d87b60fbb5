import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { ServiceError } from "../../../service/errors";
import { DEFAULT_RATE_LIMIT_OPTIONS, RateLimiter } from "../../../service/jobs/client/rate-limit";
import { RATE_LIMITED_OPERATIONS, RATE_LIMITS } from "../../../service/jobs/policy";
import { eventually, type Harness, startHarness } from "./harness";

const refused = (fn: () => unknown): ServiceError => {
  try {
    fn();
  } catch (error) {
    if (error instanceof ServiceError) return error;
    throw error;
  }
  throw new Error("expected RATE_LIMITED");
};

/** Each row of the spec's rate-limit table: requests per 10 s, and requests in flight. */
describe("rate limits per endpoint and operation", () => {
  it.each(RATE_LIMITED_OPERATIONS.map((op) => [op, RATE_LIMITS[op]] as const))(
    "%s: %o",
    async (operation, limit) => {
      const clock = new ManualClock();
      const limiter = new RateLimiter(clock, DEFAULT_RATE_LIMIT_OPTIONS, () => 0);
      for (let i = 0; i < limit.requests; i++) limiter.admit("ep", operation)();
      const error = refused(() => limiter.admit("ep", operation));
      expect(error.code).toBe("RATE_LIMITED");
      expect(error.retryAfterMs).toBeGreaterThan(0);
      // Other endpoints have their own budget.
      limiter.admit("other", operation)();
      // The window slides: half of it later, half of the budget is back; two windows later, all of it.
      await clock.advance(limit.windowMs * 1.5);
      for (let i = 0; i < limit.requests / 2; i++) limiter.admit("ep", operation)();
      expect(refused(() => limiter.admit("ep", operation)).code).toBe("RATE_LIMITED");
      await clock.advance(limit.windowMs * 2);

      if (limit.concurrent === null) return;
      const inFlight = Array.from({ length: limit.concurrent }, () => limiter.admit("ep", operation));
      expect(refused(() => limiter.admit("ep", operation)).message).toContain("in flight");
      inFlight[0]?.();
      limiter.admit("ep", operation);
    },
  );

  it.each(RATE_LIMITED_OPERATIONS.map((op) => [op, RATE_LIMITS[op]] as const))(
    "%s: a request after Retry-After is admitted, one a second earlier is not",
    async (operation, limit) => {
      const clock = new ManualClock();
      const limiter = new RateLimiter(clock, DEFAULT_RATE_LIMIT_OPTIONS, () => 0);
      // Filled at the start of a window; then refused late in one, and with a previous window weighing on it.
      for (const offset of [0, limit.windowMs * 0.8, limit.windowMs * 0.3]) {
        await clock.advance(offset);
        for (;;) {
          try {
            limiter.admit("ep", operation)();
          } catch {
            break;
          }
        }
        const wait = refused(() => limiter.admit("ep", operation)).retryAfterMs ?? 0;
        expect(wait).toBeGreaterThan(0);
        // Retry-After is in whole seconds: the wait rounded up.
        const seconds = Math.ceil(wait / 1_000);
        await clock.advance(seconds * 1_000 - 1_000);
        expect(refused(() => limiter.admit("ep", operation)).code, `${operation} at ${offset}`).toBe(
          "RATE_LIMITED",
        );
        await clock.advance(1_000);
        limiter.admit("ep", operation)();
      }
    },
  );

  it("dynamic rule: the limit is the higher of the base and running workers x requests per worker", () => {
    const clock = new ManualClock();
    let workers = 12;
    const limiter = new RateLimiter(
      clock,
      { ...DEFAULT_RATE_LIMIT_OPTIONS, requestsPerWorker: 100 },
      () => workers,
    );
    for (let i = 0; i < 1_200; i++) limiter.admit("ep", "run")();
    expect(refused(() => limiter.admit("ep", "run")).message).toContain("1200");
    workers = 5; // 500 < base 1000: the base applies
    expect(refused(() => limiter.admit("ep", "run")).message).toContain("1000");
  });

  it("can be turned off", () => {
    const limiter = new RateLimiter(
      new ManualClock(),
      { ...DEFAULT_RATE_LIMIT_OPTIONS, enabled: false },
      () => 0,
    );
    for (let i = 0; i < 5_000; i++) limiter.admit("ep", "purge-queue");
  });
});

describe("rate limits over HTTP", () => {
  let h: Harness;
  afterEach(async () => h.close());

  it("429 with Retry-After and a JSON body; allowed again once the window has passed", async () => {
    h = await startHarness({
      config: {
        rateLimits: {
          ...DEFAULT_RATE_LIMIT_OPTIONS,
          limits: { run: { requests: 5, windowMs: 10_000, concurrent: 200 } },
        },
      },
    });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    for (let i = 0; i < 5; i++)
      expect((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } })).status).toBe(200);
    const limited = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } });
    expect(limited.status).toBe(429);
    // 5 in this window still weigh 4/5 of the budget 2 s into the next: 12 s.
    expect(Number(limited.headers["retry-after"])).toBe(12);
    expect(limited.body).toMatchObject({ code: "RATE_LIMITED" });
    await (h.clock as ManualClock).advance(20_000);
    expect((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } })).status).toBe(200);
  });

  it("concurrency: held /runsync requests count until answered", async () => {
    h = await startHarness({
      config: {
        rateLimits: {
          ...DEFAULT_RATE_LIMIT_OPTIONS,
          limits: { runsync: { requests: 100, windowMs: 10_000, concurrent: 2 } },
        },
      },
    });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const held = [1, 2].map(() => h.call("POST", `/v2/${ep.id}/runsync?wait=5000`, { body: { input: {} } }));
    await eventually(() => (h.plane.book.watchers.waiting === 2 ? true : undefined));
    const third = await h.call("POST", `/v2/${ep.id}/runsync?wait=5000`, { body: { input: {} } });
    expect(third.status).toBe(429);
    await (h.clock as ManualClock).advance(5_000);
    for (const reply of await Promise.all(held)) expect(reply.status).toBe(200);
    const pending = h.call("POST", `/v2/${ep.id}/runsync?wait=5000`, { body: { input: {} } });
    await eventually(() => (h.plane.book.watchers.waiting === 1 ? true : undefined));
    await (h.clock as ManualClock).advance(5_000);
    expect((await pending).status).toBe(200);
  });

  it("a flood past the limit is refused while the service keeps answering", async () => {
    h = await startHarness();
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const quiet = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const statuses: number[] = [];
    for (let batch = 0; batch < 30; batch++) {
      const replies = await Promise.all(
        Array.from({ length: 100 }, () => h.call("POST", `/v2/${ep.id}/run`, { body: { input: { batch } } })),
      );
      statuses.push(...replies.map((r) => r.status));
      // Meanwhile: health of the flooded endpoint and another endpoint's /run still answer.
      expect((await h.call("GET", `/v2/${ep.id}/health`)).status).toBe(200);
      expect((await h.call("POST", `/v2/${quiet.id}/run`, { body: { input: {} } })).status).toBe(200);
    }
    expect(statuses.filter((s) => s === 200).length).toBe(RATE_LIMITS.run.requests);
    expect(statuses.filter((s) => s === 429).length).toBe(3_000 - RATE_LIMITS.run.requests);
    expect((await h.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({ jobs: { inQueue: 1_000 } });
  });
});
