/**
 * `npx tsx bench/tools/queued-probe.ts [--jobs 100000] [--skip-build] [-- <node flags for the service>]`:
 * the queued suite's scenario (an endpoint without workers, `jobs` /run through autocannon at 64
 * connections, a graceful restart on the same file) once, with V8's heap by space read in the
 * service right after the fill, 1 s later, and after the restart. For finding causes only.
 */

import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { buildBench } from "../lib/build";
import { load } from "../lib/load";
import {
  BENCH_API_KEY,
  type BenchService,
  createQueueEndpoint,
  splitNodeFlags,
  startService,
  tempDataDir,
} from "../lib/servers";

const MB = 1024 * 1024;

function rollup(pid: number): string {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? 0);
  return `RSS ${(kb("Rss") / 1024).toFixed(1)} MB (anon ${(kb("Anonymous") / 1024).toFixed(1)})`;
}

async function sample(label: string, svc: BenchService): Promise<void> {
  const s = await svc.stats();
  console.log(
    `${label.padEnd(22)} ${rollup(svc.ready.pid)}, rss ${(s.rss / MB).toFixed(1)}, heap ${(s.heapUsed / MB).toFixed(1)} of ${(s.heapTotal / MB).toFixed(1)} MB, external ${(s.external / MB).toFixed(1)}`,
  );
}

async function main(): Promise<void> {
  const { args, nodeFlags: flags } = splitNodeFlags(process.argv.slice(2));
  const { values } = parseArgs({
    args,
    options: {
      jobs: { type: "string", default: "100000" },
      "skip-build": { type: "boolean", default: false },
    },
  });
  const jobs = Number(values.jobs);
  if (!values["skip-build"]) await buildBench();
  const data = await tempDataDir();
  let svc = await startService({ data: data.file }, { execArgv: flags });
  try {
    const endpointId = await createQueueEndpoint(svc, "queued", "runpodkit/echo", 0);
    await sample("empty", svc);
    const started = performance.now();
    const filled = await load({
      url: `${svc.ready.queueUrl}/v2/${endpointId}/run`,
      connections: 64,
      amount: jobs,
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}` },
      body: JSON.stringify({ input: { prompt: "hello", max_tokens: 16 } }),
    });
    const seconds = (performance.now() - started) / 1000;
    await sample("after submit", svc);
    console.log(`  ${filled.total2xx} accepted, ${(filled.total2xx / seconds).toFixed(0)}/s`);
    await sleep(1000);
    await sample("1 s later", svc);
    await sleep(4000);
    await sample("5 s later", svc);
    await svc.close();
    const spawned = performance.now();
    svc = await startService({ data: data.file }, { execArgv: flags });
    const restartMs = performance.now() - spawned;
    const cpu = (await svc.stats()).cpuUs / 1000;
    console.log(
      `restart ${restartMs.toFixed(0)} ms (startService ${svc.ready.startMs.toFixed(0)} ms, CPU ${cpu.toFixed(0)} ms)`,
    );
    await sample("after restart", svc);
  } finally {
    await svc.close();
    await data.remove();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
