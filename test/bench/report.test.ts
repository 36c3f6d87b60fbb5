import { describe, expect, it } from "vitest";
import { chartSpecs } from "../../bench/lib/charts";
import { type Figure, figure } from "../../bench/lib/figures";
import { curveLines, type Results, targets } from "../../bench/lib/report";
import type { EndToEndRow } from "../../bench/suites/end-to-end";
import type { StackSizeOperation, StackSizePoint } from "../../bench/suites/provider";
import type { DepthPoint } from "../../bench/suites/queue-depth";

const fig = (runs: number[], unit = "u"): Figure => figure(runs, unit, 3);

function e2eRow(workers: number, endpoints: number, serviceUs: number): EndToEndRow {
  return {
    workers,
    endpoints,
    jobsPerRun: 5_000,
    jobsPerSec: fig([3_000, 3_100, 2_900]),
    submitPerSec: fig([5_000, 5_000, 5_000]),
    failed: 0,
    sampleWrong: 0,
    cpuPerJobUs: { service: fig([serviceUs]), workers: fig([200]), client: fig([100]) },
    cpuBoundJobsPerSec: fig([4_000]),
    idleCpuMsPerSec: null,
  };
}

function depthPoint(depth: number, cpuUs: number, rssMb: number, restartMs: number): DepthPoint {
  return {
    depth,
    depthAfterWindows: depth + 6_000,
    rssMb,
    heapMb: rssMb / 2,
    fill: { requests: depth, perSec: 20_000, cpuPerRequestUs: cpuUs },
    runPerSec: fig([20_000]),
    cpuPerRequestUs: fig([cpuUs]),
    restartMs,
    startServiceMs: restartMs - 100,
    restartCpuMs: restartMs / 2,
    rssAfterRestartMb: rssMb - 10,
    heapAfterRestartMb: rssMb / 3,
    restored: depth + 6_000,
  };
}

function stackPoint(resources: number, noopMs: number, noopCalls: number): StackSizePoint {
  const op = (ms: number, calls: number): StackSizeOperation => ({
    wallMs: fig([ms * 2]),
    providerCpuMs: fig([ms]),
    engineCpuMs: fig([ms / 2]),
    programCpuMs: fig([ms / 2]),
    wallMsPerResource: fig([(ms * 2) / resources]),
    providerCpuMsPerResource: fig([ms / resources]),
    totalCallsPerCycle: [calls],
    steps: {},
  });
  return {
    resources,
    operations: {
      create: op(noopMs * 2, resources),
      noopUpdate: op(noopMs, noopCalls),
      refresh: op(noopMs / 2, resources),
      delete: op(noopMs, resources),
    },
  };
}

const results: Results = {
  e2eWorkers: [e2eRow(1, 1, 150), e2eRow(4, 1, 120), e2eRow(16, 1, 130)],
  queueDepth: {
    connections: 64,
    windowRequests: [2_000, 2_000, 10_000, 10_000],
    emptyRssMb: 65,
    points: [
      depthPoint(1_000, 33, 70, 300),
      depthPoint(10_000, 34, 80, 350),
      depthPoint(100_000, 35, 140, 550),
      depthPoint(1_000_000, 36, 650, 4_000),
    ],
  },
  stackSize: {
    cycles: 1,
    points: [stackPoint(10, 1_000, 0), stackPoint(100, 2_000, 0), stackPoint(500, 13_000, 1)],
  },
};

describe("targets", () => {
  const runRate: Results["runRate"] = {
    connections: 64,
    durationSec: 5,
    service: fig([30_000]),
    ceiling: fig([60_000]),
    ratio: fig([0.5]),
    serviceP99Ms: fig([5]),
    ceilingP99Ms: fig([3]),
    serviceCpuPerRequestUs: fig([34]),
    ceilingCpuPerRequestUs: fig([16]),
    cpuRatio: fig([0.47]),
    rejected: 0,
  };
  const list = targets({ ...results, runRate });
  const byName = (prefix: string) => list.find((t) => t.name.startsWith(prefix));

  it("judges service CPU per job against the bare server's CPU per request of the same run", () => {
    // 120 us per job (4 workers) / 16 us per bare request = 7.5x, over the 6x bar.
    expect(byName("service CPU per completed job")).toMatchObject({ value: 7.5, met: false, target: "<= 6" });
  });

  it("puts the queue floor of the same run beside the CPU target: its cost in bare requests, the service's in floors", () => {
    const floor = targets({
      ...results,
      runRate,
      queueFloor: {
        workers: 4,
        jobsPerRun: 5_000,
        jobsPerSec: fig([7_000]),
        cpuPerJobUs: { server: fig([48]), workers: fig([120]), client: fig([50]) },
        requestsPerJob: { run: 1, "job-done": 1 },
      },
    }).find((t) => t.name.startsWith("service CPU per completed job"));
    // 48 / 16 = 3x a bare request; 120 / 48 = 2.5x the floor.
    expect(floor?.note).toBe(
      "120 us per job, 16 us per bare request; queue floor 48 us per job (3x a bare request; the service 2.5x the floor)",
    );
  });

  it("says the /runsync p99 was measured after the warm-up, and what the warm-up's own was", () => {
    const ms = (x: number) => fig([x], "ms");
    const list = targets({
      runSync: {
        requestsPerRun: 2_000,
        p50Ms: ms(0.4),
        p99Ms: ms(2.5),
        directCallP50Ms: ms(0.001),
        overheadP50Ms: ms(0.399),
        bareP50Ms: ms(0.08),
        bareP99Ms: ms(0.2),
        p50OverBare: fig([5], "ratio"),
        warmup: { requests: 5_000, p50Ms: 0.61234, p99Ms: 4.56789 },
        wrong: 0,
      },
    });
    expect(list.find((t) => t.name === "/runsync no-op p99")).toMatchObject({
      value: 2.5,
      met: true,
      note: "bare round trip p99 0.2 ms, after 5000 warm-up requests, whose own p99 was 4.568 ms",
    });
  });

  it("takes the million-job RSS as the worse of after filling and after restart, and its restart", () => {
    expect(byName("RSS with 1000000 queued")).toMatchObject({ value: 650, met: false, target: "<= 600" });
    expect(byName("restart with 1006000 queued")).toMatchObject({ value: 4_000, met: true });
  });

  it("takes the empty RSS from the depth curve when the queued suite did not run", () => {
    expect(byName("RSS of the empty service")).toMatchObject({ value: 65, met: true });
  });

  it("checks the 500-resource no-op up: API calls and provider CPU per resource against 100", () => {
    expect(byName("no-op up of 500 resources: API calls")).toMatchObject({ value: 1, met: false });
    // 13,000 ms / 500 = 26 ms per resource; 2,000 / 100 = 20: 1.3x, within 1.5x.
    expect(byName("no-op up provider CPU per resource")).toMatchObject({ value: 1.3, met: true });
  });

  it("judges the 100,000-job bars only on a run that queued that many", () => {
    const queued = (jobs: number) => ({
      jobs,
      rssAfterSubmitMb: fig([140]),
      rssAfterRestartMb: fig([160]),
      rssEmptyMb: fig([60]),
      heapAfterSubmitMb: fig([50]),
      heapAfterRestartMb: fig([50]),
      restartMs: fig([500]),
      startServiceMs: fig([400]),
      restartCpuMs: fig([450]),
      restoredJobs: [jobs],
    });
    const quick = targets({ queued: queued(20_000) });
    expect(quick.map((t) => t.name)).toEqual(["RSS of the empty service"]);
    const full = targets({ queued: queued(100_000) });
    expect(full.find((t) => t.name.startsWith("RSS with 100000"))).toMatchObject({ value: 160, met: false });
    expect(full.find((t) => t.name.startsWith("restart with 100000"))).toMatchObject({
      value: 500,
      met: true,
    });
  });

  it("keeps the end-to-end rate target on the 4-worker row", () => {
    expect(byName("end-to-end jobs/s, 4 workers")).toMatchObject({ value: 3_000, met: true });
  });
});

describe("curve verdicts and charts", () => {
  it("states per curve whether the cost per unit stays flat", () => {
    const lines = curveLines(results);
    expect(lines).toContain(
      "queue depth, service CPU per /run: flat: 33 -> 36 us/request (x1.09) from 1000 to 1000000",
    );
    expect(lines.some((l) => l.startsWith("workers, service CPU per job: flat: 150 -> 130"))).toBe(true);
  });

  it("gives the charts of the curves that ran, with their points", () => {
    const charts = chartSpecs(results);
    expect(charts.map((c) => c.file)).toEqual([
      "queue-depth-cpu.svg",
      "queue-depth-rate.svg",
      "queue-depth-rss.svg",
      "queue-depth-restart.svg",
      "e2e-workers.svg",
      "e2e-workers-cpu.svg",
      "stack-size-time.svg",
      "stack-size-per-resource.svg",
      "stack-size-calls.svg",
    ]);
    const cpu = charts.find((c) => c.file === "e2e-workers-cpu.svg");
    expect(cpu?.series.find((s) => s.name === "total")?.points).toEqual([
      { x: 1, y: 450 },
      { x: 4, y: 420 },
      { x: 16, y: 430 },
    ]);
  });
});
