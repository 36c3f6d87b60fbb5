/**
 * `npx tsx bench/tools/runsync-heap.ts [--warmup 2000] [--requests 5000]`: what the service's heap
 * keeps from /runsync. Runs the runsync suite's loop (one request at a time, one worker), writes a
 * heap snapshot of the service after the warm-up and after the measured requests (the bench
 * server's `heapSnapshot` command; a snapshot starts with a full collection, so it holds only what is
 * live), and prints what grew between them by node type and constructor: count and self size,
 * largest first. Needs the bench build (`npx tsc -p bench/tsconfig.json`).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { HeapSnapshotWritten } from "../lib/protocol";
import {
  BENCH_API_KEY,
  createQueueEndpoint,
  startService,
  tempDataDir,
  waitForIdleWorkers,
} from "../lib/servers";
import { heapTotals } from "./heapsnapshot-top";

type Totals = Map<string, { size: number; count: number }>;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { warmup: { type: "string", default: "2000" }, requests: { type: "string", default: "5000" } },
  });
  const dir = await mkdtemp(join(tmpdir(), "runsync-heap-"));
  const data = await tempDataDir();
  const svc = await startService({ data: data.file });
  try {
    const endpointId = await createQueueEndpoint(svc, "heap", "runpodkit/echo", 1);
    await waitForIdleWorkers(svc, endpointId, 1);
    const origin = new URL(svc.ready.queueUrl).origin;
    const pool = new Pool(origin, { connections: 1 });
    const headers = { authorization: `Bearer ${BENCH_API_KEY}`, "content-type": "application/json" };
    const snapshot = async () => (await svc.child.call("heapSnapshot", { dir }, HeapSnapshotWritten)).file;
    const loop = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const reply = await pool.request({
          origin,
          path: `/v2/${endpointId}/runsync`,
          method: "POST",
          headers,
          body: JSON.stringify({ input: { n: i } }),
        });
        const envelope = (await reply.body.json()) as { status?: string };
        if (envelope.status !== "COMPLETED") throw new Error(JSON.stringify(envelope));
      }
    };
    await loop(Number(values.warmup));
    const first = heapTotals(await snapshot());
    await loop(Number(values.requests));
    const second = heapTotals(await snapshot());
    const rows = [...new Set([...first.keys(), ...second.keys()])].map((key) => ({
      key,
      size: (second.get(key)?.size ?? 0) - (first.get(key)?.size ?? 0),
      count: (second.get(key)?.count ?? 0) - (first.get(key)?.count ?? 0),
    }));
    const sum = (t: Totals) => [...t.values()].reduce((s, e) => s + e.size, 0);
    console.log(`live heap ${(sum(first) / 1e6).toFixed(2)} -> ${(sum(second) / 1e6).toFixed(2)} MB`);
    for (const row of rows.sort((a, b) => b.size - a.size).slice(0, 30)) {
      console.log(`${String(row.size).padStart(10)} B ${String(row.count).padStart(8)}  ${row.key}`);
    }
    await pool.close();
  } finally {
    await svc.close();
    await data.remove();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
