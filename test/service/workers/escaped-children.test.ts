import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { killMarked, markOf } from "../../../service/jobs/workers/runtime/tree";
import { ACCOUNT, eventually, type Harness, startHarness } from "../jobs/harness";
import { alive, startCli, within } from "../security/cli";

const linux = process.platform === "linux";
const DETACHED = resolve("test/service/workers/fixtures/spawns-detached.ts");
const DETACHED_LEAKS = resolve("test/service/workers/fixtures/detached-leaks.ts");
const RUNTIME_MAIN = resolve("service/jobs/workers/runtime/main.ts");
const LOADER = `file://${resolve("node_modules/tsx/dist/loader.mjs")}`;
const UPPERCASE = resolve("examples/handlers/uppercase.ts");

let h: Harness | null = null;
let dir: string | null = null;
/** Processes a test saw its handlers leave, unmarked (the old code): each ended after it, by pid. */
const escaped: number[] = [];
/** Marks of workers a test started, read while their processes lived: what carries them is ended after it. */
const marks: string[] = [];

/** Ends the escaped child after the test, by its mark (read now: its pid may be reused once it is gone). */
function recordEscaped(pid: number): void {
  const mark = markOf(pid);
  if (mark !== null) marks.push(mark);
  else escaped.push(pid);
}

afterEach(async () => {
  await h?.close();
  h = null;
  // The old code left them running: whatever carries their marks, then the unmarked by pid.
  const left = new Set(marks.splice(0));
  if (left.size > 0) await killMarked(left);
  for (const pid of escaped.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  if (dir !== null) rmSync(dir, { recursive: true, force: true });
  dir = null;
});

/** The live processes carrying one of the marks (read, never signalled). */
function carrying(wanted: ReadonlySet<string>): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry) && wanted.has(markOf(entry) ?? "") && alive(Number(entry)))
    .map(Number);
}

/** The handlers: a Node module spawning `detached`, and a command line whose shell runs `setsid`. */
type Kind = "module" | "command";

/** A handler of the kind, and the file a command handler writes its escaped child's pid to. */
function handlerOf(kind: Kind): { handler: string; pidFile: string } {
  dir ??= mkdtempSync(join(tmpdir(), "rpk-escaped-"));
  const pidFile = join(dir, "child.pid");
  const handler =
    kind === "module"
      ? DETACHED
      : `cmd:setsid sleep 300 & echo $! > '${pidFile}'; exec "${process.execPath}" --import ${LOADER} "${RUNTIME_MAIN}" "${UPPERCASE}"`;
  return { handler, pidFile };
}

/** The pid a job's output or the command's pid file names. */
function childOf(output: { child?: number }, pidFile: string): number {
  const written = existsSync(pidFile) ? readFileSync(pidFile, "utf8") : "";
  return output.child ?? (written.endsWith("\n") ? Number(written.trim()) : Number.NaN);
}

async function start(kind: Kind, clock?: ManualClock): Promise<{ harness: Harness; pidFile: string }> {
  const { handler, pidFile } = handlerOf(kind);
  const harness = await startHarness({
    ...(clock ? { clock } : {}),
    config: { handlers: { "acme/escapes": handler } },
  });
  h = harness;
  return { harness, pidFile };
}

/** Runs one job on the endpoint; the pid of the process its worker left outside its process group. */
async function escapedChild(harness: Harness, endpointId: string, pidFile: string): Promise<number> {
  const reply = await harness.call("POST", `/v2/${endpointId}/runsync`, { body: { input: { text: "a" } } });
  const job = reply.body as { status: string; output: { child?: number } };
  expect(job.status).toBe("COMPLETED");
  const child = childOf(job.output, pidFile);
  expect(Number.isSafeInteger(child)).toBe(true);
  recordEscaped(child);
  expect(alive(child)).toBe(true);
  // It left the worker's process group: signalling the group does not reach it.
  const stat = readFileSync(`/proc/${child}/stat`, "utf8");
  const group = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
  const worker = harness.plane.pool.workersOf(endpointId)[0];
  expect(group).not.toBe(worker?.process?.pid);
  return child;
}

describe.runIf(linux).each<Kind>(["module", "command"])(
  "a process a %s handler starts outside its worker's process group",
  (kind) => {
    it("ends when the endpoint scales to zero", { timeout: 60_000 }, async () => {
      const clock = new ManualClock();
      const { harness, pidFile } = await start(kind, clock);
      const ep = harness.endpoint("acme/escapes", { idleTimeout: 1 });
      const child = await escapedChild(harness, ep.id, pidFile);
      // The scaler's turns stop the idle worker; the child lived on, for good.
      const gone = async () => {
        await clock.advance(1_000);
        return harness.plane.pool.workersOf(ep.id).length === 0 && !alive(child);
      };
      expect(await within(15_000, gone)).toBe(true);
    });

    it("ends when the endpoint is deleted", { timeout: 60_000 }, async () => {
      const { harness, pidFile } = await start(kind);
      const ep = harness.endpoint("acme/escapes");
      const child = await escapedChild(harness, ep.id, pidFile);
      // As a user deletes one (the API refuses an endpoint with workers): scaled to 0, deleted at once.
      harness.management.endpoints.update(ACCOUNT, ep.id, { workersMin: 0, workersMax: 0 });
      harness.management.endpoints.delete(ACCOUNT, ep.id);
      expect(await within(15_000, () => !alive(child))).toBe(true);
    });

    it("is ended by the time the service has closed", { timeout: 60_000 }, async () => {
      const { harness, pidFile } = await start(kind);
      const ep = harness.endpoint("acme/escapes");
      const child = await escapedChild(harness, ep.id, pidFile);
      await harness.close();
      h = null;
      // Killed before close resolved; SIGKILL takes effect as the process is next scheduled.
      expect(await within(5_000, () => !alive(child))).toBe(true);
    });

    it("ends when the service is killed with SIGKILL", { timeout: 60_000 }, async () => {
      const KEY = "rpk_escaped_children_0123456789";
      const { handler, pidFile } = handlerOf(kind);
      const cli = startCli(["--data", ":memory:", "--handler", `acme/escapes=${handler}`], {
        RUNPODKIT_API_KEYS: KEY,
      });
      const { restUrl, queueUrl } = await cli.ready;
      const post = async (url: string, body: unknown) =>
        (
          await fetch(url, {
            method: "POST",
            headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
            body: JSON.stringify(body),
          })
        ).json() as Promise<Record<string, unknown>>;
      const template = await post(`${restUrl}/templates`, {
        name: "escapes",
        imageName: "acme/escapes",
        isServerless: true,
      });
      const endpoint = await post(`${restUrl}/endpoints`, { templateId: template.id, workersMax: 1 });
      const job = (await post(`${queueUrl}/v2/${String(endpoint.id)}/runsync`, {
        input: { text: "a" },
      })) as { status: string; output: { child?: number } };
      expect(job.status).toBe("COMPLETED");
      const child = childOf(job.output, pidFile);
      expect(Number.isSafeInteger(child)).toBe(true);
      recordEscaped(child);
      expect(alive(child)).toBe(true);

      cli.child.kill("SIGKILL");
      await cli.exited;
      // The worker ends what carries its mark as it sees the service gone, then its own group.
      expect(await within(10_000, () => !alive(child))).toBe(true);
    });
  },
);

describe.runIf(linux)("the sweep by a worker's mark", () => {
  it("ends only that worker's processes: another worker's, and the service, are left", {
    timeout: 60_000,
  }, async () => {
    const { harness, pidFile } = await start("module");
    const gone = harness.endpoint("acme/escapes");
    const kept = harness.endpoint("acme/escapes");
    const goneChild = await escapedChild(harness, gone.id, pidFile);
    const keptChild = await escapedChild(harness, kept.id, pidFile);
    // Each worker's tree has a mark of its own.
    expect(markOf(goneChild)).not.toBeNull();
    expect(markOf(keptChild)).not.toBeNull();
    expect(markOf(goneChild)).not.toBe(markOf(keptChild));
    harness.management.endpoints.update(ACCOUNT, gone.id, { workersMin: 0, workersMax: 0 });
    harness.management.endpoints.delete(ACCOUNT, gone.id);
    expect(await within(15_000, () => !alive(goneChild))).toBe(true);
    expect(alive(keptChild)).toBe(true);
    expect(harness.plane.pool.workersOf(kept.id)).toHaveLength(1);
    expect(alive(process.pid)).toBe(true);
  });
});

describe.runIf(linux)("the memory watch", () => {
  it("counts what a worker started outside its process group, and ends it over the bound", {
    timeout: 60_000,
  }, async () => {
    const clock = new ManualClock();
    const harness = await startHarness({
      clock,
      config: {
        handlers: { "acme/detached-leaks": DETACHED_LEAKS },
        // A worker under tsx holds ~100 MiB; its detached child 256 MiB more.
        workerMemoryBytes: 192 * 1024 * 1024,
        memoryWatchMs: 1_000,
      },
    });
    h = harness;
    const ep = harness.endpoint("acme/detached-leaks");
    const { pidFile } = handlerOf("module");
    const run = await harness.call("POST", `/v2/${ep.id}/run`, { body: { input: { mb: 256, pidFile } } });
    const id = (run.body as { id: string }).id;
    // Its child, ended after the test whatever happens.
    expect(await within(20_000, () => childOf({}, pidFile) > 0)).toBe(true);
    recordEscaped(childOf({}, pidFile));
    // Each turn of the clock is one reading of /proc.
    const failed = await eventually(async () => {
      for (const worker of harness.plane.pool.workersOf(ep.id)) if (worker.mark) marks.push(worker.mark);
      await clock.advance(1_000);
      const job = (await harness.call("GET", `/v2/${ep.id}/status/${id}`)).body as {
        status: string;
        error?: string;
      };
      return job.status === "IN_QUEUE" || job.status === "IN_PROGRESS" ? undefined : job;
    }, 30_000);
    expect(failed.status).toBe("FAILED");
    expect(failed.error).toMatch(
      /^worker \S+ was ended while running the job: its resident memory \(its process group's, with what it started outside the group\) reached \d+ MiB, over the bound of 192 MiB a worker/,
    );
    // The child went with its worker.
    const theirs = new Set(marks);
    expect(await within(10_000, () => carrying(theirs).length === 0)).toBe(true);
  });
});
