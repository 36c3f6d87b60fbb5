/**
 * A quick, narrower form of the `sdk` suite for working on sdk/http.ts: client CPU per call of this
 * SDK's JobClient and of a bare undici Pool doing the same run + status cycles against a bare
 * node:http server (all three in processes of their own), alternating, `rounds` times.
 * `tsx bench/tools/sdk-cpu.ts [rounds] [cycles]` prints each round and the median ratio.
 */
import { fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Pool } from "undici";
import { JobClient } from "../../sdk/jobs";
import { inParallel } from "../lib/pool";

const CONCURRENCY = 64;
const API_KEY = "bench-key";

function serve(): void {
  const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    req.on("data", () => {});
    req.on("end", () => {
      const parts = (req.url ?? "/").split("?")[0]?.split("/") ?? [];
      const body =
        req.method === "POST"
          ? JSON.stringify({ id: `${randomUUID()}-u1`, status: "IN_QUEUE" })
          : JSON.stringify({ id: parts[4], status: "IN_QUEUE" });
      res.writeHead(200, {
        "content-type": "application/json; charset=utf-8",
        "content-length": Buffer.byteLength(body),
      });
      res.end(body);
    });
  });
  server.listen(0, "127.0.0.1", () => process.send?.((server.address() as AddressInfo).port));
  process.on("disconnect", () => process.exit(0));
}

async function client(kind: string, baseUrl: string, cycles: number): Promise<void> {
  let cycle: (i: number) => Promise<void>;
  let close: () => Promise<void>;
  if (kind === "ours") {
    const jobs = new JobClient({ apiKey: API_KEY, endpointId: "ep", baseUrl, connections: CONCURRENCY });
    cycle = async (i) => {
      const { id } = await jobs.run({ input: { n: i } });
      const status = await jobs.status(id);
      if (status.id !== id) throw new Error("wrong id");
    };
    close = () => jobs.close();
  } else {
    const url = new URL(baseUrl);
    const pool = new Pool(url.origin, { connections: CONCURRENCY });
    const base = `${url.pathname}/ep`;
    const auth = `Bearer ${API_KEY}`;
    cycle = async (i) => {
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
      if (envelope.id !== id) throw new Error("wrong id");
    };
    close = () => pool.close();
  }
  await inParallel(2_000, CONCURRENCY, cycle);
  const cpu = process.cpuUsage();
  const result = await inParallel(cycles, CONCURRENCY, cycle);
  const used = process.cpuUsage(cpu);
  await close();
  process.send?.({ usPerCall: (used.user + used.system) / (cycles * 2), errors: result.errors });
}

function child<T>(args: string[]): { result: Promise<T>; kill: () => void } {
  const proc = fork(__filename, args, { stdio: "inherit" });
  const result = new Promise<T>((resolve, reject) => {
    proc.once("message", (m) => resolve(m as T));
    proc.once("exit", (code) => reject(new Error(`${args[0]} exited ${code}`)));
  });
  return { result, kill: () => proc.kill() };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const least = (xs: number[]) => Math.min(...xs);

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 5);
  const cycles = Number(process.argv[3] ?? 10_000);
  const server = child<number>(["serve"]);
  const baseUrl = `http://127.0.0.1:${await server.result}/v2`;
  const ratios: number[] = [];
  const figures = { ours: [] as number[], undici: [] as number[] };
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? (["ours", "undici"] as const) : (["undici", "ours"] as const);
      const got: Record<string, number> = {};
      for (const kind of order) {
        const r = await child<{ usPerCall: number; errors: number }>([
          "client",
          kind,
          baseUrl,
          String(cycles),
        ]).result;
        if (r.errors > 0) throw new Error(`${kind}: ${r.errors} errors`);
        got[kind] = r.usPerCall;
        figures[kind].push(r.usPerCall);
      }
      const ratio = (got.ours as number) / (got.undici as number);
      ratios.push(ratio);
      console.log(
        `round ${round}: ours ${got.ours?.toFixed(1)} us/call, undici ${got.undici?.toFixed(1)} us/call, ratio ${ratio.toFixed(3)}`,
      );
    }
    // On a loaded machine the least CPU per call is the steadier figure (interference only adds).
    console.log(
      `least: ours ${least(figures.ours).toFixed(1)}, undici ${least(figures.undici).toFixed(1)} us/call; ratio ${(least(figures.ours) / least(figures.undici)).toFixed(3)}`,
    );
    console.log(
      `median: ours ${median(figures.ours).toFixed(1)}, undici ${median(figures.undici).toFixed(1)} us/call; ratio ${median(ratios).toFixed(3)}`,
    );
  } finally {
    server.kill();
  }
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === "serve") serve();
else if (mode === "client")
  void client(rest[0] as string, rest[1] as string, Number(rest[2])).then(() => process.exit(0));
else void main();
