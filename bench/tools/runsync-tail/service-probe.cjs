"use strict";
/**
 * Preloaded into the bench service (`--require`) by bench/tools/runsync-tail.ts: timestamps of every
 * HTTP request's arrival (Node's `http.server.request.start` channel) and of its reply being handed
 * to the socket (`response.end`), and every GC pause, on CLOCK_MONOTONIC (process.hrtime, shared by
 * all processes of the machine). Events go to preallocated typed arrays (the probe adds no live
 * objects for the GC to move). A request to /runsync-tail-dump?file=<path> writes them there.
 * Diagnosis only.
 */
const dc = require("node:diagnostics_channel");
const { writeFileSync } = require("node:fs");
const { PerformanceObserver, performance } = require("node:perf_hooks");

const now = () => Number(process.hrtime.bigint()) / 1e6;
/** CLOCK_MONOTONIC (ms) at performance.now() 0. */
const perfBase = now() - performance.now();
const SIZE = 1 << 18;
const times = new Float64Array(SIZE);
const durations = new Float64Array(SIZE);
/** Kind: 1 arrival, 2 reply, 3 GC, 4 message to a thread, 5 a thread's reply, 6 a slow SQLite call; route: 1 /runsync, 2 job-take, 3 job-done, 0 other (GC: its kind). */
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
const KIND = ["", "req", "fin", "gc", "thread-ask", "thread-reply", "sqlite"];

// SQLite calls of the main thread slower than 0.3 ms (kind 6; route: 1 exec, 2 run, 3 get, 4 all,
// 5 a PRAGMA statement), stamped at their start with their duration.
const sqlite = require("node:sqlite");
const wrap = (proto, name, code) => {
  const original = proto[name];
  proto[name] = function (...args) {
    const t = now();
    try {
      return original.apply(this, args);
    } finally {
      const d = now() - t;
      if (d > 0.3) push(t, 6, name !== "exec" && String(this.sourceSQL).startsWith("PRAGMA") ? 5 : code, d);
    }
  };
};
wrap(sqlite.DatabaseSync.prototype, "exec", 1);
wrap(sqlite.StatementSync.prototype, "run", 2);
wrap(sqlite.StatementSync.prototype, "get", 3);
wrap(sqlite.StatementSync.prototype, "all", 4);

// Messages to and from worker threads (the store's WAL checkpointer): asked, answered.
const { Worker } = require("node:worker_threads");
const post = Worker.prototype.postMessage;
Worker.prototype.postMessage = function (...args) {
  push(now(), 4, 0, 0);
  return post.apply(this, args);
};
const emit = Worker.prototype.emit;
Worker.prototype.emit = function (name, ...args) {
  if (name === "message") push(now(), 5, 0, 0);
  return emit.call(this, name, ...args);
};

dc.subscribe("http.server.request.start", ({ request, response }) => {
  const url = request.url ?? "";
  if (url.startsWith("/runsync-tail-dump")) {
    const file = new URL(url, "http://x").searchParams.get("file");
    const events = [];
    for (let i = 0; i < n; i++) {
      const route =
        kinds[i] === 3 || kinds[i] === 6
          ? String(routes[i])
          : (["other", "/runsync", "/job-take", "/job-done"][routes[i]] ?? "");
      events.push([times[i], KIND[kinds[i]], route, durations[i]]);
    }
    if (file) writeFileSync(file, JSON.stringify({ pid: process.pid, events }));
    n = 0;
    return;
  }
  const route = url.includes("/runsync")
    ? 1
    : url.includes("/job-take")
      ? 2
      : url.includes("/job-done")
        ? 3
        : 0;
  push(now(), 1, route, 0);
  const end = response.end;
  response.end = function (...args) {
    push(now(), 2, route, 0);
    return end.apply(this, args);
  };
});

new PerformanceObserver((list) => {
  for (const entry of list.getEntries())
    push(perfBase + entry.startTime, 3, entry.detail?.kind ?? 0, entry.duration);
}).observe({ entryTypes: ["gc"] });
