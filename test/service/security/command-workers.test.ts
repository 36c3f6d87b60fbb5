import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ACCOUNT, startHarness } from "../jobs/harness";
import { alive, childrenOf, startCli, within } from "./cli";

const dir = mkdtempSync(join(tmpdir(), "runpodkit-cmdworker-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KEY = "rpk_cmd_worker_0123456789abcdef";

/** Reads a pid file the command wrote, once it is complete. */
function pidIn(file: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const text = readFileSync(file, "utf8");
  return text.endsWith("\n") ? Number(text.trim()) : undefined;
}

describe("command workers", () => {
  it("die with the service when it is killed with SIGKILL, with whatever they started (module workers too)", async () => {
    const shellPid = join(dir, "shell.pid");
    const childPid = join(dir, "child.pid");
    // A command line that starts a child and waits, like a handler script would: both must go.
    const command = `echo $$ > ${shellPid}; sleep 300 & echo $! > ${childPid}; wait`;
    const cli = startCli(["--data", ":memory:", "--handler", `acme/cmd=cmd:${command}`], {
      RUNPODKIT_API_KEYS: KEY,
    });
    const pids: number[] = [];
    try {
      const { restUrl } = await cli.ready;
      const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
      const post = async (path: string, body: unknown) =>
        (
          await fetch(`${restUrl}${path}`, { method: "POST", headers, body: JSON.stringify(body) })
        ).json() as Promise<{
          id: string;
        }>;
      const template = await post("/templates", { name: "cmd", imageName: "acme/cmd", isServerless: true });
      await post("/endpoints", { templateId: template.id, workersMin: 1, workersMax: 1 });
      const builtin = await post("/templates", {
        name: "echo",
        imageName: "runpodkit/echo",
        isServerless: true,
      });
      await post("/endpoints", { templateId: builtin.id, workersMin: 1, workersMax: 1 });

      expect(await within(20_000, () => pidIn(shellPid) !== undefined && pidIn(childPid) !== undefined)).toBe(
        true,
      );
      pids.push(pidIn(shellPid) as number, pidIn(childPid) as number);
      // The service's own Node children: the command worker's guard and the module worker.
      const pid = cli.child.pid as number;
      const node = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
      expect(await within(20_000, () => childrenOf(pid, node).length === 2)).toBe(true);
      pids.push(...childrenOf(pid, node));
      expect(pids.every(alive)).toBe(true);

      cli.child.kill("SIGKILL");
      expect(await cli.exited).toEqual({ code: null, signal: "SIGKILL" });
      expect(await within(10_000, () => !pids.some(alive))).toBe(true);
    } finally {
      cli.kill();
      for (const pid of pids) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
  }, 60_000);

  it("that end by themselves (a crash) take what they left running with them", async () => {
    const leftPid = join(dir, "left.pid");
    // Like a Python worker killed by os._exit: its heartbeat process stays behind in the group.
    const command = `sleep 300 & echo $! > ${leftPid}; sleep 0.2; exit 3`;
    const h = await startHarness({ config: { handlers: { "acme/crash": `cmd:${command}` } } });
    let left: number | undefined;
    try {
      h.endpoint("acme/crash", { workersMin: 1, workersMax: 1 });
      expect(await within(20_000, () => pidIn(leftPid) !== undefined)).toBe(true);
      left = pidIn(leftPid) as number;
      expect(await within(10_000, () => !alive(left as number))).toBe(true);
      // The guard may end the leftover before the pool logs the exit: the line is waited for too.
      const logged = () =>
        h.logs.some((line) => line.includes("exited unexpectedly") && line.includes("code 3"));
      expect(await within(10_000, logged)).toBe(true);
    } finally {
      await h.close();
      if (left !== undefined && alive(left)) process.kill(left, "SIGKILL");
    }
  }, 60_000);

  it("stop gracefully with all they started when the service stops them (SIGTERM to the group)", async () => {
    const shellPid = join(dir, "graceful-shell.pid");
    const childPid = join(dir, "graceful-child.pid");
    const command = `echo $$ > ${shellPid}; sleep 300 & echo $! > ${childPid}; wait`;
    const h = await startHarness({ config: { handlers: { "acme/cmd": `cmd:${command}` } } });
    const pids: number[] = [];
    try {
      const ep = h.endpoint("acme/cmd", { workersMin: 1, workersMax: 1 });
      expect(await within(20_000, () => pidIn(shellPid) !== undefined && pidIn(childPid) !== undefined)).toBe(
        true,
      );
      pids.push(pidIn(shellPid) as number, pidIn(childPid) as number);
      expect(pids.map(alive)).toEqual([true, true]);

      // Scaled to zero: the worker is stopped with SIGTERM (the kill timer never fires: the clock is manual).
      h.management.endpoints.update(ACCOUNT, ep.id, { workersMin: 0, workersMax: 0 });
      expect(await within(10_000, () => !pids.some(alive))).toBe(true);
      expect(await within(10_000, () => h.plane.pool.workersOf(ep.id).length === 0)).toBe(true);
      expect(h.logs.filter((line) => line.includes("exited unexpectedly"))).toEqual([]);
    } finally {
      await h.close();
      for (const pid of pids) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
  }, 60_000);
});
