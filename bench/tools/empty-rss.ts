/**
 * The empty service's resident memory, measured as the bench measures it: the compiled service
 * (bench/.tmp/build) started by bench/server.js with a fresh SQLite file, read from
 * /proc/<pid>/status once it is ready and listening (no request yet), then again after a few
 * requests to each part (REST, GraphQL, the docs, the console, the job API), so code loaded on first
 * use is counted too. Also prints which packages the process has loaded at each point (modules and
 * source bytes, from require.cache) and what each package adds to a bare Node process's RSS when
 * required alone in the order the service loads them.
 *
 *   tsx bench/tools/empty-rss.ts [--skip-build] [--runs N] [-- <node flags for the service>]
 */
import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { JobClient } from "../../sdk/jobs";
import { BUILD_DIR, buildBench, built } from "../lib/build";
import {
  BENCH_API_KEY,
  type BenchService,
  createQueueEndpoint,
  startService,
  tempDataDir,
} from "../lib/servers";

const MB = 1024 * 1024;

/** VmRSS and its parts (anonymous, file-backed, shared memory), in MB, from /proc/<pid>/status. */
async function procRss(pid: number): Promise<{ rss: number; anon: number; file: number; shmem: number }> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return {
    rss: kb("VmRSS") / 1024,
    anon: kb("RssAnon") / 1024,
    file: kb("RssFile") / 1024,
    shmem: kb("RssShmem") / 1024,
  };
}

/** Resident MB per mapping (file name and permissions, or [anon]/[heap]), the largest first, from /proc/<pid>/smaps. */
async function mappings(pid: number): Promise<string> {
  const smaps = await readFile(`/proc/${pid}/smaps`, "utf8");
  const totals = new Map<string, number>();
  let current: string | undefined;
  for (const line of smaps.split("\n")) {
    const head = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      current = `${(head[2] || "[anon]").split("/").pop()} ${head[1]}`;
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && current) totals.set(current, (totals.get(current) ?? 0) + Number(rss[1]) / 1024);
  }
  return [...totals]
    .filter(([, mb]) => mb >= 0.5)
    .sort((a, b) => b[1] - a[1])
    .map(([name, mb]) => `${name} ${mb.toFixed(1)}`)
    .join(", ");
}

const ModuleGroup = z.object({ name: z.string(), modules: z.number(), bytes: z.number() });
const ModulesReply = z.object({
  type: z.literal("empty-rss:modules"),
  groups: z.array(ModuleGroup),
  order: z.array(z.string()),
  heapUsed: z.number(),
  heapTotal: z.number(),
  external: z.number(),
  spaces: z.array(z.object({ name: z.string(), size: z.number(), used: z.number() })),
});
type ModulesReply = z.infer<typeof ModulesReply>;

/**
 * Preloaded into the service process (--require): on a "empty-rss:modules" message over the bench's
 * IPC channel, answers the loaded modules grouped by package (node_modules/<pkg>, else the
 * project's top folder), plus the packages in the order they were first loaded.
 */
const PRELOAD = `
const { statSync } = require("node:fs");
const Module = require("node:module");
const order = [];
const seen = new Set();
const groupOf = (file) => {
  const nm = file.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const parts = file.slice(nm + 14).split("/");
    return parts[0].startsWith("@") ? parts[0] + "/" + parts[1] : parts[0];
  }
  const build = file.indexOf(${JSON.stringify(`${BUILD_DIR}/`)});
  if (build >= 0) {
    const parts = file.slice(build + ${BUILD_DIR.length + 1}).split("/");
    return "(project) " + parts.slice(0, Math.min(parts.length - 1, 2)).join("/");
  }
  return "(other)";
};
const load = Module._load;
Module._load = function (request, parent, isMain) {
  const result = load.apply(this, arguments);
  try {
    const file = Module._resolveFilename(request, parent, isMain);
    if (file.startsWith("/")) {
      const group = groupOf(file);
      if (!seen.has(group)) { seen.add(group); order.push(group); }
    }
  } catch {}
  return result;
};
process.on("message", (message) => {
  if (!message || message.type !== "empty-rss:modules") return;
  const groups = new Map();
  for (const file of Object.keys(require.cache)) {
    const name = groupOf(file);
    const entry = groups.get(name) ?? { name, modules: 0, bytes: 0 };
    entry.modules++;
    try { entry.bytes += statSync(file).size; } catch {}
    groups.set(name, entry);
  }
  const memory = process.memoryUsage();
  process.send({
    type: "empty-rss:modules",
    groups: [...groups.values()],
    order,
    heapUsed: memory.heapUsed,
    heapTotal: memory.heapTotal,
    external: memory.external,
    spaces: require("node:v8").getHeapSpaceStatistics().map((s) => ({
      name: s.space_name,
      size: s.space_size,
      used: s.space_used_size,
    })),
  });
});
`;

async function modules(service: BenchService): Promise<ModulesReply> {
  const child = service.child.process;
  return new Promise((resolve) => {
    const onMessage = (raw: unknown) => {
      const reply = ModulesReply.safeParse(raw);
      if (!reply.success) return;
      child.off("message", onMessage);
      resolve(reply.data);
    };
    child.on("message", onMessage);
    child.send({ type: "empty-rss:modules" });
  });
}

/** A few requests to each part of the service, each route family at least twice. */
async function touchEveryPart(service: BenchService): Promise<void> {
  const { queueUrl, restUrl, graphqlUrl } = service.ready;
  const auth = { authorization: `Bearer ${BENCH_API_KEY}` };
  const ok = async (what: string, response: Response, allowed: number[] = []) => {
    await response.arrayBuffer();
    if (!response.ok && !allowed.includes(response.status))
      throw new Error(`${what}: HTTP ${response.status}`);
  };
  const endpointId = await createQueueEndpoint(service, "touched", "runpodkit/echo", 0);
  const jobs = new JobClient({ apiKey: BENCH_API_KEY, endpointId, baseUrl: `${queueUrl}/v2` });
  try {
    for (let i = 0; i < 3; i++) {
      await service.rest.pods.list();
      await service.rest.endpoints.list();
      await ok(
        "graphql",
        await fetch(graphqlUrl, {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify({
            query: "query { myself { id endpoints { id name workersMax } pods { id } } }",
          }),
        }),
      );
      await ok("openapi.json", await fetch(`${restUrl}/openapi.json`));
      await ok("docs", await fetch(`${restUrl}/docs/`));
      await ok("docs json", await fetch(`${restUrl}/docs/json`));
      // bench/.tmp/build has no copy of the console's static files: 404 there, the route still runs.
      await ok("console", await fetch(`${queueUrl}/console/`), [404]);
      const job = await jobs.run({ input: { prompt: "hello" } });
      await jobs.status(job.id);
      await jobs.health();
    }
  } finally {
    await jobs.close();
  }
}

/** RSS of a bare Node process after requiring each package in turn (the marginal cost of each). */
async function marginal(order: readonly string[], execArgv: readonly string[]): Promise<string> {
  const packages = order.filter((name) => !name.startsWith("("));
  const script = `
    const { readFileSync } = require("node:fs");
    const rss = () => Number(/^VmRSS:\\s+(\\d+)/m.exec(readFileSync("/proc/self/status", "utf8"))[1]) / 1024;
    const rows = [["node", rss()]];
    for (const name of ${JSON.stringify(packages)}) {
      try { require(name); } catch (error) { rows.push([name + " (not loadable alone: " + error.code + ")", rss()]); continue; }
      rows.push([name, rss()]);
    }
    require(${JSON.stringify(built("service/index"))});
    rows.push(["service/index.js (the rest)", rss()]);
    process.stdout.write(JSON.stringify(rows));
  `;
  const child = spawn(process.execPath, [...execArgv, "-e", script], {
    cwd: join(BUILD_DIR, "service"),
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  await new Promise((resolve) => child.once("exit", resolve));
  const rows = z.array(z.tuple([z.string(), z.number()])).parse(JSON.parse(out));
  let previous = 0;
  return rows
    .map(([name, rss]) => {
      const line = `    ${name.padEnd(44)} ${rss.toFixed(1).padStart(6)} MB  (+${(rss - previous).toFixed(1)})`;
      previous = rss;
      return line;
    })
    .join("\n");
}

function table(reply: ModulesReply): string {
  const rows = [...reply.groups].sort((a, b) => b.bytes - a.bytes);
  const total = rows.reduce((sum, r) => sum + r.bytes, 0);
  return [
    ...rows.map(
      (r) =>
        `    ${r.name.padEnd(44)} ${String(r.modules).padStart(4)} modules ${(r.bytes / 1024).toFixed(0).padStart(6)} KB`,
    ),
    `    ${"total".padEnd(44)} ${String(rows.reduce((s, r) => s + r.modules, 0)).padStart(4)} modules ${(total / 1024).toFixed(0).padStart(6)} KB`,
    `    heap used ${(reply.heapUsed / MB).toFixed(1)} MB of ${(reply.heapTotal / MB).toFixed(1)} MB, external ${(reply.external / MB).toFixed(1)} MB`,
    `    heap spaces (used/size MB): ${reply.spaces
      .filter((space) => space.size > 0)
      .map(
        (space) =>
          `${space.name.replace(/_space$/, "")} ${(space.used / MB).toFixed(1)}/${(space.size / MB).toFixed(1)}`,
      )
      .join(", ")}`,
  ].join("\n");
}

const fmt = (m: Awaited<ReturnType<typeof procRss>>) =>
  `RSS ${m.rss.toFixed(1)} MB (anon ${m.anon.toFixed(1)}, file ${m.file.toFixed(1)}, shmem ${m.shmem.toFixed(1)})`;

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const dash = args.indexOf("--");
  const flags = dash >= 0 ? args.slice(dash + 1) : [];
  const own = dash >= 0 ? args.slice(0, dash) : args;
  const runsAt = own.indexOf("--runs");
  const runs = runsAt >= 0 ? Number(own[runsAt + 1]) : 3;
  if (!own.includes("--skip-build")) {
    const { ms } = await buildBench();
    console.log(`built in ${ms} ms`);
  }
  const preload = join(BUILD_DIR, "empty-rss-preload.js");
  await writeFile(preload, PRELOAD);
  const ready: number[] = [];
  const touched: number[] = [];
  let last:
    | { atReady: ModulesReply; afterRequests: ModulesReply; atReadyMaps: string; afterMaps: string }
    | undefined;
  for (let run = 0; run < runs; run++) {
    const data = await tempDataDir();
    const service = await startService({ data: data.file }, { execArgv: [...flags, "--require", preload] });
    try {
      await sleep(500); // whatever start-up scheduled (timers, the first store flush) has run
      const atReadyRss = await procRss(service.child.pid);
      const atReadyMaps = await mappings(service.child.pid);
      const atReady = await modules(service);
      await touchEveryPart(service);
      await sleep(500);
      const afterRss = await procRss(service.child.pid);
      const afterMaps = await mappings(service.child.pid);
      const afterRequests = await modules(service);
      ready.push(atReadyRss.rss);
      touched.push(afterRss.rss);
      console.log(
        `run ${run + 1}: ready ${fmt(atReadyRss)}, start ${service.ready.startMs.toFixed(0)} ms; after requests ${fmt(afterRss)}`,
      );
      last = { atReady, afterRequests, atReadyMaps, afterMaps };
    } finally {
      await service.close();
      await data.remove();
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  console.log(
    `\nmedian of ${runs}: ready ${median(ready).toFixed(1)} MB, after requests ${median(touched).toFixed(1)} MB${flags.length ? ` (node flags: ${flags.join(" ")})` : ""}`,
  );
  if (!last) return;
  console.log(
    "\nresident by mapping, MB (last run; `node r-xp` is the binary's code, `node r--p` its read-only data):",
  );
  console.log(`  ready:          ${last.atReadyMaps}`);
  console.log(`  after requests: ${last.afterMaps}`);
  console.log("\nloaded at ready (last run):");
  console.log(table(last.atReady));
  console.log("\nloaded after requests (last run):");
  console.log(table(last.afterRequests));
  console.log("\npackages in load order, required one by one into a bare node (RSS after each):");
  console.log(await marginal(last.afterRequests.order, flags));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
