/**
 * `npx tsx bench/tools/runsync-tail.ts [--requests 2000] [--warmup 200] [--top 40] [--json out.json]
 * [--worker-flags "<V8 flags>"] [--client-request] [-- <node flags for the service>]`: where the
 * slowest /runsync requests spend their time. Needs the bench build (`npm run bench` makes it, or
 * `npx tsc -p bench/tsconfig.json`). The runsync suite's loop (one request at a time, one keep-alive
 * connection, one worker; this process is the client) against a service started from the build with
 * `runsync-tail/service-probe.cjs` preloaded, and a worker running `runsync-tail/worker-probe.cjs`
 * (the echo handler with probes). Every process stamps its events on CLOCK_MONOTONIC, so each request
 * splits into phases:
 *
 *   client -> service arrival -> job-take reply written -> worker has the reply -> handler called ->
 *   job-done sent -> job-done arrival -> /runsync reply written -> client has it
 *
 * and, per request: the run-queue wait and run time of each process's main thread (/proc/<pid>/
 * schedstat, read by the client just before and after each request), the GC pauses of the service,
 * the worker and the client, whether the service's WAL checkpoint thread was working, and the
 * service's SQLite calls slower than 0.3 ms. Prints the phases' medians over all requests and over
 * the slowest `top`, the cause of each slow request (the largest of those covering half its excess
 * over the median; a run-queue wait while our three processes ran less than half of it is marked
 * "cores busy elsewhere"), and the machine's busy time beside our processes' CPU (main thread and
 * other threads) over the timed loop, and each process's GC pauses by kind over the timed loop (the
 * whole process's, start-up and warm-up included, in brackets). `--worker-flags` are V8 flags the
 * worker sets as it loads (`--trace-gc`: its GC lines, read back from the service's logs). Diagnosis
 * only: the probes cost a little on every request.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PerformanceObserver, performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { type Dispatcher, Pool } from "undici";
import { BENCH_API_KEY, splitNodeFlags, startService, tempDataDir, waitForIdleWorkers } from "../lib/servers";

type Event = [t: number, kind: string, label: string, duration?: number];
interface Dump {
  pid: number;
  events: Event[];
}

const now = () => Number(process.hrtime.bigint()) / 1e6;

/** The client's own GC pauses (this process runs the client loop), on the same clock. */
const clientGc: Event[] = [];
const perfBase = now() - performance.now();
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
    clientGc.push([perfBase + entry.startTime, "gc", String(kind), entry.duration]);
  }
}).observe({ entryTypes: ["gc"] });

/** [run ns, run-queue wait ns] of a process's main thread. */
function schedstat(pid: number): [number, number] {
  const [run = "0", wait = "0"] = readFileSync(`/proc/${pid}/schedstat`, "utf8").trim().split(" ");
  return [Number(run), Number(wait)];
}

/** Run time (ms) of a process's threads: its main thread, and all its other threads together. */
function threadRuns(pid: number): { main: number; others: number } {
  let others = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    if (Number(tid) === pid) continue;
    try {
      others += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
    } catch {
      // The thread ended.
    }
  }
  return { main: schedstat(pid)[0] / 1e6, others };
}

/** One POST, its reply read whole (as bench/clients/runsync.ts does). */
function post(
  pool: Pool,
  options: { origin: string; path: string; headers: Record<string, string>; body: string },
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    let status = 0;
    const chunks: Buffer[] = [];
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: () => {},
      onResponseStart: (_controller, statusCode) => {
        status = statusCode;
      },
      onResponseData: (_controller, chunk) => {
        chunks.push(chunk);
      },
      onResponseEnd: () => resolve({ status, text: Buffer.concat(chunks).toString("utf8") }),
      onResponseError: (_controller, error) => reject(error),
    };
    pool.dispatch({ ...options, method: "POST" }, handler);
  });
}

interface Sample {
  i: number;
  jobId: string;
  sent: number;
  received: number;
  /** Run-queue wait during the request, ms: client, service, worker. */
  waitMs: [number, number, number];
  /** CPU run time during the request, ms: client, service, worker. */
  runMs: [number, number, number];
}

const PHASES = [
  "client->svc",
  "svc->take written",
  "take->worker hdrs",
  "hdrs->handler",
  "handler->done sent",
  "done sent->svc",
  "done->reply written",
  "reply->client",
] as const;

interface Row {
  ms: number;
  phases: number[];
  waitMs: [number, number, number];
  runMs: [number, number, number];
  gcService: number;
  gcWorker: number;
  gcClient: number;
  /** A worker thread of the service (the WAL checkpointer) was working during the request. */
  thread: boolean;
  /** Slow SQLite calls of the service's main thread during the request, ms. */
  sqliteMs: number;
  gcKinds: string;
}

function after(events: Event[], from: number, to: number, test: (e: Event) => boolean): Event | undefined {
  for (const e of events) if (e[0] >= from && e[0] <= to && test(e)) return e;
  return undefined;
}

function gcWithin(events: Event[], from: number, to: number): Event[] {
  return events.filter((e) => e[1] === "gc" && e[0] + (e[3] ?? 0) >= from && e[0] <= to);
}

function analyse(samples: Sample[], service: Dump, worker: Dump): Row[] {
  const rows: Row[] = [];
  for (const s of samples) {
    const from = s.sent;
    const to = s.received;
    const at = (events: Event[], since: number, kind: string, route: string) =>
      after(events, since, to, (e) => e[1] === kind && e[2] === route)?.[0] ?? Number.NaN;
    const arr = at(service.events, from, "req", "/runsync");
    const take = at(service.events, arr, "fin", "/job-take");
    const handler = at(worker.events, from, "handler", "");
    let hdrs = Number.NaN;
    for (const e of worker.events) {
      if (e[0] > handler) break;
      if (e[0] >= from && e[1] === "hdrs" && e[2] === "/job-take") hdrs = e[0];
    }
    const sent = at(worker.events, handler, "sent", "/job-done");
    const doneArr = at(service.events, sent, "req", "/job-done");
    const reply = at(service.events, doneArr, "fin", "/runsync");
    const marks = [from, arr, take, hdrs, handler, sent, doneArr, reply, to];
    const phases = PHASES.map((_, k) => (marks[k + 1] as number) - (marks[k] as number));
    const gcS = gcWithin(service.events, from, to);
    const gcW = gcWithin(worker.events, from, to);
    const gcC = gcWithin(clientGc, from, to);
    let asked = Number.NaN;
    let thread = false;
    for (const e of service.events) {
      if (e[0] > to) break;
      if (e[1] === "thread-ask") asked = e[0];
      else if (e[1] === "thread-reply") {
        if (asked <= to && e[0] >= from) thread = true;
        asked = Number.NaN;
      }
    }
    rows.push({
      ms: to - from,
      phases,
      waitMs: s.waitMs,
      runMs: s.runMs,
      gcService: gcS.reduce((n, e) => n + (e[3] ?? 0), 0),
      gcWorker: gcW.reduce((n, e) => n + (e[3] ?? 0), 0),
      gcClient: gcC.reduce((n, e) => n + (e[3] ?? 0), 0),
      thread,
      sqliteMs: service.events
        .filter((e) => e[1] === "sqlite" && e[0] >= from && e[0] <= to)
        .reduce((n, e) => n + (e[3] ?? 0), 0),
      gcKinds: [
        ...gcS.map((e) => `s${e[2]}`),
        ...gcW.map((e) => `w${e[2]}`),
        ...gcC.map((e) => `c${e[2]}`),
      ].join(","),
    });
  }
  return rows;
}

const median = (xs: number[]) => {
  const v = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return v.length === 0 ? Number.NaN : (v[Math.floor(v.length / 2)] as number);
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const quantile = (xs: number[], q: number) => {
  const v = [...xs].sort((a, b) => a - b);
  return v[Math.min(v.length - 1, Math.floor(q * v.length))] ?? Number.NaN;
};

function summarise(label: string, rows: Row[]): void {
  const f = (x: number) => x.toFixed(3).padStart(7);
  console.log(
    `${label.padEnd(14)} n=${String(rows.length).padStart(4)} total ${f(median(rows.map((r) => r.ms)))} | ${PHASES.map(
      (_, k) => f(median(rows.map((r) => r.phases[k] as number))),
    ).join(
      " ",
    )} | wait c/s/w ${[0, 1, 2].map((k) => f(mean(rows.map((r) => r.waitMs[k] as number)))).join(" ")}` +
      ` | gc s/w ${f(mean(rows.map((r) => r.gcService)))} ${f(mean(rows.map((r) => r.gcWorker)))}` +
      ` | with gc ${rows.filter((r) => r.gcService + r.gcWorker + r.gcClient > 0).length}` +
      ` | checkpointing ${rows.filter((r) => r.thread).length}` +
      ` | slow sqlite ${rows.filter((r) => r.sqliteMs > 0).length}`,
  );
}

async function main(): Promise<void> {
  const { args, nodeFlags } = splitNodeFlags(process.argv.slice(2));
  const { values } = parseArgs({
    args,
    options: {
      requests: { type: "string", default: "2000" },
      warmup: { type: "string", default: "200" },
      top: { type: "string", default: "40" },
      json: { type: "string" },
      "worker-flags": { type: "string", default: "" },
      /** The client reads replies through undici's request() (as bench/clients/runsync.ts did), not a dispatch handler. */
      "client-request": { type: "boolean", default: false },
    },
  });
  const requests = Number(values.requests);
  const warmup = Number(values.warmup);
  const dir = await mkdtemp(join(tmpdir(), "runsync-tail-"));
  const data = await tempDataDir();
  const probes = join(__dirname, "runsync-tail");
  const svc = await startService(
    { data: data.file, handlers: { "bench/tail": `module:${join(probes, "worker-probe.cjs")}` } },
    { execArgv: ["--require", join(probes, "service-probe.cjs"), ...nodeFlags] },
  );
  try {
    const template = await svc.rest.templates.create({
      name: "tail-template",
      imageName: "bench/tail",
      isServerless: true,
      env: { TAIL_WORKER_V8_FLAGS: values["worker-flags"] ?? "" },
    });
    const endpoint = await svc.rest.endpoints.create({
      name: "tail",
      templateId: template.id,
      workersMin: 1,
      workersMax: 1,
      flashboot: true,
      idleTimeout: 3600,
    });
    const endpointId = endpoint.id;
    await waitForIdleWorkers(svc, endpointId, 1);
    const servicePid = svc.ready.pid;
    const children = readFileSync(`/proc/${servicePid}/task/${servicePid}/children`, "utf8")
      .trim()
      .split(/\s+/);
    const workerPid = Number(
      children.find((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("main.js")),
    );
    const origin = new URL(svc.ready.queueUrl).origin;
    const pool = new Pool(origin, { connections: 1 });
    const path = `/v2/${endpointId}/runsync`;
    const headers = { authorization: `Bearer ${BENCH_API_KEY}`, "content-type": "application/json" };
    const pids = [process.pid, servicePid, workerPid];
    const samples: Sample[] = [];
    const cpuStat = () =>
      (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").split(/\s+/).slice(1).map(Number);
    let threadsBefore = pids.map(threadRuns);
    let statBefore = cpuStat();
    let timedFrom = now();
    for (let i = 0; i < warmup + requests; i++) {
      const body = JSON.stringify({ input: { n: i } });
      const before = pids.map(schedstat);
      const sent = now();
      let envelope: { id: string; status?: string };
      if (values["client-request"]) {
        const reply = await pool.request({ origin, path, method: "POST", headers, body });
        envelope = (await reply.body.json()) as typeof envelope;
      } else {
        envelope = JSON.parse((await post(pool, { origin, path, headers, body })).text) as typeof envelope;
      }
      const received = now();
      const afterStats = pids.map(schedstat);
      if (envelope.status !== "COMPLETED") throw new Error(`request ${i}: ${JSON.stringify(envelope)}`);
      const delta = (k: number, f: 0 | 1) =>
        ((afterStats[k] as [number, number])[f] - (before[k] as [number, number])[f]) / 1e6;
      if (i === warmup - 1) {
        threadsBefore = pids.map(threadRuns);
        statBefore = cpuStat();
        timedFrom = now();
      }
      if (i >= warmup) {
        samples.push({
          i,
          jobId: envelope.id,
          sent,
          received,
          waitMs: [delta(0, 1), delta(1, 1), delta(2, 1)],
          runMs: [delta(0, 0), delta(1, 0), delta(2, 0)],
        });
      }
    }
    const timedTo = now();
    const timedMs = timedTo - timedFrom;
    const threadsAfter = pids.map(threadRuns);
    const statAfter = cpuStat();
    // /proc/stat's first line: user nice system idle iowait irq softirq steal ... (clock ticks, 100 a second).
    const ticks = statAfter.map((v, k) => v - (statBefore[k] ?? 0));
    const busyMs = ((ticks.reduce((a, b) => a + b, 0) - (ticks[3] ?? 0) - (ticks[4] ?? 0)) * 1000) / 100;
    const names = ["client", "service", "worker"];
    const ours = threadsAfter.map((t, k) => ({
      main: t.main - (threadsBefore[k]?.main ?? 0),
      others: t.others - (threadsBefore[k]?.others ?? 0),
    }));
    const oursMs = ours.reduce((n, t) => n + t.main + t.others, 0);
    console.log(
      `timed loop ${timedMs.toFixed(0)} ms on 2 cores: machine busy ${busyMs.toFixed(0)} ms, ours ${oursMs.toFixed(0)} ms (${ours
        .map((t, k) => `${names[k]} main ${t.main.toFixed(0)} + threads ${t.others.toFixed(0)}`)
        .join(", ")}), others' ${(busyMs - oursMs).toFixed(0)} ms`,
    );
    const workerFile = join(dir, "worker.json");
    const serviceFile = join(dir, "service.json");
    const dumped = await pool.request({
      origin,
      path,
      method: "POST",
      headers,
      body: JSON.stringify({ input: { tailDump: workerFile } }),
    });
    await dumped.body.dump();
    const asked = await pool.request({
      origin,
      path: `/runsync-tail-dump?file=${encodeURIComponent(serviceFile)}`,
      method: "GET",
    });
    await asked.body.dump();
    await pool.close();
    const service = JSON.parse(readFileSync(serviceFile, "utf8")) as Dump;
    const worker = JSON.parse(readFileSync(workerFile, "utf8")) as Dump;
    const rows = analyse(samples, service, worker);
    const totals = rows.map((r) => r.ms);
    console.log(
      `p50 ${quantile(totals, 0.5).toFixed(3)} ms, p99 ${quantile(totals, 0.99).toFixed(3)} ms, max ${Math.max(...totals).toFixed(3)} ms; load ${readFileSync("/proc/loadavg", "utf8").trim()}`,
    );
    console.log(`phases (median ms): ${PHASES.join(" | ")}`);
    const sorted = [...rows].sort((a, b) => a.ms - b.ms);
    const top = Number(values.top);
    summarise("all", rows);
    summarise("p0-p90", sorted.slice(0, Math.floor(rows.length * 0.9)));
    summarise(`slowest ${top}`, sorted.slice(-top));
    const byKind = (gcs: Event[]) => {
      const m = new Map<string, { n: number; ms: number; max: number }>();
      for (const e of gcs) {
        const k = m.get(e[2]) ?? { n: 0, ms: 0, max: 0 };
        k.n++;
        k.ms += e[3] ?? 0;
        k.max = Math.max(k.max, e[3] ?? 0);
        m.set(e[2], k);
      }
      return [...m]
        .map(([k, v]) => `kind ${k}: ${v.n} x, ${v.ms.toFixed(1)} ms, max ${v.max.toFixed(2)}`)
        .join("; ");
    };
    // What each request of the slowest `top` waited on beyond the median: the largest of its GC pauses
    // (service, worker, client) and its run-queue waits (client, service, worker), when that covers
    // at least half of the excess; otherwise "other".
    const p50 = quantile(totals, 0.5);
    const causes = new Map<string, { n: number; excess: number }>();
    for (const r of sorted.slice(-top)) {
      const excess = r.ms - p50;
      const candidates: [string, number][] = [
        ["GC service", r.gcService],
        ["GC worker", r.gcWorker],
        ["GC client", r.gcClient],
        ["slow SQLite call", r.sqliteMs],
        ["run-queue client", r.waitMs[0]],
        ["run-queue service", r.waitMs[1]],
        ["run-queue worker", r.waitMs[2]],
      ];
      const [name, ms] = candidates.reduce((a, b) => (b[1] > a[1] ? b : a));
      let cause = ms >= excess / 2 ? name : r.thread ? "checkpoint thread" : "other";
      // A run-queue wait while our three processes together ran far less: the cores ran someone else's work.
      if (cause.startsWith("run-queue") && r.runMs.reduce((a, b) => a + b, 0) < ms / 2)
        cause += " (cores busy elsewhere)";
      const entry = causes.get(cause) ?? { n: 0, excess: 0 };
      entry.n++;
      entry.excess += excess;
      causes.set(cause, entry);
    }
    console.log(
      `slowest ${top} by cause (n, mean excess ms): ${[...causes]
        .sort((a, b) => b[1].n - a[1].n)
        .map(([k, v]) => `${k} ${v.n} (${(v.excess / v.n).toFixed(2)})`)
        .join("; ")}`,
    );
    // GC pauses inside the timed loop; the whole process's (start-up and warm-up included) in brackets.
    const inLoop = (gcs: Event[]) => gcs.filter((e) => e[0] >= timedFrom && e[0] <= timedTo);
    const gcLine = (gcs: Event[]) => `${byKind(inLoop(gcs)) || "none"} [whole process: ${byKind(gcs)}]`;
    console.log(`client GC in the timed loop: ${gcLine(clientGc)}`);
    const slow = service.events.filter((e) => e[1] === "sqlite");
    console.log(
      `slow SQLite calls on the service's main thread (> 0.3 ms): ${slow.length}, by kind (1 exec, 2 run, 3 get, 4 all, 5 PRAGMA): ${[
        ...new Set(slow.map((e) => e[2])),
      ]
        .map((k) => {
          const of = slow.filter((e) => e[2] === k).map((e) => e[3] ?? 0);
          return `${k}: ${of.length} x, max ${Math.max(...of).toFixed(2)} ms`;
        })
        .join("; ")}`,
    );
    console.log("slowest 12 (ms): total | phases | wait c/s/w | run c/s/w | gc s/w/c kinds");
    for (const r of sorted.slice(-12)) {
      console.log(
        `${r.ms.toFixed(2).padStart(6)} | ${r.phases.map((x) => x.toFixed(2).padStart(5)).join(" ")} | ${r.waitMs.map((x) => x.toFixed(2)).join(" ")} | ${r.runMs.map((x) => x.toFixed(2)).join(" ")} | ${r.gcService.toFixed(2)} ${r.gcWorker.toFixed(2)} ${r.gcClient.toFixed(2)} ${r.gcKinds}${r.thread ? " ckpt" : ""}${r.sqliteMs > 0 ? ` sqlite ${r.sqliteMs.toFixed(2)}` : ""}`,
      );
    }
    const serviceGc = service.events.filter((e) => e[1] === "gc");
    const workerGc = worker.events.filter((e) => e[1] === "gc");
    console.log(`service GC in the timed loop: ${gcLine(serviceGc)}`);
    console.log(`worker GC in the timed loop: ${gcLine(workerGc)}`);
    // With --worker-flags --trace-gc: the worker's GC lines, as the service captured them into its logs.
    const logs = await fetch(`${svc.ready.queueUrl}/v2/${endpointId}/logs?limit=10000`, {
      headers: { authorization: `Bearer ${BENCH_API_KEY}` },
    });
    for (const line of (await logs.text()).split("\n")) {
      if (/Scavenge|Mark-Compact|Mark-Sweep/.test(line)) console.log(`worker: ${line.slice(0, 300)}`);
    }
    if (values.json) writeFileSync(values.json, JSON.stringify({ rows, service, worker, samples }));
  } finally {
    await svc.close();
    await data.remove();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
