import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { type Harness, startHarness } from "../jobs/harness";
import { alive, type Cli, startCli, within } from "../security/cli";

const FIXTURE = resolve("test/service/workers/fixtures/spawns-child.ts");
const WRITES_ONCE_ORPHANED = resolve("test/service/workers/fixtures/writes-once-orphaned.ts");
const KEY = "rpk_handler_children_0123456789ab";

/** Processes a test saw started: whatever outlived its check is ended after it. */
const started: number[] = [];
let h: Harness | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

/** A template of `image` and an endpoint of one worker on a started CLI: its job API base and a POST. */
async function oneWorkerEndpoint(cli: Cli, image: string) {
  const { restUrl, queueUrl } = await cli.ready;
  const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
  const post = async (url: string, body: unknown) =>
    (await fetch(url, { method: "POST", headers, body: JSON.stringify(body) })).json() as Promise<
      Record<string, unknown>
    >;
  const template = await post(`${restUrl}/templates`, {
    name: image.replace("/", "-"),
    imageName: image,
    isServerless: true,
  });
  const endpoint = await post(`${restUrl}/endpoints`, { templateId: template.id, workersMax: 1 });
  return { post, jobs: `${queueUrl}/v2/${String(endpoint.id)}` };
}

async function childOfJob(harness: Harness, input: Record<string, unknown>): Promise<number> {
  const ep = harness.endpoint("acme/spawns");
  const reply = await harness.call("POST", `/v2/${ep.id}/runsync`, { body: { input } });
  const job = reply.body as { status: string; output: { child: number } };
  expect(job.status).toBe("COMPLETED");
  started.push(job.output.child);
  expect(alive(job.output.child)).toBe(true);
  return job.output.child;
}

describe("what a module handler starts goes with its worker", () => {
  it("when the worker ends by itself (refresh_worker)", async () => {
    const clock = new ManualClock();
    h = await startHarness({ clock, config: { handlers: { "acme/spawns": FIXTURE } } });
    const child = await childOfJob(h, { refresh: true });
    const ep = h.endpoint("acme/spawns");
    // The scaler's turns stop the drained worker; it lived on after the worker exited, for good.
    const gone = async () => {
      await clock.advance(1_000);
      return h?.plane.pool.workersOf(ep.id).every((w) => w.stopping === null) === true && !alive(child);
    };
    expect(await within(10_000, gone)).toBe(true);
  }, 60_000);

  it("when the service stops", async () => {
    h = await startHarness({ config: { handlers: { "acme/spawns": FIXTURE } } });
    const child = await childOfJob(h, {});
    await h.close();
    h = null;
    expect(await within(10_000, () => !alive(child))).toBe(true);
  }, 60_000);

  it("when the service is killed with SIGKILL", { timeout: 60_000 }, async () => {
    const cli = startCli(["--data", ":memory:", "--handler", `acme/spawns=${FIXTURE}`], {
      RUNPODKIT_API_KEYS: KEY,
    });
    try {
      const { post, jobs } = await oneWorkerEndpoint(cli, "acme/spawns");
      const job = (await post(`${jobs}/runsync`, { input: {} })) as {
        status: string;
        output: { child: number };
      };
      expect(job.status).toBe("COMPLETED");
      started.push(job.output.child);
      expect(alive(job.output.child)).toBe(true);

      cli.child.kill("SIGKILL");
      await cli.exited;
      expect(await within(10_000, () => !alive(job.output.child))).toBe(true);
    } finally {
      cli.kill();
    }
  });
  // The flake of the case above: the worker's "Finished." line, written 20 ms after the job, met the
  // dead service's pipe before the worker read that its IPC channel closed; EPIPE crashed it, so
  // neither the "disconnect" handler nor the watchdog ended its group. Here the write comes first always.
  it("when the service is killed and the worker writes before it sees so", { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "rpk-orphaned-"));
    const pidFile = join(dir, "child.pid");
    const cli = startCli(["--data", ":memory:", "--handler", `acme/writes=${WRITES_ONCE_ORPHANED}`], {
      RUNPODKIT_API_KEYS: KEY,
    });
    try {
      const { post, jobs } = await oneWorkerEndpoint(cli, "acme/writes");
      const job = await post(`${jobs}/run`, { input: { pidFile } });
      expect(job.status).toBe("IN_QUEUE");
      // The handler names its child once it runs (the worker starts first).
      expect(await within(30_000, () => existsSync(pidFile) && readFileSync(pidFile, "utf8") !== "")).toBe(
        true,
      );
      const child = Number(readFileSync(pidFile, "utf8"));
      started.push(child);
      expect(alive(child)).toBe(true);

      cli.child.kill("SIGKILL");
      await cli.exited;
      expect(await within(10_000, () => !alive(child))).toBe(true);
    } finally {
      cli.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
