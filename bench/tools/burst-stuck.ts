/**
 * `npx tsx bench/tools/burst-stuck.ts [workers=32] [jobs=10000] [skip]`: the burst that left jobs stuck
 * in the fifth pass (bench/HISTORY.md: worker results dropped, since fixed). One endpoint with `runpodkit/echo` (8 jobs at a time per
 * worker) in `workers` workers; `jobs` /run through the SDK, 64 in flight; /health polled until every
 * job ended. When the count of ended jobs has not moved for 15 s it prints /health, the status of the
 * first unfinished jobs, how many are in each status and the workers' captured lines other than
 * Started/Finished. `skip`: use the bench build as it is.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { JobClient } from "../../sdk/jobs";
import { buildBench } from "../lib/build";
import { inParallel } from "../lib/pool";
import {
  BENCH_API_KEY,
  createQueueEndpoint,
  startService,
  tempDataDir,
  waitForIdleWorkers,
} from "../lib/servers";

async function main(): Promise<void> {
  if (process.argv[4] !== "skip") await buildBench();
  const workers = Number(process.argv[2] ?? 32);
  const total = Number(process.argv[3] ?? 10000);
  const data = await tempDataDir();
  const svc = await startService({ data: data.file });
  try {
    const id = await createQueueEndpoint(svc, "r", "runpodkit/echo", workers);
    await waitForIdleWorkers(svc, id, workers, 300_000);
    const c = new JobClient({
      apiKey: BENCH_API_KEY,
      endpointId: id,
      baseUrl: `${svc.ready.queueUrl}/v2`,
      connections: 66,
    });
    const ids: string[] = [];
    const sub = inParallel(total, 64, async (i) => {
      ids.push((await c.run({ input: { n: i } })).id);
    });
    let last = -1;
    let lastChange = Date.now();
    for (;;) {
      const h = await c.health();
      const done = h.jobs.completed + h.jobs.failed;
      if (done >= total) {
        console.log("all done", JSON.stringify(await sub));
        break;
      }
      if (done !== last) {
        last = done;
        lastChange = Date.now();
      }
      if (Date.now() - lastChange > 15_000) {
        console.log("STUCK", JSON.stringify(h), JSON.stringify(await sub));
        const counts = new Map<string, number>();
        for (const j of ids) {
          const s = await c.status(j);
          if (s.status !== "COMPLETED") {
            counts.set(s.status, (counts.get(s.status) ?? 0) + 1);
            if ((counts.get(s.status) ?? 0) <= 3) console.log(JSON.stringify(s));
          }
        }
        console.log(JSON.stringify([...counts]));
        // The service's captured worker lines that are not the per-job Started/Finished ones.
        const logs = await fetch(`${svc.ready.queueUrl}/v2/${id}/logs?limit=5000`, {
          headers: { authorization: `Bearer ${BENCH_API_KEY}` },
        });
        const odd = (await logs.text()).split("\n").filter((l) => l && !/Started\.|Finished\./.test(l));
        console.log(`worker lines other than Started/Finished: ${odd.length}`);
        for (const line of odd.slice(0, 10)) console.log(line.slice(0, 400));
        const st = await svc.stats();
        console.log(JSON.stringify(st).slice(0, 2000));
        break;
      }
      await sleep(200);
    }
    await c.close();
  } finally {
    await svc.close();
    await data.remove();
  }
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
