import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { installNode } from "../../../engine/package";
import { LOWEST_NODE } from "../../e2e/support/node-versions";

/*
 * The job store's SQL on the lowest supported Node: its node:sqlite is older than the project's Node
 * 24 (the scan at start once used numbered parameters that Node 22.19 refused, and the CLI did not
 * start there). A store with queued, running and finished jobs of two endpoints, written and read
 * back by a new JobStore, as a restart does.
 */

const LOADER = `file://${resolve("node_modules/tsx/dist/loader.mjs")}`;

const SCRIPT = `
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
// Node 22 hands these CommonJS modules' exports over as the default export only.
const load = async (path) => { const m = await import(path); return m.default ?? m; };
const { openDatabase } = await load(${JSON.stringify(resolve("service/db.ts"))});
const { JobStore, jobMigrations } = await load(${JSON.stringify(resolve("service/jobs/store/job-store.ts"))});
const { createJob } = await load(${JSON.stringify(resolve("service/jobs/model/job.ts"))});
const dir = mkdtempSync(join(tmpdir(), "runpodkit-lowest-node-"));
try {
  const file = join(dir, "store.sqlite");
  let db = openDatabase(file, jobMigrations);
  const first = new JobStore(db);
  const jobs = [];
  for (let i = 0; i < 2500; i++) {
    const job = createJob({ id: "job-" + i, accountId: "acc", endpointId: i % 5 === 4 ? "ep-b" : "ep-a", kind: "async", input: { i }, now: i });
    if (i === 0) { job.status = "COMPLETED"; job.completedAt = 10; job.output = { done: true }; }
    if (i === 1) { job.status = "IN_PROGRESS"; job.startedAt = 5; job.workerId = "w"; }
    first.save(job);
    jobs.push(job);
  }
  first.flush();
  db.close();
  db = openDatabase(file, jobMigrations);
  const store = new JobStore(db);
  const startup = store.startup();
  const counts = startup.counts.map((c) => [c.endpointId, c.status, c.count]).sort();
  const queues = Object.fromEntries([...startup.queues].map(([ep, seqs]) => [ep, seqs.length]));
  const head = startup.queues.get("ep-a").slice(0, 3).map((seq) => store.atRow(seq).id);
  const found = store.get("job-0");
  process.stdout.write(JSON.stringify({ counts, queues, running: startup.running.length, head, found: found && [found.status, found.output] }));
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
`;

const Outcome = z.object({
  counts: z.array(z.tuple([z.string(), z.string(), z.number()])),
  queues: z.record(z.string(), z.number()),
  running: z.number(),
  head: z.array(z.string()),
  found: z.tuple([z.string(), z.unknown()]),
});

describe(`job store on the lowest supported Node (${LOWEST_NODE})`, () => {
  it("writes and restores queued, running and finished jobs as on the project's Node", async () => {
    for (const node of [process.execPath, await installNode(LOWEST_NODE)]) {
      const outcome = Outcome.parse(
        JSON.parse(
          execFileSync(node, ["--import", LOADER, "--input-type=module", "-e", SCRIPT], { encoding: "utf8" }),
        ),
      );
      expect(outcome.counts).toEqual([
        ["ep-a", "COMPLETED", 1],
        ["ep-a", "IN_PROGRESS", 1],
        ["ep-a", "IN_QUEUE", 1998],
        ["ep-b", "IN_QUEUE", 500],
      ]);
      expect(outcome.queues).toEqual({ "ep-a": 1998, "ep-b": 500 });
      expect(outcome.running).toBe(1);
      expect(outcome.head).toEqual(["job-2", "job-3", "job-5"]);
      expect(outcome.found).toEqual(["COMPLETED", { done: true }]);
    }
  }, 300_000);
});
