/**
 * /runsync latency client (its own process): one request at a time over a keep-alive connection
 * (undici, no SDK layer, so the figure is the service's), each timed; and the same no-op handler
 * called directly in-process, the floor the service's path is compared with. Pointed at the bare
 * server (`direct: false`), the same loop gives the bare keep-alive HTTP round trip.
 */
import { performance } from "node:perf_hooks";
import { Pool } from "undici";
import { handler as echo } from "../../service/jobs/workers/handlers/echo";
import { serveIpc } from "../lib/ipc";
import { LatencyArgs, type LatencyResult } from "../lib/protocol";
import { quantile } from "../lib/stats";

async function runsync(raw: unknown): Promise<LatencyResult> {
  const args = LatencyArgs.parse(raw);
  const apiKey = process.env.BENCH_API_KEY ?? "";
  const origin = new URL(args.queueUrl).origin;
  const pool = new Pool(origin, { connections: 1 });
  const path = `/v2/${args.endpointId}/runsync`;
  const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
  const samples: number[] = [];
  let wrong = 0;
  try {
    for (let i = 0; i < args.warmup + args.requests; i++) {
      const body = JSON.stringify({ input: { n: i } });
      const started = performance.now();
      const reply = await pool.request({ origin, path, method: "POST", headers, body });
      const envelope = (await reply.body.json()) as { status?: string; output?: { n?: number } };
      const ms = performance.now() - started;
      if (reply.statusCode !== 200 || envelope.status !== "COMPLETED" || envelope.output?.n !== i) wrong++;
      if (i >= args.warmup) samples.push(ms);
    }
  } finally {
    await pool.close();
  }
  const direct: number[] = [];
  for (let i = 0; args.direct && i < args.warmup + args.requests; i++) {
    const started = performance.now();
    await echo({ id: `direct-${i}`, input: { n: i } });
    if (i >= args.warmup) direct.push(performance.now() - started);
  }
  return {
    p50Ms: quantile(samples, 0.5),
    p99Ms: quantile(samples, 0.99),
    directP50Ms: direct.length > 0 ? quantile(direct, 0.5) : 0,
    directP99Ms: direct.length > 0 ? quantile(direct, 0.99) : 0,
    wrong,
  };
}

serveIpc({ run: runsync }, { pid: process.pid });
