/** The printed table, the curves' verdicts and the targets, from the suites' results. */
import type { EndToEndRow } from "../suites/end-to-end";
import type { QueuedMemory, RunSyncLatency } from "../suites/latency-memory";
import { CURVE_OPERATIONS, type ProviderResult, type StackSizeCurve } from "../suites/provider";
import type { QueueDepthCurve } from "../suites/queue-depth";
import type { QueueFloorResult } from "../suites/queue-floor";
import type { RunRateResult } from "../suites/run-rate";
import type { SdkResult, StreamThroughput } from "../suites/sdk";
import { judgeCurve, LINEAR_FACTOR, linearity, marginalCosts } from "./curves";
import { atLeast, atMost, type Figure, type Target } from "./figures";
import { median, round } from "./stats";

export interface Results {
  runRate?: RunRateResult;
  endToEnd?: EndToEndRow[];
  runSync?: RunSyncLatency;
  queued?: QueuedMemory;
  sdk?: SdkResult;
  stream?: StreamThroughput;
  provider?: ProviderResult;
  /** Curves: /run and RSS against queue depth; end to end against workers and endpoints; stack size. */
  queueDepth?: QueueDepthCurve;
  e2eWorkers?: EndToEndRow[];
  /** The end-to-end client and workers against the bare server's in-memory queue. */
  queueFloor?: QueueFloorResult;
  e2eEndpoints?: EndToEndRow[];
  stackSize?: StackSizeCurve;
}

const f = (x: Figure | undefined) => (x ? `${x.median} ${x.unit}  (runs ${x.runs.join(", ")})` : "-");

export function table(r: Results): string[] {
  const rows: [string, string][] = [];
  if (r.runRate) {
    rows.push(["/run accepted, service (64 conn)", f(r.runRate.service)]);
    rows.push(["/run, bare-HTTP ceiling (64 conn)", f(r.runRate.ceiling)]);
    rows.push(["/run service / ceiling", f(r.runRate.ratio)]);
    rows.push(["/run server CPU per request, service", f(r.runRate.serviceCpuPerRequestUs ?? undefined)]);
    rows.push(["/run server CPU per request, ceiling", f(r.runRate.ceilingCpuPerRequestUs ?? undefined)]);
    rows.push(["/run ceiling CPU / service CPU", f(r.runRate.cpuRatio ?? undefined)]);
  }
  const e2eRows = (list: EndToEndRow[] | undefined, prefix: string, byEndpoints = false) => {
    for (const row of list ?? []) {
      const what =
        byEndpoints || row.endpoints > 1
          ? `${row.endpoints} endpoint(s), ${row.workers} worker(s)`
          : `${row.workers} worker(s)`;
      rows.push([`${prefix}, ${what}`, f(row.jobsPerSec)]);
      const cpu = row.cpuPerJobUs;
      if (cpu) {
        rows.push([
          `  CPU/job service+workers+client`,
          `${cpu.service.median}+${cpu.workers.median}+${cpu.client.median} us; 2-core bound ${row.cpuBoundJobsPerSec?.median} jobs/s`,
        ]);
      }
      if (row.idleCpuMsPerSec) {
        rows.push([
          `  idle CPU service+workers`,
          `${row.idleCpuMsPerSec.service}+${row.idleCpuMsPerSec.workers} ms per second with no job`,
        ]);
      }
    }
  };
  e2eRows(r.endToEnd, "end-to-end");
  e2eRows(r.e2eWorkers, "e2e workers curve");
  e2eRows(r.e2eEndpoints, "e2e endpoints curve", true);
  if (r.queueFloor) {
    const cpu = r.queueFloor.cpuPerJobUs;
    rows.push([`queue floor (bare server), ${r.queueFloor.workers} workers`, f(r.queueFloor.jobsPerSec)]);
    rows.push([
      `  CPU/job bare server+workers+client`,
      `${cpu.server.median}+${cpu.workers.median}+${cpu.client.median} us  (bare server runs ${cpu.server.runs.join(", ")})`,
    ]);
    rows.push([
      `  requests per job`,
      Object.entries(r.queueFloor.requestsPerJob)
        .map(([route, n]) => `${route} ${n}`)
        .join(", "),
    ]);
  }
  if (r.runSync) {
    rows.push(["/runsync no-op p50", f(r.runSync.p50Ms)]);
    rows.push(["/runsync no-op p99", f(r.runSync.p99Ms)]);
    const warm = r.runSync.warmup;
    if (warm)
      rows.push([
        "/runsync warm-up loop (not counted)",
        `${warm.requests} requests from start: p50 ${round(warm.p50Ms, 3)} ms, p99 ${round(warm.p99Ms, 3)} ms`,
      ]);
    rows.push(["direct handler call p50", f(r.runSync.directCallP50Ms)]);
    rows.push(["/runsync overhead over direct call (p50)", f(r.runSync.overheadP50Ms)]);
    if (r.runSync.bareP50Ms) {
      rows.push(["bare keep-alive round trip p50", f(r.runSync.bareP50Ms)]);
      rows.push(["bare keep-alive round trip p99", f(r.runSync.bareP99Ms)]);
      rows.push(["/runsync p50 / bare round trip p50", f(r.runSync.p50OverBare)]);
    }
    if (r.runSync.relayP50Ms) {
      rows.push(["relay floor p50 (3 processes, no rules)", f(r.runSync.relayP50Ms)]);
      rows.push(["relay floor p99", f(r.runSync.relayP99Ms)]);
      rows.push(["/runsync p50 / relay floor p50", f(r.runSync.p50OverRelay)]);
    }
  }
  if (r.queued) {
    rows.push([`RSS with ${r.queued.jobs} queued (after submit)`, f(r.queued.rssAfterSubmitMb)]);
    rows.push([`RSS with ${r.queued.jobs} queued (after restart)`, f(r.queued.rssAfterRestartMb)]);
    rows.push(["restart with them in the store", f(r.queued.restartMs)]);
    rows.push(["  of which startService", f(r.queued.startServiceMs)]);
    rows.push(["  CPU of the new process to ready", f(r.queued.restartCpuMs)]);
    rows.push(["RSS of the empty service (its endpoint, no job)", f(r.queued.rssEmptyMb)]);
  }
  if (r.sdk) {
    for (const target of ["bare", "service"] as const) {
      const s = r.sdk[target];
      rows.push([`SDK cycles vs ${target}: ours`, f(s.ours.cyclesPerSec)]);
      rows.push([`SDK cycles vs ${target}: runpod-sdk`, f(s.official.cyclesPerSec)]);
      rows.push([`SDK cycles vs ${target}: ours / official`, f(s.ratio)]);
      rows.push([`client CPU vs ${target}: ours`, f(s.ours.cpuPerCallUs)]);
      rows.push([`client CPU vs ${target}: runpod-sdk`, f(s.official.cpuPerCallUs)]);
      rows.push([
        `floor vs ${target}: bare undici Pool`,
        `${f(s.undici.cyclesPerSec)}; ${s.undici.cpuPerCallUs.median} us/call`,
      ]);
    }
  }
  if (r.stream) rows.push([`stream() of ${(r.stream.bytes / 2 ** 20).toFixed(0)} MiB`, f(r.stream.mbPerSec)]);
  if (r.provider) {
    for (const [operation, o] of Object.entries(r.provider.operations)) {
      const per = `template ${o.perResource.template.writes}w/${o.perResource.template.reads}r, endpoint ${o.perResource.endpoint.writes}w/${o.perResource.endpoint.reads}r`;
      rows.push([
        `provider ${operation} (${r.provider.endpoints}+${r.provider.templates})`,
        `${f(o.wallMs)}; ${per}`,
      ]);
    }
  }
  if (r.queueDepth) {
    rows.push(["queue depth: empty service RSS", `${r.queueDepth.emptyRssMb.toFixed(1)} MB`]);
    for (const p of r.queueDepth.points) {
      rows.push([
        `queue depth ${p.depth}`,
        `/run ${p.runPerSec.median}/s, ${p.cpuPerRequestUs.median} us CPU/request (runs ${p.cpuPerRequestUs.runs.join(", ")})`,
      ]);
      rows.push([
        `  RSS; restart with ${p.depthAfterWindows}`,
        `${p.rssMb.toFixed(1)} MB (heap ${p.heapMb.toFixed(1)}); ${p.restartMs.toFixed(0)} ms (${p.restartCpuMs} ms CPU), RSS after ${p.rssAfterRestartMb.toFixed(1)} MB`,
      ]);
    }
  }
  for (const p of r.stackSize?.points ?? []) {
    for (const op of CURVE_OPERATIONS) {
      const o = p.operations[op];
      rows.push([
        `stack of ${p.resources}: ${op}`,
        `${o.wallMs.median} ms (${o.wallMsPerResource.median} ms/resource), provider CPU ${o.providerCpuMs.median} ms (${o.providerCpuMsPerResource.median} ms/resource), ${o.totalCallsPerCycle.join("/")} API calls`,
      ]);
    }
  }
  const width = Math.max(...rows.map(([name]) => name.length));
  return rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`);
}

/** Each curve's verdict: does the cost per unit stay flat, and where is the knee. */
export function curveLines(r: Results): string[] {
  const out: string[] = [];
  const line = (name: string, judged: ReturnType<typeof judgeCurve>) => {
    if (judged) out.push(`${name}: ${judged.summary}`);
  };
  if (r.queueDepth) {
    const { points, emptyRssMb } = r.queueDepth;
    line(
      "queue depth, service CPU per /run",
      judgeCurve(
        points.map((p) => ({ x: p.depth, perUnit: p.cpuPerRequestUs.median })),
        "us/request",
      ),
    );
    line(
      "queue depth, RSS per queued job above the empty service",
      judgeCurve(
        points
          .filter((p) => p.depth >= 10_000)
          .map((p) => ({ x: p.depth, perUnit: ((p.rssMb - emptyRssMb) * 1024) / p.depth })),
        "KB/job",
      ),
    );
    line(
      "queue depth, restart time per queued job",
      judgeCurve(
        points
          .filter((p) => p.depthAfterWindows >= 10_000)
          .map((p) => ({ x: p.depthAfterWindows, perUnit: (p.restartMs * 1000) / p.depthAfterWindows })),
        "us/job",
      ),
    );
  }
  const e2e = (name: string, rows: EndToEndRow[] | undefined, x: (row: EndToEndRow) => number) => {
    if (!rows) return;
    const cpu = (row: EndToEndRow) => row.cpuPerJobUs;
    line(
      `${name}, service CPU per job`,
      judgeCurve(
        rows.map((row) => ({ x: x(row), perUnit: cpu(row)?.service.median ?? Number.NaN })),
        "us/job",
      ),
    );
    line(
      `${name}, CPU per job (service+workers+client)`,
      judgeCurve(
        rows.map((row) => {
          const c = cpu(row);
          return {
            x: x(row),
            perUnit: c ? c.service.median + c.workers.median + c.client.median : Number.NaN,
          };
        }),
        "us/job",
      ),
    );
  };
  e2e("workers", r.e2eWorkers, (row) => row.workers);
  e2e("endpoints", r.e2eEndpoints, (row) => row.endpoints);
  for (const op of CURVE_OPERATIONS) {
    const points = r.stackSize?.points;
    if (!points) break;
    line(
      `stack size, ${op} provider CPU per resource`,
      judgeCurve(
        points.map((p) => ({ x: p.resources, perUnit: p.operations[op].providerCpuMsPerResource.median })),
        "ms/resource",
        { tolerance: LINEAR_FACTOR, step: LINEAR_FACTOR },
      ),
    );
    const steps = marginalCosts(
      points.map((p) => ({ x: p.resources, total: p.operations[op].providerCpuMs.median })),
    );
    if (steps.length > 0)
      out.push(
        `stack size, ${op} provider CPU per added resource: ${steps.map((s) => `${s.perUnit} ms (${s.from} -> ${s.to})`).join(", ")}`,
      );
  }
  return out;
}

/** Paired ratios a.runs[i] / b.runs[i] (measured side by side), their median; null if unpaired. */
function pairedRatio(a: Figure | null | undefined, b: Figure | null | undefined): number | null {
  if (!a || !b || a.runs.length === 0 || a.runs.length !== b.runs.length) return null;
  return round(median(a.runs.map((x, i) => x / (b.runs[i] ?? Number.NaN))), 3);
}

/**
 * The queue floor beside the CPU target: what the same requests cost the bare server per job, as a
 * multiple of its bare request, and the service's cost as a multiple of the floor.
 */
function queueFloorNote(r: Results, jobCpu: number, bareCpu: number): string | undefined {
  const floor = r.queueFloor?.cpuPerJobUs.server.median;
  if (!floor) return undefined;
  return `queue floor ${floor} us per job (${round(floor / bareCpu, 2)}x a bare request; the service ${round(jobCpu / floor, 2)}x the floor)`;
}

export function targets(r: Results): Target[] {
  const out: Target[] = [];
  if (r.runRate) {
    out.push(atLeast("/run accepted per second", r.runRate.service.median, 10_000, "/s"));
    out.push(atLeast("/run service / bare ceiling", r.runRate.ratio.median, 0.35, "ratio"));
  }
  const four = [...(r.endToEnd ?? []), ...(r.e2eWorkers ?? [])].find(
    (row) => row.workers === 4 && row.endpoints === 1,
  );
  if (four) out.push(atLeast("end-to-end jobs/s, 4 workers", four.jobsPerSec.median, 2_000, "jobs/s"));
  const bareCpu = r.runRate?.ceilingCpuPerRequestUs?.median;
  const jobCpu = four?.cpuPerJobUs?.service.median;
  if (bareCpu && jobCpu !== undefined) {
    out.push(
      atMost(
        "service CPU per completed job / bare server CPU per request (4 workers)",
        round(jobCpu / bareCpu, 2),
        6,
        "x",
        [`${jobCpu} us per job, ${bareCpu} us per bare request`, queueFloorNote(r, jobCpu, bareCpu)]
          .filter(Boolean)
          .join("; "),
      ),
    );
  }
  if (r.runSync) {
    if (r.runSync.p50OverBare) {
      out.push(
        atMost(
          "/runsync no-op p50 / bare keep-alive round trip p50",
          r.runSync.p50OverBare.median,
          4,
          "x",
          `${r.runSync.p50Ms.median} ms vs ${r.runSync.bareP50Ms.median} ms`,
        ),
      );
    }
    const floors = [
      r.runSync.relayP99Ms && `relay floor p99 ${r.runSync.relayP99Ms.median} ms`,
      r.runSync.bareP99Ms && `bare round trip p99 ${r.runSync.bareP99Ms.median} ms`,
      r.runSync.warmup &&
        `after ${r.runSync.warmup.requests} warm-up requests, whose own p99 was ${round(r.runSync.warmup.p99Ms, 3)} ms`,
    ].filter(Boolean);
    out.push(
      atMost(
        "/runsync no-op p99",
        r.runSync.p99Ms.median,
        3,
        "ms",
        floors.length > 0 ? floors.join(", ") : undefined,
      ),
    );
  }
  const empty = r.queued?.rssEmptyMb.median ?? r.queueDepth?.emptyRssMb;
  if (empty !== undefined) out.push(atMost("RSS of the empty service", round(empty, 1), 70, "MB"));
  // The 100,000-job bars apply to a run of at least that many (a --quick run queues fewer).
  if (r.queued && r.queued.jobs >= 100_000) {
    const worst = Math.max(r.queued.rssAfterSubmitMb.median, r.queued.rssAfterRestartMb.median);
    out.push(
      atMost(
        `RSS with ${r.queued.jobs} queued jobs (worse of submit/restart)`,
        worst,
        150,
        "MB",
        `${r.queued.rssAfterSubmitMb.median} after submit, ${r.queued.rssAfterRestartMb.median} after restart`,
      ),
    );
    out.push(
      atMost(
        `restart with ${r.queued.jobs} queued jobs`,
        r.queued.restartMs.median,
        600,
        "ms",
        `${r.queued.restartCpuMs.median} ms of CPU`,
      ),
    );
  }
  const million = r.queueDepth?.points.find((p) => p.depth >= 1_000_000);
  if (million) {
    out.push(
      atMost(
        `RSS with ${million.depth} queued jobs (worse of submit/restart)`,
        round(Math.max(million.rssMb, million.rssAfterRestartMb), 1),
        600,
        "MB",
        `${round(million.rssMb, 1)} after submit, ${round(million.rssAfterRestartMb, 1)} after restart`,
      ),
    );
    out.push(
      atMost(
        `restart with ${million.depthAfterWindows} queued jobs`,
        round(million.restartMs, 0),
        5_000,
        "ms",
      ),
    );
  }
  if (r.sdk) {
    const bare = r.sdk.bare;
    const overUndici = pairedRatio(bare.ours.cpuPerCallUs, bare.undici.cpuPerCallUs);
    if (overUndici !== null)
      out.push(
        atMost(
          "SDK CPU per call / raw undici Pool's, bare server",
          overUndici,
          1.15,
          "x",
          `${bare.ours.cpuPerCallUs.median} vs ${bare.undici.cpuPerCallUs.median} us/call`,
        ),
      );
    const overOfficial = pairedRatio(bare.official.cpuPerCallUs, bare.ours.cpuPerCallUs);
    if (overOfficial !== null)
      out.push(atLeast("official client CPU per call / SDK's, bare server", overOfficial, 4, "x"));
    out.push(atLeast("SDK / official cycle rate, bare server", bare.ratio.median, 4, "x"));
    out.push(atLeast("SDK / official cycle rate, local service", r.sdk.service.ratio.median, 1.5, "x"));
  }
  if (r.provider) {
    const o = r.provider.operations;
    const max = (op: keyof typeof o, key: "writes" | "reads") =>
      Math.max(o[op].perResource.template[key], o[op].perResource.endpoint[key]);
    out.push(atMost("provider create: writes per resource", max("create", "writes"), 1, "calls"));
    out.push(atMost("provider create: reads per resource", max("create", "reads"), 1, "calls"));
    out.push(atMost("provider no-op up: writes per resource", max("noopUpdate", "writes"), 0, "calls"));
    out.push(atMost("provider refresh: reads per resource", max("refresh", "reads"), 1, "calls"));
    out.push(atLeast("provider refresh: reads per resource", max("refresh", "reads"), 1, "calls"));
  }
  const sizes = r.stackSize?.points ?? [];
  const largest = sizes.reduce<(typeof sizes)[number] | undefined>(
    (a, p) => (!a || p.resources > a.resources ? p : a),
    undefined,
  );
  if (largest && largest.resources >= 500) {
    const noop = largest.operations.noopUpdate;
    out.push(
      atMost(
        `no-op up of ${largest.resources} resources: API calls`,
        Math.max(...noop.totalCallsPerCycle),
        0,
        "calls",
      ),
    );
    const hundred = sizes.find((p) => p.resources === 100);
    if (hundred) {
      out.push(
        atMost(
          `no-op up provider CPU per resource, ${largest.resources} / 100 resources (linear: <= ${LINEAR_FACTOR})`,
          linearity(
            { resources: 100, ms: hundred.operations.noopUpdate.providerCpuMs.median },
            { resources: largest.resources, ms: noop.providerCpuMs.median },
          ),
          LINEAR_FACTOR,
          "x",
          `${hundred.operations.noopUpdate.providerCpuMsPerResource.median} -> ${noop.providerCpuMsPerResource.median} ms/resource`,
        ),
      );
    }
  }
  return out;
}

export function targetLines(list: Target[]): string[] {
  const width = Math.max(...list.map((t) => t.name.length));
  return list.map((t) => {
    const verdict = t.met === null ? "n/a " : t.met ? "MET " : "MISS";
    const note = t.note ? `; ${t.note}` : "";
    return `${verdict}  ${t.name.padEnd(width)}  ${t.value} ${t.unit} (target ${t.target}${note})`;
  });
}
