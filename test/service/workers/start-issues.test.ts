import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ManualClock } from "../../../service/clock";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { eventually, type Harness, startHarness } from "../jobs/harness";

type Health = {
  jobs: { inQueue: number };
  workers: Record<string, number>;
  startIssue?: { workerId: string; since: string; reason: string };
};

/** A handler module that never loads: why is where a user looks first, not only in the logs. */
describe("workers whose handler does not load", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  const handlers = {
    "acme/throws": resolve("test/service/workers/fixtures/throws-at-import.mts"),
    "acme/never-loads": resolve("test/service/workers/fixtures/never-loads.mts"),
  };
  const health = async (ep: EndpointRecord) => (await h.call("GET", `/v2/${ep.id}/health`)).body as Health;
  const run = async (ep: EndpointRecord) =>
    ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { n: 1 } } })).body as { id: string }).id;

  it("a module that throws at import: /health's startIssue and the worker's lastStatusChange say why; gone once a worker is up", async () => {
    h = await startHarness({ config: { handlers } });
    const clock = h.clock as ManualClock;
    const ep = h.endpoint("acme/throws", { workersMax: 1 });
    const id = await run(ep);
    const issue = await eventually(async () => (await health(ep)).startIssue);
    expect(issue.reason).toMatch(
      /^worker \w+ its process exited \(code 1\) before its first call to the service: .*did not load.*Error: model weights not found at \/models\/x; its logs: runpodkit logs \w+ --worker \w+$/,
    );
    expect(issue.reason).not.toMatch(/^\s+at |\| {4}at /);
    expect(Date.parse(issue.since)).toBe(clock.now());
    // The same reason on the worker, as REST (includeWorkers) shows it.
    const rest = await h.call("GET", `/v1/endpoints/${ep.id}?includeWorkers=true`);
    const workers = (rest.body as { workers: { id: string; lastStatusChange: string }[] }).workers;
    const failed = workers.find((w) => w.id === issue.workerId);
    expect(failed?.lastStatusChange).toMatch(
      /^failed to start: its process exited \(code 1\) before its first call to the service: .*model weights not found/,
    );
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({ status: "IN_QUEUE" });

    // Fixed (the template runs a module that loads): once a worker is up, the issue is gone.
    const fixed = await h.call("PATCH", `/v1/templates/${ep.templateId}`, {
      body: { imageName: "runpodkit/echo" },
    });
    expect(fixed.status).toBe(200);
    // A new version is not blamed for the old one's failure.
    expect((await health(ep)).startIssue).toBeUndefined();
    await clock.advance(60_000);
    await eventually(async () => {
      const status = (await h.call("GET", `/v2/${ep.id}/status/${id}`)).body as { status: string };
      return status.status === "COMPLETED" ? true : undefined;
    });
    expect((await health(ep)).startIssue).toBeUndefined();
  });

  it("a module that never finishes loading: named in /health once its process has run slowStartMs without a call", async () => {
    h = await startHarness({ config: { handlers } });
    const clock = h.clock as ManualClock;
    const ep = h.endpoint("acme/never-loads", { workersMax: 1 });
    await run(ep);
    const worker = await eventually(() => {
      const [w] = h.plane.pool.workersOf(ep.id);
      return w?.startedAt != null ? w : undefined;
    });
    expect((await health(ep)).startIssue).toBeUndefined();
    await clock.advance(h.plane.config.slowStartMs);
    const body = await health(ep);
    expect(body.workers.initializing).toBe(1);
    expect(body.startIssue).toEqual({
      workerId: worker.session.id,
      since: new Date(worker.startedAt as number).toISOString(),
      reason: `its process started ${h.plane.config.slowStartMs / 1_000} s ago and has not called the service yet: its handler has not finished loading (a top-level await that never settles, a download or a model load still running?); what it printed: runpodkit logs ${ep.id} --worker ${worker.session.id}`,
    });
  });
});
