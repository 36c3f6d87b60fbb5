/**
 * `npx tsx bench/tools/e2e-cpu.ts [--jobs 5000] [--workers 4] [--runs 3] [--rounds 3] [--warmup 10000]
 *   [--skip-build] [--variant=<node flags>]...`: the service's CPU per completed job as the e2e suite measures it
 * (one endpoint, `runpodkit/echo` in N workers, the e2e client submitting `jobs` through the SDK, 64
 * in flight, a warm-up run of `warmup` jobs (at least a quarter of a run; 10,000 as the e2e suites), then `runs` measured runs), for each variant of Node flags
 * given to the service process (`--variant=` alone is the service as the bench starts it), one fresh
 * service per round and variant, the variants' order rotated each round. Prints each run with the
 * service's CPU per job by thread (main, V8's worker threads: GC helpers and concurrent compilers;
 * " sys" the kernel's part) and the medians. For A/B checks of engine settings only.
 *
 * E2E_CPU_COUNT=1: also the requests per job by route (counted in the service; adds its own cost).
 * E2E_CPU_ATTACH="strace -c -f -o /tmp/x -p {pid}": a tool attached to the service for the measured
 * runs, ended by SIGINT. E2E_CPU_MARK=1: a line before each measured run (to split the service's
 * own output, e.g. --trace-opt).
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { buildBench, built } from "../lib/build";
import { Child } from "../lib/ipc";
import { treeCpu } from "../lib/proc-cpu";
import { ClientReady, E2eResult } from "../lib/protocol";
import {
  BENCH_API_KEY,
  createQueueEndpoint,
  startService,
  tempDataDir,
  waitForIdleWorkers,
} from "../lib/servers";
import { median } from "../lib/stats";

const MB = 1024 * 1024;

/** CPU ms of each thread of `pid` by thread name (threads of one name added; " sys": system time), from /proc. */
function threadsCpu(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const name = tid === String(pid) ? "main" : text.slice(text.indexOf("(") + 1, text.lastIndexOf(")"));
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
      const user = Number(fields[11]) * 10;
      const sys = Number(fields[12]) * 10;
      byName.set(name, (byName.get(name) ?? 0) + user + sys);
      byName.set(`${name} sys`, (byName.get(`${name} sys`) ?? 0) + sys);
    } catch {
      // The thread ended.
    }
  }
  return byName;
}

interface Run {
  serviceUs: number;
  workersUs: number;
  rssMb: number;
  rate: number;
  threads: string;
}

async function service(
  flags: string[],
  jobs: number,
  workers: number,
  runs: number,
  warmup: number,
): Promise<Run[]> {
  const data = await tempDataDir();
  const countCalls = process.env.E2E_CPU_COUNT === "1";
  const svc = await startService({ data: data.file, countCalls }, { execArgv: flags });
  const client = new Child(built("bench/clients/e2e"), [], { env: { BENCH_API_KEY } });
  const out: Run[] = [];
  try {
    await client.ready(ClientReady);
    const endpointId = await createQueueEndpoint(svc, "e2e-cpu", "runpodkit/echo", workers);
    await waitForIdleWorkers(svc, endpointId, workers, 300_000);
    const args = { queueUrl: svc.ready.queueUrl, endpointIds: [endpointId], concurrency: 64, sample: 100 };
    await client.call("run", { ...args, jobs: Math.max(Math.ceil(jobs / 4), warmup) }, E2eResult);
    const attach = process.env.E2E_CPU_ATTACH?.replaceAll("{pid}", String(svc.ready.pid)).split(" ");
    const attached = attach ? spawn(attach[0] ?? "", attach.slice(1), { stdio: "inherit" }) : undefined;
    if (attached) await sleep(1000);
    for (let run = 0; run < runs; run++) {
      if (countCalls) await svc.resetCalls();
      if (process.env.E2E_CPU_MARK) console.log(`--- measured run ${run + 1}`);
      const threadsBefore = threadsCpu(svc.ready.pid);
      const before = treeCpu(svc.ready.pid);
      const result = await client.call("run", { ...args, jobs }, E2eResult);
      const after = treeCpu(svc.ready.pid);
      const threadsAfter = threadsCpu(svc.ready.pid);
      if (!before || !after) throw new Error("no /proc");
      if (result.failed > 0 || result.submitErrors > 0)
        throw new Error(`e2e-cpu: jobs failed: ${result.firstError}`);
      const stats = await svc.stats();
      if (countCalls)
        for (const c of stats.calls) console.log(`  ${c.key}: ${(c.count / result.jobs).toFixed(3)} per job`);
      out.push({
        serviceUs: ((after.selfMs - before.selfMs) * 1000) / result.jobs,
        workersUs: ((after.childrenMs - before.childrenMs) * 1000) / result.jobs,
        rssMb: stats.rss / MB,
        rate: (result.jobs / result.elapsedMs) * 1000,
        threads: [...threadsAfter]
          .map(([name, ms]) => [name, ((ms - (threadsBefore.get(name) ?? 0)) * 1000) / result.jobs] as const)
          .filter(([, us]) => us > 0)
          .map(([name, us]) => `${name} ${us.toFixed(0)}`)
          .join(", "),
      });
    }
    if (attached) {
      attached.kill("SIGINT");
      await new Promise((resolve) => attached.once("exit", resolve));
    }
    return out;
  } finally {
    await client.stop();
    await svc.close();
    await data.remove();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: "string", default: "5000" },
      workers: { type: "string", default: "4" },
      runs: { type: "string", default: "3" },
      rounds: { type: "string", default: "3" },
      warmup: { type: "string", default: "10000" },
      variant: { type: "string", multiple: true },
      "skip-build": { type: "boolean", default: false },
    },
  });
  if (!values["skip-build"]) await buildBench();
  const variants = (values.variant ?? [""]).map((v) => v.split(/\s+/).filter(Boolean));
  const name = (i: number) => variants[i]?.join(" ") || "as the bench starts it";
  const results = variants.map(() => [] as Run[]);
  for (let round = 0; round < Number(values.rounds); round++) {
    for (let k = 0; k < variants.length; k++) {
      const i = (k + round) % variants.length;
      const runs = await service(
        variants[i] ?? [],
        Number(values.jobs),
        Number(values.workers),
        Number(values.runs),
        Number(values.warmup),
      );
      results[i]?.push(...runs);
      for (const r of runs)
        console.log(
          `[${name(i)}] service ${r.serviceUs.toFixed(0)} us/job, workers ${r.workersUs.toFixed(0)} us/job, ${r.rate.toFixed(0)} jobs/s, RSS after ${r.rssMb.toFixed(0)} MB; us/job by thread: ${r.threads}`,
        );
    }
  }
  for (const [i, rs] of results.entries())
    console.log(
      `median [${name(i)}]: service ${median(rs.map((r) => r.serviceUs)).toFixed(0)} us/job (${rs.map((r) => r.serviceUs.toFixed(0)).join(", ")}), RSS ${median(rs.map((r) => r.rssMb)).toFixed(0)} MB`,
    );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
