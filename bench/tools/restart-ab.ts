/**
 * `npx tsx bench/tools/restart-ab.ts [--jobs 100000] [--rounds 5] [--a DIR] [--b DIR] [--fill a|b|each]
 *  [--profile DIR] [--keep DIR]`: the queued suite's restart (spawn of the bench's service process to ready,
 * with `jobs` queued jobs in its store), alternating two builds of the bench (A: --a, default
 * bench/.tmp/build-base, a copy of an earlier build; B: --b, default bench/.tmp/build). For A/B checks
 * of start-up changes only: nothing asserts.
 *
 * The store is filled once (by A's service with `--fill a`, the default: a file an earlier version
 * wrote, which B must open as it is; `--fill each`: each side fills its own), then every restart
 * opens a fresh copy of it (the file and its key), so every start reads the same rows. Per restart:
 * wall time spawn -> ready, the new process's CPU until ready (process.cpuUsage in it), its
 * startService time, RSS once ready, and the jobs /health shows in queue (must be `jobs`).
 * With `--profile DIR`, each side runs under --cpu-prof into DIR/a and DIR/b (figures then are not
 * the service as shipped). With `--keep DIR`, the filled stores are kept in DIR (a.sqlite, b.sqlite,
 * endpoints.json) and reused by later runs given the same DIR.
 */
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { JobClient } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";
import { BENCH_DIR } from "../lib/build";
import { Child } from "../lib/ipc";
import { load } from "../lib/load";
import { Empty, ServerReady, ServerStats } from "../lib/protocol";
import { BENCH_API_KEY, type BenchService, createQueueEndpoint } from "../lib/servers";

const MB = 1024 * 1024;

/** The account key the stores were filled with (kept with them by --keep). */
let apiKey = BENCH_API_KEY;

async function start(buildDir: string, data: string, execArgv: string[]): Promise<BenchService> {
  const child = new Child(join(buildDir, "bench", "server.js"), [], {
    env: { BENCH_SERVER: JSON.stringify({ data }), BENCH_API_KEY: apiKey },
    execArgv,
  });
  const ready = await child.ready(ServerReady);
  const rest = new RestClient({ apiKey, baseUrl: ready.restUrl });
  return {
    child,
    ready,
    rest,
    stats: () => child.call("stats", {}, ServerStats),
    resetCalls: async () => {},
    close: async () => {
      await rest.close();
      await child.call("close", {}, Empty).catch(() => undefined);
      await child.stop();
    },
  };
}

async function copyStore(from: string, to: string): Promise<void> {
  await copyFile(from, to);
  await copyFile(`${from}.key`, `${to}.key`);
}

async function fill(buildDir: string, file: string, jobs: number): Promise<string> {
  const svc = await start(buildDir, file, []);
  try {
    const endpointId = await createQueueEndpoint(svc, "queued", "runpodkit/echo", 0);
    const filled = await load({
      url: `${svc.ready.queueUrl}/v2/${endpointId}/run`,
      connections: 64,
      amount: jobs,
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ input: { prompt: "hello", max_tokens: 16 } }),
    });
    if (filled.total2xx !== jobs) throw new Error(`fill: ${filled.total2xx}/${jobs} accepted`);
    return endpointId;
  } finally {
    await svc.close();
  }
}

/** Jobs in an endpoint's queue, by its /health (as lib/servers' inQueue, with the stores' key). */
async function inQueue(svc: BenchService, endpointId: string, key: string): Promise<number> {
  const jobs = new JobClient({ apiKey: key, endpointId, baseUrl: `${svc.ready.queueUrl}/v2` });
  try {
    return (await jobs.health()).jobs.inQueue;
  } finally {
    await jobs.close();
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: "string", default: "100000" },
      rounds: { type: "string", default: "5" },
      a: { type: "string", default: join(BENCH_DIR, ".tmp", "build-base") },
      b: { type: "string", default: join(BENCH_DIR, ".tmp", "build") },
      fill: { type: "string", default: "a" },
      profile: { type: "string" },
      keep: { type: "string" },
    },
  });
  const jobs = Number(values.jobs);
  const dir = await mkdtemp(join(tmpdir(), "runpodkit-restart-ab-"));
  try {
    const sides = [
      { name: "A", build: values.a, store: join(dir, "a.sqlite"), results: [] as number[][] },
      { name: "B", build: values.b, store: join(dir, "b.sqlite"), results: [] as number[][] },
    ];
    const [a, b] = sides as [(typeof sides)[0], (typeof sides)[0]];
    const kept = values.keep ? join(values.keep, "endpoints.json") : undefined;
    let endpointA: string;
    let endpointB: string;
    if (kept && existsSync(kept)) {
      [endpointA, endpointB, apiKey] = JSON.parse(await readFile(kept, "utf8")) as [string, string, string];
      await copyStore(join(values.keep as string, "a.sqlite"), a.store);
      await copyStore(join(values.keep as string, "b.sqlite"), b.store);
      console.log(`stores of ${kept} reused`);
    } else {
      endpointA = await fill(a.build, a.store, jobs);
      endpointB = endpointA;
      if (values.fill === "each") endpointB = await fill(b.build, b.store, jobs);
      else await copyStore(a.store, b.store);
      console.log(`filled: ${jobs} queued (${values.fill === "each" ? "each side its own" : "by A"})`);
      if (kept && values.keep) {
        await mkdir(values.keep, { recursive: true });
        await copyStore(a.store, join(values.keep, "a.sqlite"));
        await copyStore(b.store, join(values.keep, "b.sqlite"));
        await writeFile(kept, JSON.stringify([endpointA, endpointB, apiKey]), { mode: 0o600 });
      }
    }
    for (let round = 0; round < Number(values.rounds); round++) {
      const order = round % 2 === 0 ? [a, b] : [b, a];
      for (const side of order) {
        const data = join(dir, `run-${side.name}.sqlite`);
        await copyStore(side.store, data);
        const execArgv = values.profile
          ? ["--cpu-prof", `--cpu-prof-dir=${join(values.profile, side.name.toLowerCase())}`]
          : [];
        const spawned = performance.now();
        const svc = await start(side.build, data, execArgv);
        const wall = performance.now() - spawned;
        try {
          const stats = await svc.stats();
          const queued = await inQueue(svc, side === a ? endpointA : endpointB, apiKey);
          side.results.push([wall, stats.cpuUs / 1000, svc.ready.startMs, stats.rss / MB]);
          console.log(
            `${side.name}: restart ${wall.toFixed(0)} ms, CPU ${(stats.cpuUs / 1000).toFixed(0)} ms, startService ${svc.ready.startMs.toFixed(0)} ms, RSS ${(stats.rss / MB).toFixed(1)} MB, in queue ${queued}${queued === jobs ? "" : " (WRONG)"}`,
          );
        } finally {
          await svc.close();
          await rm(data, { force: true });
          await rm(`${data}.key`, { force: true });
        }
      }
    }
    for (const side of sides) {
      const col = (i: number) => median(side.results.map((r) => r[i] as number));
      console.log(
        `${side.name} median: restart ${col(0).toFixed(0)} ms, CPU ${col(1).toFixed(0)} ms, startService ${col(2).toFixed(0)} ms, RSS ${col(3).toFixed(1)} MB  (${side.build})`,
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
