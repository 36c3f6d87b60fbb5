/**
 * `npx tsx bench/tools/run-cpu.ts [--jobs 30000] [--rounds 3] [-- <node flags for variant B>]`: the
 * service's CPU per /run (64 connections, an endpoint without workers) and its RSS after, alternating
 * a service with plain node (A) and one with the given flags (B), one fresh service per round and
 * side, from the existing build (bench/.tmp/build). For A/B checks of engine settings only.
 */
import { parseArgs } from "node:util";
import { load } from "../lib/load";
import {
  BENCH_API_KEY,
  createQueueEndpoint,
  splitNodeFlags,
  startService,
  tempDataDir,
} from "../lib/servers";

const MB = 1024 * 1024;

async function once(flags: string[], jobs: number): Promise<{ cpuUs: number; rssMb: number; rate: number }> {
  const data = await tempDataDir();
  const svc = await startService({ data: data.file }, { execArgv: flags });
  try {
    const endpointId = await createQueueEndpoint(svc, "cpu", "runpodkit/echo", 0);
    const request = {
      url: `${svc.ready.queueUrl}/v2/${endpointId}/run`,
      connections: 64,
      method: "POST" as const,
      headers: { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}` },
      body: JSON.stringify({ input: { prompt: "hello", max_tokens: 16 } }),
    };
    await load({ ...request, amount: 5000 });
    const before = await svc.stats();
    const result = await load({ ...request, amount: jobs });
    const after = await svc.stats();
    return {
      cpuUs: (after.cpuUs - before.cpuUs) / result.total2xx,
      rssMb: after.rss / MB,
      rate: result.acceptedPerSec,
    };
  } finally {
    await svc.close();
    await data.remove();
  }
}

async function main(): Promise<void> {
  const { args, nodeFlags: flags } = splitNodeFlags(process.argv.slice(2));
  const { values } = parseArgs({
    args,
    options: { jobs: { type: "string", default: "30000" }, rounds: { type: "string", default: "3" } },
  });
  const jobs = Number(values.jobs);
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const side of round % 2 === 0 ? ["A", "B"] : ["B", "A"]) {
      const r = await once(side === "A" ? [] : flags, jobs);
      (side === "A" ? a : b).push(r.cpuUs);
      console.log(
        `${side}: ${r.cpuUs.toFixed(1)} us CPU per /run, ${r.rate.toFixed(0)}/s, RSS after ${r.rssMb.toFixed(0)} MB`,
      );
    }
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? Number.NaN;
  console.log(
    `median A ${median(a).toFixed(1)} us, B ${median(b).toFixed(1)} us, B/A ${(median(b) / median(a)).toFixed(3)}`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
