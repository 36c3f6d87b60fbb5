/**
 * `npx tsx bench/tools/idle-cpu.ts [--endpoints 10] [--workers 1] [--seconds 20] [--settle 5]
 *   [--skip-build]`: what idle workers cost. Starts the service (as the bench does, calls counted),
 * makes `endpoints` queue endpoints of `runpodkit/echo` with `workers` workers each, waits until all
 * are idle and `settle` more seconds, then over `seconds` submits nothing and reads from /proc: the
 * service's CPU, the workers' CPU (per worker per second, and by thread name summed over the
 * workers: main, V8's helpers, libuv, a worker thread), and the requests the service answered per
 * idle worker per second, by route. No job runs: this is the background of a worker waiting.
 */
import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { buildBench } from "../lib/build";
import { treeCpu } from "../lib/proc-cpu";
import { createQueueEndpoint, startService, tempDataDir, waitForIdleWorkers } from "../lib/servers";

const TICK_MS = 10;

/** Live direct children of `pid`. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === pid) out.push(Number(entry));
    } catch {
      // Gone.
    }
  }
  return out;
}

/** Calls `visit` with each thread of `pids` and the text of its /proc file `file`; ended ones are skipped. */
function eachThread(
  pids: readonly number[],
  file: "stat" | "status",
  visit: (pid: number, tid: string, text: string) => void,
): void {
  for (const pid of pids) {
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      let text: string;
      try {
        text = readFileSync(`/proc/${pid}/task/${tid}/${file}`, "utf8");
      } catch {
        continue; // The thread ended.
      }
      visit(pid, tid, text);
    }
  }
}

/** CPU ms by thread name over `pids` (user + system; " sys" the system part). */
function threadsCpu(pids: readonly number[]): Map<string, number> {
  const byName = new Map<string, number>();
  eachThread(pids, "stat", (pid, tid, text) => {
    const name = tid === String(pid) ? "main" : text.slice(text.indexOf("(") + 1, text.lastIndexOf(")"));
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const user = Number(fields[11]) * TICK_MS;
    const sys = Number(fields[12]) * TICK_MS;
    byName.set(name, (byName.get(name) ?? 0) + user + sys);
    byName.set(`${name} sys`, (byName.get(`${name} sys`) ?? 0) + sys);
  });
  return byName;
}

/** Context switches (voluntary + involuntary) of every thread of `pids`: the wake-ups. */
function switches(pids: readonly number[]): number {
  let total = 0;
  eachThread(pids, "status", (_pid, _tid, text) => {
    for (const m of text.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)/gm)) total += Number(m[1]);
  });
  return total;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      endpoints: { type: "string", default: "10" },
      workers: { type: "string", default: "1" },
      seconds: { type: "string", default: "20" },
      settle: { type: "string", default: "5" },
      "skip-build": { type: "boolean", default: false },
    },
  });
  const endpoints = Number(values.endpoints);
  const perEndpoint = Number(values.workers);
  const seconds = Number(values.seconds);
  if (!values["skip-build"]) await buildBench();
  const data = await tempDataDir();
  const svc = await startService({ data: data.file, countCalls: true });
  try {
    const ids: string[] = [];
    for (let i = 0; i < endpoints; i++)
      ids.push(await createQueueEndpoint(svc, `idle-${i}`, "runpodkit/echo", perEndpoint));
    for (const id of ids) await waitForIdleWorkers(svc, id, perEndpoint, 300_000);
    await sleep(Number(values.settle) * 1000);
    const workers = childrenOf(svc.ready.pid);
    const n = endpoints * perEndpoint;
    await svc.resetCalls();
    const before = treeCpu(svc.ready.pid);
    const threadsBefore = threadsCpu(workers);
    const switchesBefore = switches(workers);
    const started = Date.now();
    await sleep(seconds * 1000);
    const after = treeCpu(svc.ready.pid);
    const threadsAfter = threadsCpu(workers);
    const switchesAfter = switches(workers);
    const elapsed = (Date.now() - started) / 1000;
    const stats = await svc.stats();
    if (!before || !after) throw new Error("no /proc");
    const serviceMsS = (after.selfMs - before.selfMs) / elapsed;
    const workersMsS = (after.childrenMs - before.childrenMs) / elapsed;
    console.log(
      `${n} idle workers (${endpoints} endpoints x ${perEndpoint}; ${after.children} processes) over ${elapsed.toFixed(1)} s:`,
    );
    console.log(
      `  service ${serviceMsS.toFixed(1)} ms/s; workers ${workersMsS.toFixed(1)} ms/s, ${(workersMsS / n).toFixed(2)} ms/s per worker; ${((switchesAfter - switchesBefore) / elapsed / n).toFixed(1)} context switches/s per worker`,
    );
    console.log(
      `  by thread, ms/s per worker: ${[...threadsAfter]
        .map(([name, ms]) => [name, (ms - (threadsBefore.get(name) ?? 0)) / elapsed / n] as const)
        .filter(([, v]) => v > 0)
        .map(([name, v]) => `${name} ${v.toFixed(2)}`)
        .join(", ")}`,
    );
    let total = 0;
    for (const c of stats.calls.sort((a, b) => b.count - a.count)) {
      total += c.count;
      console.log(`  ${c.key}: ${(c.count / elapsed / n).toFixed(3)} per worker per s`);
    }
    console.log(`  all requests: ${(total / elapsed / n).toFixed(3)} per worker per s`);
  } finally {
    await svc.close();
    await data.remove();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
