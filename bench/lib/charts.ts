/**
 * The curves as SVG charts (bench/charts/*.svg, embedded in bench/README.md): which charts a result
 * set gives (`chartSpecs`, pure) and drawing them with Vega-Lite compiled to Vega, rendered headless
 * by `view.toSVG()` (no canvas, no browser).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { TopLevelSpec } from "vega-lite";
import { CURVE_OPERATIONS, type CurveOperation, type StackSizePoint } from "../suites/provider";
import type { Results } from "./report";

export interface Series {
  name: string;
  points: { x: number; y: number }[];
}

export interface Chart {
  /** File name under the charts directory, e.g. "queue-depth-cpu.svg". */
  file: string;
  title: string;
  x: { title: string; log: boolean };
  y: { title: string };
  series: Series[];
}

const finite = (points: { x: number; y: number }[]) =>
  points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));

function chart(file: string, title: string, x: Chart["x"], y: string, series: Series[]): Chart {
  return {
    file,
    title,
    x,
    y: { title: y },
    series: series.map((s) => ({ ...s, points: finite(s.points) })).filter((s) => s.points.length > 0),
  };
}

/** The charts the results hold (a curve that did not run gives none). */
export function chartSpecs(r: Results): Chart[] {
  const out: Chart[] = [];
  const depth = r.queueDepth;
  if (depth) {
    const x = { title: "jobs in the queue", log: true };
    const filled = depth.points.filter((p) => p.fill);
    out.push(
      chart("queue-depth-cpu.svg", "Service CPU per /run against queue depth", x, "us of CPU per request", [
        {
          name: "window at depth",
          points: depth.points.map((p) => ({ x: p.depth, y: p.cpuPerRequestUs.median })),
        },
        {
          name: "fill up to depth",
          points: filled.map((p) => ({ x: p.depth, y: p.fill?.cpuPerRequestUs ?? Number.NaN })),
        },
      ]),
    );
    out.push(
      chart("queue-depth-rate.svg", "/run accepted per second against queue depth", x, "/run per second", [
        { name: "window at depth", points: depth.points.map((p) => ({ x: p.depth, y: p.runPerSec.median })) },
        {
          name: "fill up to depth",
          points: filled.map((p) => ({ x: p.depth, y: p.fill?.perSec ?? Number.NaN })),
        },
      ]),
    );
    out.push(
      chart("queue-depth-rss.svg", "Service RSS against queue depth", x, "RSS, MB", [
        { name: "after filling", points: depth.points.map((p) => ({ x: p.depth, y: p.rssMb })) },
        {
          name: "after restart",
          points: depth.points.map((p) => ({ x: p.depthAfterWindows, y: p.rssAfterRestartMb })),
        },
        {
          name: "V8 heap in use, after filling",
          points: depth.points.map((p) => ({ x: p.depth, y: p.heapMb })),
        },
      ]),
    );
    out.push(
      chart("queue-depth-restart.svg", "Restart time against queue depth", x, "spawn to ready, ms", [
        { name: "restart", points: depth.points.map((p) => ({ x: p.depthAfterWindows, y: p.restartMs })) },
        {
          name: "CPU of the new process to ready",
          points: depth.points.map((p) => ({ x: p.depthAfterWindows, y: p.restartCpuMs })),
        },
        {
          name: "of which startService",
          points: depth.points.map((p) => ({ x: p.depthAfterWindows, y: p.startServiceMs })),
        },
      ]),
    );
  }
  const e2e = (
    name: string,
    rows: Results["e2eWorkers"],
    xTitle: string,
    xOf: (workers: number, endpoints: number) => number,
  ) => {
    if (!rows || rows.length === 0) return;
    const x = { title: xTitle, log: true };
    const at = (row: (typeof rows)[number]) => xOf(row.workers, row.endpoints);
    out.push(
      chart(`e2e-${name}.svg`, `End to end: jobs per second against ${xTitle}`, x, "jobs per second", [
        { name: "jobs/s", points: rows.map((row) => ({ x: at(row), y: row.jobsPerSec.median })) },
        {
          name: "2-core bound at that CPU per job",
          points: rows.map((row) => ({ x: at(row), y: row.cpuBoundJobsPerSec?.median ?? Number.NaN })),
        },
      ]),
    );
    const cpu = (pick: "service" | "workers" | "client") =>
      rows.map((row) => ({ x: at(row), y: row.cpuPerJobUs?.[pick].median ?? Number.NaN }));
    out.push(
      chart(`e2e-${name}-cpu.svg`, `End to end: CPU per job against ${xTitle}`, x, "us of CPU per job", [
        {
          name: "total",
          points: rows.map((row) => {
            const c = row.cpuPerJobUs;
            return { x: at(row), y: c ? c.service.median + c.workers.median + c.client.median : Number.NaN };
          }),
        },
        { name: "service", points: cpu("service") },
        { name: "workers", points: cpu("workers") },
        { name: "client", points: cpu("client") },
      ]),
    );
  };
  e2e("workers", r.e2eWorkers, "workers", (workers) => workers);
  e2e("endpoints", r.e2eEndpoints, "endpoints (1 worker each)", (_, endpoints) => endpoints);
  const stackPoints = r.stackSize?.points ?? [];
  if (stackPoints.length > 0) {
    const x = { title: "resources in the stack", log: true };
    const per = (pick: (p: StackSizePoint, op: CurveOperation) => number) =>
      CURVE_OPERATIONS.map((op) => ({
        name: op,
        points: stackPoints.map((p) => ({ x: p.resources, y: pick(p, op) })),
      }));
    out.push(
      chart(
        "stack-size-time.svg",
        "Provider: wall time against stack size",
        x,
        "ms",
        per((p, op) => p.operations[op].wallMs.median),
      ),
    );
    out.push(
      chart(
        "stack-size-per-resource.svg",
        "Provider: provider-side CPU per resource against stack size",
        x,
        "ms of CPU per resource (engine, program, provider host)",
        per((p, op) => p.operations[op].providerCpuMsPerResource.median),
      ),
    );
    out.push(
      chart(
        "stack-size-calls.svg",
        "Provider: API calls against stack size",
        x,
        "API calls (at the service)",
        per((p, op) => Math.max(...p.operations[op].totalCallsPerCycle)),
      ),
    );
  }
  return out;
}

/** The Vega-Lite specification of a chart: lines with points, one colour per series. */
export function vegaLiteSpec(c: Chart): TopLevelSpec {
  const values = c.series.flatMap((s) => s.points.map((p) => ({ x: p.x, y: p.y, series: s.name })));
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: c.title,
    width: 440,
    height: 240,
    background: "white",
    data: { values },
    mark: { type: "line", point: true },
    encoding: {
      x: {
        field: "x",
        type: "quantitative",
        title: c.x.title,
        scale: c.x.log ? { type: "log" } : { zero: false },
        axis: { format: "~s" },
      },
      y: { field: "y", type: "quantitative", title: c.y.title, scale: { zero: true } },
      color: { field: "series", type: "nominal", title: null, legend: { orient: "bottom", labelLimit: 400 } },
    },
  };
}

/** Draws every chart into `dir` (created if needed); returns the files written. */
export async function renderCharts(charts: readonly Chart[], dir: string): Promise<string[]> {
  if (charts.length === 0) return [];
  const vega = await import("vega");
  const vegaLite = await import("vega-lite");
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const c of charts) {
    const compiled = vegaLite.compile(vegaLiteSpec(c)).spec;
    const view = new vega.View(vega.parse(compiled), { renderer: "none" });
    const svg = await view.toSVG();
    view.finalize();
    const file = join(dir, c.file);
    await writeFile(file, `${svg}\n`);
    written.push(file);
  }
  return written;
}
