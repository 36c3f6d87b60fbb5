/**
 * `npx tsx bench/tools/memory-probe.ts [--seconds 120] [--rate 500] [--snapshots <dir>] [--trace-gc]`:
 * where the service's memory goes under the stream of bench/memory.ts (1 KB jobs through /run, one
 * echo worker). Every 10 s: RSS split by /proc (anonymous, file-backed), V8's heap (used, committed),
 * external; with --snapshots, a V8 heap snapshot at 1/3 and at the end (read them with
 * heapsnapshot-top.ts). For finding causes only; nothing asserts.
 */
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { buildBench } from "../lib/build";
import { BENCH_API_KEY, createQueueEndpoint, startService, tempDataDir } from "../lib/servers";

const MB = 1024 * 1024;

/** Resident kB by kind from /proc/<pid>/smaps_rollup. */
function rollup(pid: number): string {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? 0);
  return `anon ${(kb("Anonymous") / 1024).toFixed(0)} MB, file ${((kb("Rss") - kb("Anonymous")) / 1024).toFixed(0)} MB`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: "string", default: "120" },
      rate: { type: "string", default: "500" },
      snapshots: { type: "string" },
      "trace-gc": { type: "boolean", default: false },
      flags: { type: "string", default: "" },
    },
  });
  const ms = Number(values.seconds) * 1000;
  const rate = Number(values.rate);
  await buildBench();
  const data = await tempDataDir();
  const execArgv = [
    ...(values.snapshots ? ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${values.snapshots}`] : []),
    ...(values["trace-gc"] ? ["--trace-gc"] : []),
    ...values.flags.split(" ").filter(Boolean),
  ];
  const svc = await startService({ data: data.file }, { execArgv });
  const pid = svc.ready.pid;
  const pool = new Pool(svc.ready.queueUrl, { connections: 16 });
  const headers = { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}` };
  const sample = async (label: string) => {
    const s = await svc.stats();
    console.log(
      `${label} RSS ${(s.rss / MB).toFixed(0)} MB (${rollup(pid)}), heap ${(s.heapUsed / MB).toFixed(0)} of ${(s.heapTotal / MB).toFixed(0)} MB, external ${(s.external / MB).toFixed(0)} MB`,
    );
  };
  try {
    const ep = await createQueueEndpoint(svc, "memory-probe", "runpodkit/echo", 1);
    const body = JSON.stringify({ input: { text: "x".repeat(1_000) } });
    let submitted = 0;
    const started = Date.now();
    const until = started + ms;
    const client = async (index: number) => {
      for (let n = index; Date.now() < until; n += 16) {
        const due = started + (n * 1000) / rate;
        if (due > Date.now()) await sleep(due - Date.now());
        const reply = await pool.request({ method: "POST", path: `/v2/${ep}/run`, headers, body });
        await reply.body.dump();
        if (reply.statusCode === 200) submitted++;
      }
    };
    let snapped = false;
    const sampler = (async () => {
      while (Date.now() < until) {
        await sample(`${Math.round((Date.now() - started) / 1000)}s (${submitted} jobs)`);
        if (values.snapshots && !snapped && Date.now() - started > ms / 3) {
          snapped = true;
          process.kill(pid, "SIGUSR2");
        }
        await sleep(10_000);
      }
    })();
    await Promise.all([...Array.from({ length: 16 }, (_, i) => client(i)), sampler]);
    await sample(`end (${submitted} jobs)`);
    if (values.snapshots) {
      process.kill(pid, "SIGUSR2");
      await sleep(20_000);
    }
  } finally {
    await pool.close();
    await svc.close();
    await data.remove();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
