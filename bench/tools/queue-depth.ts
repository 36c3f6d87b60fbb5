/**
 * `npx tsx bench/tools/queue-depth.ts [--jobs 1000000] [--endpoints 10]`: the service's memory with a
 * deep queue and the time to restart with it (issue 13: 1,000,000 queued <= 600 MB, restart < 5 s).
 * The jobs go through /run (the bench's small input) spread over --endpoints endpoints with no worker
 * (each endpoint's queue bound is raised to hold its share); then the service is closed and started
 * again on the same store (with --expose-gc), and its memory read at ready, 1, 5, 15 and 30 s later
 * (the queue-depth curve reads it at ready) and after a full collection (what of it was garbage). Not
 * part of `npm run bench`; nothing asserts.
 */
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { buildBench } from "../lib/build";
import { load } from "../lib/load";
import { Empty } from "../lib/protocol";
import { BENCH_API_KEY, createQueueEndpoint, inQueue, startService, tempDataDir } from "../lib/servers";

const MB = 1024 * 1024;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { jobs: { type: "string", default: "1000000" }, endpoints: { type: "string", default: "10" } },
  });
  const total = Number(values.jobs);
  const count = Number(values.endpoints);
  await buildBench();
  const data = await tempDataDir();
  const maxQueuedPerEndpoint = Math.max(100_000, Math.ceil(total / count));
  let svc = await startService({ data: data.file, maxQueuedPerEndpoint });
  const memory = async () => {
    const s = await svc.stats();
    return `RSS ${(s.rss / MB).toFixed(0)} MB, heap ${(s.heapUsed / MB).toFixed(0)} of ${(s.heapTotal / MB).toFixed(0)} MB, external ${(s.external / MB).toFixed(0)} MB`;
  };
  try {
    const endpoints: string[] = [];
    for (let i = 0; i < count; i++)
      endpoints.push(await createQueueEndpoint(svc, `depth-${i}`, "runpodkit/echo", 0));
    console.log(`empty: ${await memory()}`);
    const started = performance.now();
    for (const [i, endpointId] of endpoints.entries()) {
      const amount = Math.floor(total / count) + (i < total % count ? 1 : 0);
      const filled = await load({
        url: `${svc.ready.queueUrl}/v2/${endpointId}/run`,
        connections: 64,
        amount,
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}` },
        body: JSON.stringify({ input: { prompt: "hello", max_tokens: 16 } }),
      });
      if (filled.total2xx !== amount) throw new Error(`${filled.total2xx}/${amount} accepted`);
    }
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `${total} queued in ${seconds.toFixed(0)} s (${(total / seconds).toFixed(0)}/s): ${await memory()}`,
    );
    await svc.close();
    const spawned = performance.now();
    // --expose-gc: the full collection at the end (the service then also uses it for its settle GC).
    svc = await startService({ data: data.file, maxQueuedPerEndpoint }, { execArgv: ["--expose-gc"] });
    const restartMs = performance.now() - spawned;
    let restored = 0;
    for (const endpointId of endpoints) restored += await inQueue(svc, endpointId);
    console.log(
      `restart ${restartMs.toFixed(0)} ms (startService ${svc.ready.startMs.toFixed(0)} ms), restored ${restored}: ${await memory()}`,
    );
    await sleep(1_000);
    console.log(`1 s after ready: ${await memory()}`);
    await sleep(4_000);
    console.log(`5 s after ready: ${await memory()}`);
    // Whether V8's memory reducer, which runs on its own some seconds after the allocation stops, gets there.
    await sleep(10_000);
    console.log(`15 s after ready: ${await memory()}`);
    await sleep(15_000);
    console.log(`30 s after ready: ${await memory()}`);
    await svc.child.call("collect", {}, Empty);
    console.log(`after a full collection: ${await memory()}`);
  } finally {
    await svc.close();
    await data.remove();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
