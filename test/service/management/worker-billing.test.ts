import { copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { BillingRecord } from "../../../sdk/schemas/billing";
import { ManualClock } from "../../../service/clock";
import type { JobPlaneConfig } from "../../../service/jobs/config";
import {
  WORKER_ROWS_PER_ENDPOINT_HOUR,
  WORKER_USAGE_RETENTION_MS,
} from "../../../service/management/model/billing";
import type { WorkerPod } from "../../../service/planes";
import { ACCOUNT, eventually, type Harness, OTHER_KEY, restartableHarnesses } from "../jobs/harness";

/*
 * Serverless workers' time stays billed after they stop: real worker processes on a real service, the
 * time moved by hand (ManualClock), so every amount is exact.
 */
const HOUR = 3_600_000;
// Heartbeats are real time, the clock is not: workers are not judged silent when the clock jumps.
const CONFIG: Partial<JobPlaneConfig> = { heartbeatGraceMs: 1_000 * HOUR };
const A40_PER_MS = 1.22 / HOUR; // AMPERE_48
const A4000_PER_MS = 0.58 / HOUR; // AMPERE_16
const usd = (value: number) => Math.round(value * 1e6) / 1e6;

async function billing(h: Harness, path: string, key?: string): Promise<BillingRecord[]> {
  const reply = await h.call("GET", `/v1/billing/${path}`, key === undefined ? {} : { key });
  expect(reply.status).toBe(200);
  return reply.body as BillingRecord[];
}

const byGroup = (records: BillingRecord[]) =>
  [...records].sort((a, b) =>
    `${a.time}|${a.endpointId ?? a.podId ?? a.gpuTypeId}`.localeCompare(
      `${b.time}|${b.endpointId ?? b.podId ?? b.gpuTypeId}`,
    ),
  );

async function workerUp(h: Harness, endpointId: string): Promise<string> {
  return eventually(() => {
    const [worker] = h.plane.pool.views(ACCOUNT, endpointId).filter((w) => w.desiredStatus === "RUNNING");
    return worker?.readyAt != null ? worker.id : undefined;
  });
}

async function stopWorkers(h: Harness, endpointId: string, key?: string): Promise<void> {
  const reply = await h.call("PATCH", `/v1/endpoints/${endpointId}`, {
    body: { workersMin: 0 },
    ...(key === undefined ? {} : { key }),
  });
  expect(reply.status).toBe(200);
  await eventually(() => (h.plane.pool.workersOf(endpointId).length === 0 ? true : undefined));
}

describe("billing of serverless workers that stopped", () => {
  const { storeFile, start, stop } = restartableHarnesses();

  it("keeps a stopped worker's time, split at hour edges, across a restart; a worker up at shutdown is billed until it", async () => {
    const { data } = storeFile("runpodkit-worker-billing-");
    const t0 = Date.UTC(2026, 0, 5, 9, 59, 0);
    const clock = new ManualClock(t0);
    const first = await start(data, clock, CONFIG);
    const ep = first.endpoint("runpodkit/echo", {
      workersMin: 1,
      workersMax: 1,
      gpuTypeIds: ["NVIDIA A40"],
    });
    const podId = await workerUp(first, ep.id);
    const query = `endpoints?endpointId=${ep.id}&bucketSize=hour&startTime=2026-01-05T09:00:00Z`;

    await clock.advance(90_000); // 10:00:30
    const split = [
      {
        endpointId: ep.id,
        time: "2026-01-05T09:00:00.000Z",
        timeBilledMs: 60_000,
        amount: usd(60_000 * A40_PER_MS),
      },
      {
        endpointId: ep.id,
        time: "2026-01-05T10:00:00.000Z",
        timeBilledMs: 30_000,
        amount: usd(30_000 * A40_PER_MS),
      },
    ];
    expect(await billing(first, query)).toEqual(split); // running

    await stopWorkers(first, ep.id);
    expect(first.plane.pool.views(ACCOUNT, ep.id)[0]).toMatchObject({ id: podId, desiredStatus: "EXITED" });
    await clock.advance(HOUR); // the stopped worker's time no longer grows
    expect(await billing(first, query)).toEqual(split);
    expect(await billing(first, "endpoints?startTime=2026-01-05T00:00:00Z")).toEqual([
      {
        endpointId: ep.id,
        time: "2026-01-05T00:00:00.000Z",
        timeBilledMs: 90_000,
        amount: usd(90_000 * A40_PER_MS),
      },
    ]);

    // A second endpoint whose worker is up when the service stops.
    const up = first.endpoint("runpodkit/echo", { workersMin: 1, workersMax: 1, gpuTypeIds: ["NVIDIA A40"] });
    const upPod = await workerUp(first, up.id);
    await clock.advance(20_000); // shutdown at 11:00:50
    await stop(first);

    const clock2 = new ManualClock(clock.now());
    const second = await start(data, clock2, CONFIG);
    expect(await billing(second, query)).toEqual(split);
    // The worker up at shutdown is billed until it; the one the restart starts (workersMin 1), from then.
    const newPod = await workerUp(second, up.id);
    expect(newPod).not.toBe(upPod);
    await clock2.advance(5_000);
    expect(
      byGroup(await billing(second, `pods?grouping=podId&bucketSize=hour&startTime=2026-01-05T11:00:00Z`)),
    ).toEqual(
      byGroup([
        {
          podId: upPod,
          time: "2026-01-05T11:00:00.000Z",
          timeBilledMs: 20_000,
          amount: usd(20_000 * A40_PER_MS),
        },
        {
          podId: newPod,
          time: "2026-01-05T11:00:00.000Z",
          timeBilledMs: 5_000,
          amount: usd(5_000 * A40_PER_MS),
        },
      ]),
    );
    expect(
      await billing(second, `pods?grouping=podId&podId=${podId}&startTime=2026-01-05T00:00:00Z`),
    ).toEqual([
      { podId, time: "2026-01-05T00:00:00.000Z", timeBilledMs: 90_000, amount: usd(90_000 * A40_PER_MS) },
    ]);
    await stopWorkers(second, up.id);
  });

  it("a service killed outright (no graceful stop) keeps its running workers' time until the last checkpoint", async () => {
    const { dir, data } = storeFile("runpodkit-worker-billing-kill-");
    const t0 = Date.UTC(2026, 0, 6, 8, 0, 0);
    const clock = new ManualClock(t0);
    const first = await start(data, clock, { ...CONFIG, usageCheckpointMs: 60_000 });
    const ep = first.endpoint("runpodkit/echo", { workersMin: 1, workersMax: 1, gpuTypeIds: ["NVIDIA A40"] });
    const podId = await workerUp(first, ep.id);
    const since = first.plane.pool.views(ACCOUNT, ep.id)[0]?.lastStartedAt ?? t0;
    await clock.advance(150_000); // checkpoints at t0 + 60 s and t0 + 120 s
    const query = `pods?grouping=podId&podId=${podId}&startTime=2026-01-06T00:00:00Z`;
    const billed = (ms: number) => [
      { podId, time: "2026-01-06T00:00:00.000Z", timeBilledMs: ms, amount: usd(ms * A40_PER_MS) },
    ];
    // While it runs: the checkpointed time and the rest, each counted once.
    expect(await billing(first, query)).toEqual(billed(t0 + 150_000 - since));

    // The store exactly as a SIGKILL leaves it (the first service never stops its workers).
    const killed = join(dir, "killed.sqlite");
    for (const suffix of ["", "-wal", ".key"]) {
      if (existsSync(`${data}${suffix}`)) copyFileSync(`${data}${suffix}`, `${killed}${suffix}`);
    }
    const second = await start(killed, new ManualClock(clock.now()), CONFIG);
    expect(await billing(second, query)).toEqual(billed(t0 + 120_000 - since));
  });

  it("bills a worker from its creation, its cold start included: its bill never shrinks when its process starts", async () => {
    const { data } = storeFile("runpodkit-worker-billing-cold-");
    const t0 = Date.UTC(2026, 0, 7, 8, 0, 0);
    const clock = new ManualClock(t0);
    const h = await start(data, clock, { ...CONFIG, coldStartMs: 2_000 });
    const ep = h.endpoint("runpodkit/echo", { workersMin: 1, workersMax: 1, gpuTypeIds: ["NVIDIA A40"] });
    const pod = await eventually(() => h.plane.pool.views(ACCOUNT, ep.id)[0]);
    const podId = pod.id;
    const query = `pods?grouping=podId&podId=${podId}&startTime=2026-01-07T00:00:00Z`;
    const billedMs = async () => (await billing(h, query))[0]?.timeBilledMs;
    await clock.advance(1_000); // in its cold start
    expect(await billedMs()).toBe(clock.now() - pod.createdAt);
    await clock.advance(2_000); // its process starts at creation + 2 s
    await workerUp(h, ep.id);
    expect(await billedMs()).toBe(clock.now() - pod.createdAt);
    await clock.advance(10_000); // past its idleTimeout, so that scaling to zero stops it now
    const stoppedAt = clock.now();
    await stopWorkers(h, ep.id);
    await clock.advance(HOUR);
    expect(await billing(h, query)).toEqual([
      {
        podId,
        time: "2026-01-07T00:00:00.000Z",
        timeBilledMs: stoppedAt - pod.createdAt,
        amount: usd((stoppedAt - pod.createdAt) * A40_PER_MS),
      },
    ]);
  });

  it("applies endpointId, gpuTypeId, dataCenterId, templateId and grouping to stopped workers; accounts apart", async () => {
    const { data } = storeFile("runpodkit-worker-billing-filters-");
    const clock = new ManualClock(Date.UTC(2026, 1, 2, 12, 0, 0));
    const h = await start(data, clock, CONFIG);
    const a = h.endpoint("runpodkit/echo", {
      workersMin: 1,
      workersMax: 1,
      gpuTypeIds: ["NVIDIA A40"],
      dataCenterIds: ["EU-RO-1"],
    });
    const b = h.endpoint("runpodkit/echo", {
      workersMin: 1,
      workersMax: 1,
      gpuTypeIds: ["NVIDIA RTX A4000"],
      dataCenterIds: ["US-TX-3"],
    });
    const c = h.endpoint(
      "runpodkit/echo",
      { workersMin: 1, workersMax: 1, gpuTypeIds: ["NVIDIA A40"], dataCenterIds: ["EU-RO-1"] },
      OTHER_KEY,
    );
    await Promise.all([workerUp(h, a.id), workerUp(h, b.id)]);
    await eventually(() => (h.plane.pool.workersOf(c.id)[0]?.session.readyAt != null ? true : undefined));
    await clock.advance(40_000);
    await stopWorkers(h, a.id);
    await clock.advance(60_000);
    await stopWorkers(h, b.id);
    await stopWorkers(h, c.id, OTHER_KEY);
    await clock.advance(HOUR);

    const day = "startTime=2026-02-02T00:00:00Z";
    const time = "2026-02-02T00:00:00.000Z";
    const recA = { endpointId: a.id, time, timeBilledMs: 40_000, amount: usd(40_000 * A40_PER_MS) };
    const recB = { endpointId: b.id, time, timeBilledMs: 100_000, amount: usd(100_000 * A4000_PER_MS) };
    expect(byGroup(await billing(h, `endpoints?${day}`))).toEqual(byGroup([recA, recB]));
    expect(await billing(h, `endpoints?${day}&endpointId=${a.id}`)).toEqual([recA]);
    expect(await billing(h, `endpoints?${day}&gpuTypeId=NVIDIA%20RTX%20A4000`)).toEqual([recB]);
    expect(await billing(h, `endpoints?${day}&dataCenterId=EU-RO-1`)).toEqual([recA]);
    expect(await billing(h, `endpoints?${day}&dataCenterId=CA-MTL-1`)).toEqual([]);
    expect(await billing(h, `endpoints?${day}&templateId=${b.templateId}`)).toEqual([recB]);
    expect(byGroup(await billing(h, `pods?${day}`))).toEqual(
      byGroup([
        { gpuTypeId: "NVIDIA A40", time, timeBilledMs: 40_000, amount: recA.amount },
        { gpuTypeId: "NVIDIA RTX A4000", time, timeBilledMs: 100_000, amount: recB.amount },
      ]),
    );
    // The other account sees only its own worker, and the first never sees it.
    expect(await billing(h, `endpoints?${day}`, OTHER_KEY)).toEqual([
      { endpointId: c.id, time, timeBilledMs: 100_000, amount: usd(100_000 * A40_PER_MS) },
    ]);
    expect(await billing(h, `endpoints?${day}&endpointId=${c.id}`)).toEqual([]);
  });

  it("is bounded: past the cap an endpoint's workers of one hour merge into one row; rows past the retention go", async () => {
    const { data } = storeFile("runpodkit-worker-billing-bounds-");
    const t0 = Date.UTC(2026, 2, 3, 8, 0, 0);
    const h = await start(data, new ManualClock(t0), CONFIG);
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0, gpuTypeIds: ["NVIDIA A40"] });
    const pod = (id: string, at: number): WorkerPod => ({
      id,
      accountId: ACCOUNT,
      endpointId: ep.id,
      desiredStatus: "RUNNING",
      imageName: "runpodkit/echo",
      templateId: ep.templateId,
      gpuCount: 1,
      createdAt: at,
      lastStartedAt: at,
      state: "idle",
    });
    const workers = WORKER_ROWS_PER_ENDPOINT_HOUR + 5;
    for (let i = 0; i < workers; i++) {
      const at = t0 + i * 10_000;
      h.usage.started(pod(`w${i}`, at));
      h.usage.stopped(pod(`w${i}`, at), at + 1_000);
    }
    const hour = `bucketSize=hour&startTime=2026-03-03T08:00:00Z&endTime=2026-03-03T09:00:00Z`;
    const records = await billing(h, `pods?grouping=podId&${hour}`);
    expect(records).toHaveLength(WORKER_ROWS_PER_ENDPOINT_HOUR + 1);
    expect(records.find((r) => r.podId === "w0")).toMatchObject({ timeBilledMs: 1_000 });
    expect(records.find((r) => r.podId === `w${workers - 1}`)).toBeUndefined();
    expect(records.find((r) => r.podId === "unknown")).toMatchObject({
      timeBilledMs: 5_000,
      amount: usd(5_000 * A40_PER_MS),
    });
    expect(await billing(h, `endpoints?${hour}`)).toEqual([
      {
        endpointId: ep.id,
        time: "2026-03-03T08:00:00.000Z",
        timeBilledMs: workers * 1_000,
        amount: usd(workers * 1_000 * A40_PER_MS),
      },
    ]);

    // A worker stopping past the retention deletes the rows older than it.
    const later = t0 + WORKER_USAGE_RETENTION_MS + 2 * HOUR;
    h.usage.started(pod("late", later - 1_000));
    h.usage.stopped(pod("late", later - 1_000), later);
    const all = `bucketSize=year&startTime=2026-01-01T00:00:00Z&endTime=${new Date(later + HOUR).toISOString()}`;
    expect(await billing(h, `pods?grouping=podId&${all}`)).toEqual([
      {
        podId: "late",
        time: "2027-01-01T00:00:00.000Z",
        timeBilledMs: 1_000,
        amount: usd(1_000 * A40_PER_MS),
      },
    ]);
  });
});
