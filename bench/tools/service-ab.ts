/**
 * `npx tsx bench/tools/service-ab.ts [--a DIR] [--b DIR] [--blocks 30] [--block 200] [--warmup 5000]
 * [--verbose]`: two services side by side, each from a build of the bench: the bench build
 * (bench/.tmp/build) unless --a / --b name another (a copy of it with a change in it, e.g. `cp -r
 * bench/.tmp/build bench/.tmp/build-b` and patch the copy, or an earlier build kept aside). With
 * neither, both are the bench build: an A/A run, which measures this method's own spread.
 * Each has one `runpodkit/echo` worker and its store on. This process runs the runsync suite's loop
 * (one /runsync at a time over one keep-alive connection, replies read whole) in blocks of `block`
 * requests, alternating A and B (which goes first alternates too), so both meet the machine in the
 * same state: on the 2-core machine of bench/README.md the same loop's p50 and the service's CPU per
 * request move 2x between blocks a second apart, while two services started one after the other
 * meet different states. Per block: each side's p50 and its service's CPU per request
 * (process.cpuUsage in it, all threads). Prints each side's p50/p90/p99 over all its blocks and the
 * medians of the per-block B/A ratios. For A/B checks of changes on the /runsync path only (the
 * service or, patched in the copy, its worker runtime): nothing asserts.
 */
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { dispatchWhole } from "../../sdk/dispatch-reply";
import {
  BENCH_API_KEY,
  type BenchService,
  createQueueEndpoint,
  startService,
  tempDataDir,
  waitForIdleWorkers,
} from "../lib/servers";
import { median, quantile } from "../lib/stats";

interface Side {
  name: "A" | "B";
  service: BenchService;
  pool: Pool;
  origin: string;
  path: string;
  times: number[];
}

const HEADERS = { authorization: `Bearer ${BENCH_API_KEY}`, "content-type": "application/json" };

/** `count` sequential /runsync against one side: each request's time (ms). */
async function loop(side: Side, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const body = JSON.stringify({ input: { n: i } });
    const sent = performance.now();
    const reply = await dispatchWhole(side.pool, {
      origin: side.origin,
      path: side.path,
      method: "POST",
      headers: HEADERS,
      body,
    });
    times.push(performance.now() - sent);
    if (!reply.text.includes('"COMPLETED"')) throw new Error(`${side.name}, request ${i}: ${reply.text}`);
  }
  return times;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      a: { type: "string" },
      b: { type: "string" },
      blocks: { type: "string", default: "30" },
      block: { type: "string", default: "200" },
      warmup: { type: "string", default: "5000" },
      verbose: { type: "boolean", default: false },
    },
  });
  const stores = { A: await tempDataDir(), B: await tempDataDir() };
  const sides: Side[] = [];
  try {
    for (const name of ["A", "B"] as const) {
      const buildDir = name === "A" ? values.a : values.b;
      const service = await startService({ data: stores[name].file }, buildDir ? { buildDir } : {});
      const endpointId = await createQueueEndpoint(service, `ab-${name}`, "runpodkit/echo", 1);
      await waitForIdleWorkers(service, endpointId, 1);
      const origin = new URL(service.ready.queueUrl).origin;
      const pool = new Pool(origin, { connections: 1 });
      sides.push({ name, service, pool, origin, path: `/v2/${endpointId}/runsync`, times: [] });
    }
    const [a, b] = sides as [Side, Side];
    for (const side of sides) await loop(side, Number(values.warmup));
    const p50Ratios: number[] = [];
    const cpuRatios: number[] = [];
    for (let block = 0; block < Number(values.blocks); block++) {
      const p50 = new Map<Side, number>();
      const cpu = new Map<Side, number>();
      for (const side of block % 2 === 0 ? [a, b] : [b, a]) {
        const before = (await side.service.stats()).cpuUs;
        const times = await loop(side, Number(values.block));
        const after = (await side.service.stats()).cpuUs;
        side.times.push(...times);
        p50.set(side, quantile(times, 0.5));
        cpu.set(side, (after - before) / times.length);
      }
      const [p50A, p50B, cpuA, cpuB] = [p50.get(a) ?? 0, p50.get(b) ?? 0, cpu.get(a) ?? 0, cpu.get(b) ?? 0];
      p50Ratios.push(p50B / p50A);
      cpuRatios.push(cpuB / cpuA);
      if (values.verbose) {
        console.log(
          `block ${block}: p50 A ${p50A.toFixed(3)} B ${p50B.toFixed(3)} ms; service CPU/request A ${cpuA.toFixed(0)} B ${cpuB.toFixed(0)} us`,
        );
      }
    }
    for (const side of sides) {
      const t = side.times;
      console.log(
        `${side.name}: ${t.length} /runsync, p50 ${quantile(t, 0.5).toFixed(3)} ms, p90 ${quantile(t, 0.9).toFixed(3)}, p99 ${quantile(t, 0.99).toFixed(3)}`,
      );
    }
    console.log(
      `B/A, medians of ${p50Ratios.length} block pairs: p50 ${median(p50Ratios).toFixed(3)}, service CPU per request ${median(cpuRatios).toFixed(3)}`,
    );
  } finally {
    for (const side of sides) {
      await side.pool.close();
      await side.service.close();
    }
    for (const store of Object.values(stores)) await store.remove();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
