/**
 * `npx tsx bench/memory.ts [--stream-seconds 60] [--large 100]`: the service's memory under a steady
 * stream of jobs and with large queued inputs (issue 10, finding 4). Not a test; nothing asserts.
 *
 * 1. Stream: an endpoint with one `runpodkit/echo` worker; 16 clients submit 1 KB jobs through /run
 *    at --rate jobs/s (500) for --stream-seconds; the service's RSS and the endpoint's health are read
 *    every 10 s. Finished results stay
 *    kept (30 min) in the store and the recent cache (10,000 jobs): RSS should level off once that
 *    cache is full, not grow with the jobs.
 * 2. Large inputs: an endpoint with no worker; --large jobs of 9.9 MB each through /run, 4 at a time;
 *    RSS before, after all are queued, after purge-queue. Inputs past 64 KiB live in the store.
 *
 * The service is the bench's (compiled, plain Node, an SQLite file; bench/server.ts), in its own
 * process; rate limits off. Figures go to stdout; the last run's are in bench/README.md.
 */
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { buildBench } from "./lib/build";
import { machine } from "./lib/machine";
import { BENCH_API_KEY, createQueueEndpoint, startService, tempDataDir } from "./lib/servers";

const MB = 1024 * 1024;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      "stream-seconds": { type: "string", default: "60" },
      rate: { type: "string", default: "500" },
      large: { type: "string", default: "100" },
    },
  });
  const streamMs = Number(values["stream-seconds"]) * 1000;
  const rate = Number(values.rate);
  const largeJobs = Number(values.large);
  const host = machine();
  console.log(
    `machine: ${host.cores} cores, ${host.cpuModel}, Node ${host.node}, load ${host.loadAverageAtStart}`,
  );
  await buildBench();
  const data = await tempDataDir();
  const svc = await startService({ data: data.file });
  const pool = new Pool(svc.ready.queueUrl, { connections: 16 });
  const headers = { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}` };
  const rss = async () => (await svc.stats()).rss / MB;
  /** RSS and the V8 heap in use (the live JS objects), MB. */
  const memory = async () => {
    const stats = await svc.stats();
    return `RSS ${(stats.rss / MB).toFixed(0)} MB, heap ${(stats.heapUsed / MB).toFixed(0)} of ${(stats.heapTotal / MB).toFixed(0)} MB`;
  };
  try {
    // 1. A steady stream of 1 KB jobs through one echo worker.
    const streamEp = await createQueueEndpoint(svc, "memory-stream", "runpodkit/echo", 1);
    const body = JSON.stringify({ input: { text: "x".repeat(1_000) } });
    let submitted = 0;
    let refused = 0;
    const until = Date.now() + streamMs;
    // At most `rate` jobs a second (below what one echo worker finishes, so the queue stays short):
    // each of 16 clients keeps to its share of the schedule.
    const started = Date.now();
    const client = async (index: number) => {
      for (let n = index; Date.now() < until; n += 16) {
        const due = started + (n * 1000) / rate;
        const wait = due - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const reply = await pool.request({ method: "POST", path: `/v2/${streamEp}/run`, headers, body });
        await reply.body.dump();
        if (reply.statusCode === 200) submitted++;
        else refused++;
      }
    };
    const health = async () => {
      const reply = await pool.request({ method: "GET", path: `/v2/${streamEp}/health`, headers });
      const { jobs } = (await reply.body.json()) as { jobs: { inQueue: number; completed: number } };
      return `queued ${jobs.inQueue}, completed ${jobs.completed}`;
    };
    const samples: string[] = [];
    const sampler = (async () => {
      while (Date.now() < until) {
        const at = Math.round((Date.now() - started) / 1000);
        samples.push(`${at}s ${await memory()} (${submitted} jobs; ${await health()})`);
        await new Promise((resolve) => setTimeout(resolve, 10_000));
      }
    })();
    await Promise.all([...Array.from({ length: 16 }, (_, i) => client(i)), sampler]);
    console.log(`stream: ${submitted} jobs in ${streamMs / 1000} s (${refused} refused); RSS over time:`);
    for (const line of samples) console.log(`  ${line}`);
    console.log(`  end ${await memory()} (${await health()})`);

    // 2. Large queued inputs.
    const largeEp = await createQueueEndpoint(svc, "memory-large", "runpodkit/echo", 0);
    const before = await rss();
    const large = JSON.stringify({ input: { blob: "y".repeat(9_900_000) } });
    let accepted = 0;
    const statuses = new Map<number, number>();
    let next = 0;
    const sender = async () => {
      while (next < largeJobs) {
        next++;
        const reply = await pool.request({
          method: "POST",
          path: `/v2/${largeEp}/run`,
          headers,
          body: large,
        });
        await reply.body.dump();
        statuses.set(reply.statusCode, (statuses.get(reply.statusCode) ?? 0) + 1);
        if (reply.statusCode === 200) accepted++;
      }
    };
    await Promise.all(Array.from({ length: 4 }, sender));
    const queued = await rss();
    const queuedMemory = await memory();
    const purge = await pool.request({ method: "POST", path: `/v2/${largeEp}/purge-queue`, headers });
    await purge.body.dump();
    const purged = await rss();
    console.log(
      `large: ${accepted}/${largeJobs} jobs of 9.9 MB queued (statuses ${JSON.stringify(Object.fromEntries(statuses))}); RSS before ${before.toFixed(0)} MB, queued ${queued.toFixed(0)} MB (${queuedMemory}), after purge-queue ${purged.toFixed(0)} MB`,
    );
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
