/**
 * The service's time rules (ttl, executionTimeout, idleTimeout, retention, delayTime, executionTime)
 * compare times read from its clock: a step of the system's wall clock while it runs (an operator
 * setting it, NTP stepping it, a VM resumed) must not move them. The SystemClock is given a wall clock
 * the test steps, and the real monotonic clock.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SystemClock, type TimeSources } from "../../service/clock";
import { type TestService, withService } from "../helpers/service";

const HOUR = 3_600_000;
let service: TestService | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

/** A wall clock that reads the system's, stepped by `offset`. */
function steppedWall() {
  const wall = { offset: 0 };
  const sources: TimeSources = { wall: () => Date.now() + wall.offset, monotonic: () => performance.now() };
  return { wall, sources };
}

async function call(base: string, key: string, method: string, path: string, body?: unknown) {
  const reply = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: key, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: reply.status, body: (await reply.json()) as Record<string, unknown> };
}

async function queuedJob(s: TestService, ttl: number) {
  const template = await call(s.restUrl, s.apiKey, "POST", "/templates", {
    name: "jump",
    imageName: "runpodkit/echo",
    isServerless: true,
  });
  // workersMax 0: the job stays queued; only time can end it.
  const endpoint = await call(s.restUrl, s.apiKey, "POST", "/endpoints", {
    templateId: template.body.id,
    workersMin: 0,
    workersMax: 0,
  });
  const endpointId = String(endpoint.body.id);
  const run = await call(s.queueUrl, s.apiKey, "POST", `/v2/${endpointId}/run`, {
    input: {},
    policy: { ttl },
  });
  expect(run.status).toBe(200);
  return { endpointId, jobId: String(run.body.id) };
}

describe("a step of the wall clock while the service runs", () => {
  it("forward by an hour: a queued job with a 10-minute ttl is still there, its delayTime not an hour", async () => {
    const { wall, sources } = steppedWall();
    service = await withService({ clock: new SystemClock(sources) });
    const { endpointId, jobId } = await queuedJob(service, 600_000);
    wall.offset = HOUR;
    const status = await call(service.queueUrl, service.apiKey, "GET", `/v2/${endpointId}/status/${jobId}`);
    expect(status.status).toBe(200);
    expect(status.body.status).toBe("IN_QUEUE");
    expect(status.body.delayTime as number).toBeLessThan(600_000);
  });

  it("back by an hour: a running job's executionTime is not negative, and new records are not dated an hour back", async () => {
    const { wall, sources } = steppedWall();
    const clock = new SystemClock(sources);
    service = await withService({ clock, config: { jobs: { coldStartMs: 0 } } });
    const s = service;
    const template = await call(s.restUrl, s.apiKey, "POST", "/templates", {
      name: "jump-sleep",
      imageName: "runpodkit/sleep",
      isServerless: true,
    });
    const endpoint = await call(s.restUrl, s.apiKey, "POST", "/endpoints", {
      templateId: template.body.id,
      workersMin: 0,
      workersMax: 1,
    });
    const endpointId = String(endpoint.body.id);
    const run = await call(s.queueUrl, s.apiKey, "POST", `/v2/${endpointId}/run`, { input: { ms: 60_000 } });
    const jobId = String(run.body.id);
    const statusOf = () => call(s.queueUrl, s.apiKey, "GET", `/v2/${endpointId}/status/${jobId}`);
    // Polled until a worker has the job (a worker process starts: real time).
    for (let i = 0; i < 600 && (await statusOf()).body.status !== "IN_PROGRESS"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const before = clock.now();
    wall.offset = -HOUR;
    const status = await statusOf();
    expect(status.body.status).toBe("IN_PROGRESS");
    expect(status.body.executionTime as number).toBeGreaterThanOrEqual(0);
    expect(status.body.delayTime as number).toBeGreaterThanOrEqual(0);
    const later = await call(s.restUrl, s.apiKey, "POST", "/templates", {
      name: "after-step",
      imageName: "runpodkit/echo",
      isServerless: true,
    });
    expect(later.status).toBe(200);
    const listed = await call(s.restUrl, s.apiKey, "GET", `/endpoints/${endpointId}`);
    expect(listed.status).toBe(200);
    expect(clock.now()).toBeGreaterThanOrEqual(before);
  });
});
