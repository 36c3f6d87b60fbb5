/**
 * `npx tsx bench/tools/soak.ts [--seconds 600] [--clients 12] [--endpoints 8] [--skip-build]`: a CI
 * farm's mixed load on one service for a while, to see that nothing grows with time. `endpoints`
 * endpoints (images echo, stream, fail and sleep in turn; 0 to 2 workers each, idle timeout 3 s, so
 * workers start and stop throughout), the spec's rate limits on, and `clients` loops each sending
 * /run then polling to the end, /runsync, /run then /stream to the end, or /run then /cancel. Every 20
 * s: the service's RSS, open file descriptors, threads and worker processes, and the jobs done; at
 * the end, each outcome's count (an error is any call that threw) and RSS's growth over the run's
 * second half. For finding leaks, not for targets: nothing here is a same-run ratio.
 */

import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { JobClient } from "../../sdk/index";
import { buildBench } from "../lib/build";
import { BENCH_API_KEY, startService, tempDataDir } from "../lib/servers";

const IMAGES = ["runpodkit/echo", "runpodkit/stream", "runpodkit/fail", "runpodkit/sleep"] as const;
const SAMPLE_EVERY_MS = 20_000;

interface Sample {
  seconds: number;
  rssMb: number;
  fds: number;
  threads: number;
  workers: number;
  jobs: number;
}

function readSample(pid: number, seconds: number, jobs: number): Sample {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
  // Worker processes are the service's children (`/proc/<pid>/task/<pid>/children`, one line of pids).
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
  return {
    seconds,
    rssMb: field("VmRSS") / 1024,
    fds: readdirSync(`/proc/${pid}/fd`).length,
    threads: field("Threads"),
    workers: children === "" ? 0 : children.split(/\s+/).length,
    jobs,
  };
}

function show(s: Sample): string {
  return `${String(s.seconds).padStart(5)} s  RSS ${s.rssMb.toFixed(1).padStart(6)} MB  fds ${String(s.fds).padStart(4)}  threads ${String(s.threads).padStart(3)}  workers ${String(s.workers).padStart(3)}  jobs ${s.jobs}`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: "string", default: "600" },
      clients: { type: "string", default: "12" },
      endpoints: { type: "string", default: "8" },
      "skip-build": { type: "boolean", default: false },
    },
  });
  const seconds = Number(values.seconds);
  if (!values["skip-build"]) await buildBench();
  const data = await tempDataDir();
  const svc = await startService({ data: data.file, rateLimits: true });
  const endpoints: { image: (typeof IMAGES)[number]; jobs: JobClient }[] = [];
  const outcomes = new Map<string, number>();
  const count = (outcome: string) => outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  let done = 0;
  let stop = false;
  try {
    for (let i = 0; i < Number(values.endpoints); i++) {
      const image = IMAGES[i % IMAGES.length] ?? "runpodkit/echo";
      const template = await svc.rest.templates.create({
        name: `soak-${i}`,
        imageName: image,
        isServerless: true,
      });
      const endpoint = await svc.rest.endpoints.create({
        name: `soak-${i}`,
        templateId: template.id,
        workersMin: 0,
        workersMax: 2,
        idleTimeout: 3,
      });
      const jobs = new JobClient({
        apiKey: BENCH_API_KEY,
        endpointId: endpoint.id,
        baseUrl: `${svc.ready.queueUrl}/v2`,
      });
      endpoints.push({ image, jobs });
    }
    const client = async (first: number) => {
      for (let n = first; !stop; n++) {
        const { image, jobs } = endpoints[n % endpoints.length] ?? { image: "", jobs: undefined };
        if (!jobs) return;
        try {
          if (image === "runpodkit/stream") {
            const { id } = await jobs.run({ input: { chunks: 5 } });
            let chunks = 0;
            for await (const _ of jobs.stream(id)) chunks++;
            count(`stream, ${chunks} chunks`);
          } else if (n % 7 === 0) {
            const { id } = await jobs.run({ input: { seconds: 5 } });
            count(`cancel: ${(await jobs.cancel(id)).status}`);
          } else {
            const input = image === "runpodkit/sleep" ? { seconds: 0.05 } : { n, pad: "x".repeat(n % 2000) };
            const reply =
              n % 3 === 0
                ? await jobs.runSync({ input })
                : await jobs.waitFor((await jobs.run({ input })).id);
            count(`${n % 3 === 0 ? "runsync" : "run + status"} ${image}: ${reply.status}`);
          }
        } catch (error) {
          count(
            `error: ${error instanceof Error ? `${error.name}: ${error.message.slice(0, 120)}` : String(error)}`,
          );
        }
        done++;
      }
    };
    const samples = [readSample(svc.ready.pid, 0, 0)];
    console.log(show(samples[0] as Sample));
    const clients = Array.from({ length: Number(values.clients) }, (_, i) => client(i));
    const started = Date.now();
    while (Date.now() - started < seconds * 1000) {
      await sleep(SAMPLE_EVERY_MS);
      const sample = readSample(svc.ready.pid, Math.round((Date.now() - started) / 1000), done);
      samples.push(sample);
      console.log(show(sample));
    }
    stop = true;
    await Promise.all(clients);
    await sleep(8_000); // past the idle timeout: every worker stopped
    const idle = readSample(svc.ready.pid, Math.round((Date.now() - started) / 1000), done);
    console.log(`${show(idle)}  (idle)`);
    for (const [outcome, n] of [...outcomes].sort()) console.log(`  ${String(n).padStart(7)}  ${outcome}`);
    const half = samples.slice(Math.floor(samples.length / 2));
    const [first, last] = [half[0], half.at(-1)];
    if (first && last && last.seconds > first.seconds) {
      const perMinute = ((last.rssMb - first.rssMb) / (last.seconds - first.seconds)) * 60;
      console.log(
        `second half: RSS ${first.rssMb.toFixed(1)} -> ${last.rssMb.toFixed(1)} MB (${perMinute.toFixed(2)} MB a minute), fds ${Math.min(...half.map((s) => s.fds))}-${Math.max(...half.map((s) => s.fds))}`,
      );
    }
  } finally {
    stop = true;
    await Promise.all(endpoints.map((e) => e.jobs.close()));
    await svc.close();
    await data.remove();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
