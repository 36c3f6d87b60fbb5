/** The printed table and the targets, from the suites' results. */
import type { EndToEndRow } from "../suites/end-to-end";
import type { QueuedMemory, RunSyncLatency } from "../suites/latency-memory";
import type { ProviderResult } from "../suites/provider";
import type { RunRateResult } from "../suites/run-rate";
import type { SdkResult, StreamThroughput } from "../suites/sdk";
import { atLeast, atMost, type Figure, type Target } from "./figures";

export interface Results {
  runRate?: RunRateResult;
  endToEnd?: EndToEndRow[];
  runSync?: RunSyncLatency;
  queued?: QueuedMemory;
  sdk?: SdkResult;
  stream?: StreamThroughput;
  provider?: ProviderResult;
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
  for (const row of r.endToEnd ?? []) {
    rows.push([`end-to-end, ${row.workers} worker(s)`, f(row.jobsPerSec)]);
    const cpu = row.cpuPerJobUs;
    if (cpu) {
      rows.push([
        `  CPU/job service+workers+client`,
        `${cpu.service.median}+${cpu.workers.median}+${cpu.client.median} us; 2-core bound ${row.cpuBoundJobsPerSec?.median} jobs/s`,
      ]);
    }
  }
  if (r.runSync) {
    rows.push(["/runsync no-op p50", f(r.runSync.p50Ms)]);
    rows.push(["/runsync no-op p99", f(r.runSync.p99Ms)]);
    rows.push(["direct handler call p50", f(r.runSync.directCallP50Ms)]);
    rows.push(["/runsync overhead over direct call (p50)", f(r.runSync.overheadP50Ms)]);
  }
  if (r.queued) {
    rows.push([`RSS with ${r.queued.jobs} queued (after submit)`, f(r.queued.rssAfterSubmitMb)]);
    rows.push([`RSS with ${r.queued.jobs} queued (after restart)`, f(r.queued.rssAfterRestartMb)]);
    rows.push(["restart with them in the store", f(r.queued.restartMs)]);
    rows.push(["  of which startService", f(r.queued.startServiceMs)]);
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
  const width = Math.max(...rows.map(([name]) => name.length));
  return rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`);
}

export function targets(r: Results): Target[] {
  const out: Target[] = [];
  if (r.runRate) {
    out.push(atLeast("/run accepted per second", r.runRate.service.median, 10_000, "/s"));
    out.push(atLeast("/run service / bare ceiling", r.runRate.ratio.median, 0.35, "ratio"));
  }
  const four = r.endToEnd?.find((row) => row.workers === 4);
  if (four) out.push(atLeast("end-to-end jobs/s, 4 workers", four.jobsPerSec.median, 2_000, "jobs/s"));
  if (r.runSync) {
    out.push(atMost("/runsync no-op p50", r.runSync.p50Ms.median, 2, "ms"));
    out.push(atMost("/runsync no-op p99", r.runSync.p99Ms.median, 10, "ms"));
  }
  if (r.queued) {
    const worst = Math.max(r.queued.rssAfterSubmitMb.median, r.queued.rssAfterRestartMb.median);
    out.push(atMost("RSS with 100,000 queued jobs (worse of submit/restart)", worst, 250, "MB"));
    out.push(atMost("restart with 100,000 queued jobs", r.queued.restartMs.median, 3_000, "ms"));
  }
  if (r.sdk) {
    out.push(atLeast("SDK / official cycle rate, bare server", r.sdk.bare.ratio.median, 4, "x"));
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
  return out;
}

export function targetLines(list: Target[]): string[] {
  const width = Math.max(...list.map((t) => t.name.length));
  return list.map((t) => {
    const verdict = t.met === null ? "n/a " : t.met ? "MET " : "MISS";
    return `${verdict}  ${t.name.padEnd(width)}  ${t.value} ${t.unit} (target ${t.target})`;
  });
}
