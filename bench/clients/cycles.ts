/**
 * SDK client (its own process, so only the client's CPU is counted): `cycles` run + status cycles,
 * `concurrency` in flight, through this project's JobClient or through `runpod-sdk`, the real
 * service's official JS client (or a bare undici Pool: the floor any client pays). A warm-up precedes the timed loop; CPU is process.cpuUsage around it.
 */
import { performance } from "node:perf_hooks";
import { Pool } from "undici";
import { JobClient } from "../../sdk/jobs";
import { serveIpc } from "../lib/ipc";
import { inParallel } from "../lib/pool";
import { CyclesArgs, type LoopResult } from "../lib/protocol";

type Cycle = (i: number) => Promise<void>;

function ours(baseUrl: string, endpointId: string, apiKey: string, connections: number) {
  const client = new JobClient({ apiKey, endpointId, baseUrl, connections });
  const cycle: Cycle = async (i) => {
    const { id } = await client.run({ input: { n: i } });
    const status = await client.status(id);
    if (status.id !== id) throw new Error(`status of ${id} answered ${status.id}`);
  };
  return { cycle, close: () => client.close() };
}

/** The floor: a bare undici Pool, no validation, no retry, no timeout bookkeeping. */
function undiciPool(baseUrl: string, endpointId: string, apiKey: string, connections: number) {
  const url = new URL(baseUrl);
  const pool = new Pool(url.origin, { connections });
  const base = `${url.pathname.replace(/\/+$/, "")}/${endpointId}`;
  const auth = `Bearer ${apiKey}`;
  const cycle: Cycle = async (i) => {
    const run = await pool.request({
      path: `${base}/run`,
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({ input: { n: i } }),
    });
    const { id } = (await run.body.json()) as { id: string };
    const status = await pool.request({
      path: `${base}/status/${id}`,
      method: "GET",
      headers: { authorization: auth },
    });
    const envelope = (await status.body.json()) as { id: string };
    if (run.statusCode !== 200 || envelope.id !== id) throw new Error(`undici: cycle ${i} failed`);
  };
  return { cycle, close: () => pool.close() };
}

async function official(baseUrl: string, endpointId: string, apiKey: string) {
  // runpod-sdk is an ES module; this file is CommonJS.
  const { default: runpodSdk } = await import("runpod-sdk");
  const endpoint = runpodSdk(apiKey, { baseUrl }).endpoint(endpointId);
  if (!endpoint) throw new Error("runpod-sdk returned no endpoint");
  const cycle: Cycle = async (i) => {
    const accepted = await endpoint.run({ input: { n: i } });
    // The official client returns {status, statusText} instead of throwing on a non-200 reply.
    if (!accepted.id) throw new Error(`run failed: ${JSON.stringify(accepted)}`);
    const status = await endpoint.status(accepted.id);
    if (status.id !== accepted.id) throw new Error(`status failed: ${JSON.stringify(status)}`);
  };
  return { cycle, close: async () => {} };
}

async function cycles(raw: unknown): Promise<LoopResult> {
  const args = CyclesArgs.parse(raw);
  const apiKey = process.env.BENCH_API_KEY ?? "";
  const client =
    args.client === "ours"
      ? ours(args.baseUrl, args.endpointId, apiKey, args.concurrency)
      : args.client === "undici"
        ? undiciPool(args.baseUrl, args.endpointId, apiKey, args.concurrency)
        : await official(args.baseUrl, args.endpointId, apiKey);
  try {
    const warm = await inParallel(args.warmup, args.concurrency, client.cycle);
    if (warm.errors > 0) throw new Error(`${args.client}: warm-up failed: ${warm.firstError}`);
    const cpu = process.cpuUsage();
    const started = performance.now();
    const run = await inParallel(args.cycles, args.concurrency, client.cycle);
    const elapsedMs = performance.now() - started;
    const used = process.cpuUsage(cpu);
    return {
      calls: args.cycles,
      elapsedMs,
      cpuUserUs: used.user,
      cpuSystemUs: used.system,
      errors: run.errors,
      ...(run.firstError ? { firstError: run.firstError } : {}),
    };
  } finally {
    await client.close();
  }
}

serveIpc({ run: cycles }, { pid: process.pid });
