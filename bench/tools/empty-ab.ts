/**
 * `npx tsx bench/tools/empty-ab.ts [--rounds 5] [--a DIR] [--b DIR]`: the empty service's RSS as the
 * queued suite reads it (a fresh store, one endpoint without workers, RSS from the service), alternating
 * two builds of the bench (A: --a, default bench/.tmp/build-base; B: --b, default bench/.tmp/build).
 * One uncounted start of each side first (warms the file cache, and Node's compile cache where a
 * build enables it). Also the time the endpoint's two REST calls took (the first REST requests, which
 * load the REST routes; a time, so only for comparing pairs run side by side). For A/B checks only.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { RestClient } from "../../sdk/rest";
import { BENCH_DIR } from "../lib/build";
import { Child } from "../lib/ipc";
import { Empty, ServerReady, ServerStats } from "../lib/protocol";
import { BENCH_API_KEY, type BenchService, createQueueEndpoint } from "../lib/servers";

const MB = 1024 * 1024;

async function start(buildDir: string, data: string): Promise<BenchService> {
  const child = new Child(join(buildDir, "bench", "server.js"), [], {
    env: { BENCH_SERVER: JSON.stringify({ data }), BENCH_API_KEY },
  });
  const ready = await child.ready(ServerReady);
  const rest = new RestClient({ apiKey: BENCH_API_KEY, baseUrl: ready.restUrl });
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

/** RSS (MB) once the endpoint exists, and the time (ms) its two REST calls took: the first REST requests, which load the REST routes. */
async function emptyRss(buildDir: string): Promise<{ rss: number; firstMs: number }> {
  const dir = await mkdtemp(join(tmpdir(), "runpodkit-empty-ab-"));
  const svc = await start(buildDir, join(dir, "store.sqlite"));
  try {
    const started = performance.now();
    await createQueueEndpoint(svc, "queued", "runpodkit/echo", 0);
    const firstMs = performance.now() - started;
    await sleep(200);
    return { rss: (await svc.stats()).rss / MB, firstMs };
  } finally {
    await svc.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: "string", default: "5" },
      a: { type: "string", default: join(BENCH_DIR, ".tmp", "build-base") },
      b: { type: "string", default: join(BENCH_DIR, ".tmp", "build") },
    },
  });
  const sides = [
    { name: "A", build: values.a, rss: [] as number[], firstMs: [] as number[] },
    { name: "B", build: values.b, rss: [] as number[], firstMs: [] as number[] },
  ];
  for (const side of sides) await emptyRss(side.build); // warm caches (the compile cache among them)
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const { rss, firstMs } = await emptyRss(side.build);
      side.rss.push(rss);
      side.firstMs.push(firstMs);
      console.log(`${side.name}: empty RSS ${rss.toFixed(1)} MB, first REST calls ${firstMs.toFixed(0)} ms`);
    }
  }
  for (const side of sides) {
    const sorted = [...side.rss].sort((x, y) => x - y);
    const ms = [...side.firstMs].sort((x, y) => x - y);
    console.log(
      `${side.name} median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(1)} MB, min ${sorted[0]?.toFixed(1)}, max ${sorted.at(-1)?.toFixed(1)}; first REST calls median ${ms[Math.floor(ms.length / 2)]?.toFixed(0)} ms  (${side.build})`,
    );
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
