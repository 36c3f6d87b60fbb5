"use strict";
/**
 * The handler module of the instrumented worker (bench/tools/runsync-tail.ts): the echo handler,
 * with timestamps (CLOCK_MONOTONIC, as service-probe.cjs) of the worker's HTTP requests (undici's
 * diagnostics channels: headers sent, reply headers), of each handler call, and of its GC pauses,
 * into preallocated typed arrays. A job with input { tailDump: <path> } writes them there.
 * Diagnosis only.
 */
const dc = require("node:diagnostics_channel");
const { writeFileSync } = require("node:fs");
const { PerformanceObserver, performance } = require("node:perf_hooks");

// V8 flags to try in the worker (the endpoint's env, set by the tool's --worker-flags), set as it loads.
for (const flag of (process.env.TAIL_WORKER_V8_FLAGS ?? "").split(" ").filter(Boolean)) {
  require("node:v8").setFlagsFromString(flag);
}

const now = () => Number(process.hrtime.bigint()) / 1e6;
const perfBase = now() - performance.now();
const SIZE = 1 << 18;
const times = new Float64Array(SIZE);
const durations = new Float64Array(SIZE);
/** Kind: 1 request headers sent, 2 reply headers, 3 GC, 4 handler called; route: 2 job-take, 3 job-done, 0 other. */
const kinds = new Uint8Array(SIZE);
const routes = new Uint8Array(SIZE);
let n = 0;
const push = (t, kind, route, duration) => {
  if (n === SIZE) return;
  times[n] = t;
  kinds[n] = kind;
  routes[n] = route;
  durations[n] = duration;
  n++;
};
const KIND = ["", "sent", "hdrs", "gc", "handler"];
const routeOf = (path) => (path.includes("/job-take") ? 2 : path.includes("/job-done") ? 3 : 0);

dc.subscribe("undici:client:sendHeaders", ({ request }) => push(now(), 1, routeOf(request.path), 0));
dc.subscribe("undici:request:headers", ({ request }) => push(now(), 2, routeOf(request.path), 0));

new PerformanceObserver((list) => {
  for (const entry of list.getEntries())
    push(perfBase + entry.startTime, 3, entry.detail?.kind ?? 0, entry.duration);
}).observe({ entryTypes: ["gc"] });

async function handler(job) {
  push(now(), 4, 0, 0);
  const dump = job.input?.tailDump;
  if (typeof dump === "string") {
    const events = [];
    for (let i = 0; i < n; i++) {
      const route =
        kinds[i] === 3 ? String(routes[i]) : (["", "", "/job-take", "/job-done"][routes[i]] ?? "");
      events.push([times[i], KIND[kinds[i]], route, durations[i]]);
    }
    writeFileSync(dump, JSON.stringify({ pid: process.pid, events }));
    n = 0;
  }
  return job.input;
}

module.exports = { handler, config: { concurrency: 8 } };
