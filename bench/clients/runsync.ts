/**
 * /runsync latency client (its own process): one request at a time over a keep-alive connection
 * (undici, no SDK layer, so the figure is the service's), each timed; and the same no-op handler
 * called directly in-process, the floor the service's path is compared with. Pointed at the bare
 * server (`direct: false`), the same loop gives the bare keep-alive HTTP round trip.
 *
 * Each reply is read whole by a small dispatch handler, as the SDK reads its replies (sdk/http.ts),
 * not through undici's `request()`: its per-call objects outlive the call (~2.5 KB a call reached
 * V8's old generation), so this process's own young-generation collections copied megabytes, 5-20
 * ms pauses inside the timed requests of both loops (bench/tools/runsync-tail.ts, "GC client").
 */
import { performance } from "node:perf_hooks";
import { type Dispatcher, Pool } from "undici";
import { handler as echo } from "../../service/jobs/workers/handlers/echo";
import { serveIpc } from "../lib/ipc";
import { LatencyArgs, type LatencyResult } from "../lib/protocol";
import { quantile } from "../lib/stats";

/** One POST over the pool, its reply read whole: status and text. */
function post(
  pool: Pool,
  options: { origin: string; path: string; headers: Record<string, string>; body: string },
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    let status = 0;
    const chunks: Buffer[] = [];
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: () => {},
      onResponseStart: (_controller, statusCode) => {
        status = statusCode;
      },
      onResponseData: (_controller, chunk) => {
        chunks.push(chunk);
      },
      onResponseEnd: () => resolve({ status, text: Buffer.concat(chunks).toString("utf8") }),
      onResponseError: (_controller, error) => reject(error),
    };
    pool.dispatch({ ...options, method: "POST" }, handler);
  });
}

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
      const reply = await post(pool, { origin, path, headers, body });
      const envelope = JSON.parse(reply.text) as { status?: string; output?: { n?: number } };
      const ms = performance.now() - started;
      if (reply.status !== 200 || envelope.status !== "COMPLETED" || envelope.output?.n !== i) wrong++;
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
