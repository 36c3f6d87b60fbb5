import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { groupMemory } from "../../../service/jobs/workers/memory";

const linux = process.platform === "linux";
let leader: number | null = null;

afterEach(() => {
  if (leader !== null) {
    try {
      process.kill(-leader, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  leader = null;
});

/** The pids in /proc whose process group is `group`. */
function members(group: number): string[] {
  return readdirSync("/proc").filter((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) === group;
    } catch {
      return false;
    }
  });
}

function vmRssBytes(pid: string): number {
  try {
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

describe.runIf(linux)("a worker group's memory (groupMemory)", () => {
  it("charges the pages its processes share once, not once per process as a sum of VmRSS would", async () => {
    // A group of five node processes, as a handler that forks four copies of itself makes: each maps
    // the same node binary (~33 MiB of its ~40 MiB resident).
    const script = `
      const { spawn } = require("node:child_process");
      for (let i = 0; i < 4; i++) spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ["-e", script], { detached: true, stdio: "ignore" });
    leader = child.pid ?? null;
    expect(leader).not.toBeNull();
    const group = leader as number;
    // Until the five are up and have settled into their resident size.
    for (
      let i = 0;
      i < 200 && (members(group).length < 5 || members(group).some((pid) => vmRssBytes(pid) < 20e6));
      i++
    )
      await new Promise((resolve) => setTimeout(resolve, 50));
    const pids = members(group);
    expect(pids).toHaveLength(5);
    const rssSum = pids.reduce((sum, pid) => sum + vmRssBytes(pid), 0);
    const charged = (await groupMemory(new Set([group]))).get(group) ?? 0;
    // Each process's own (anonymous) pages are still counted: more than 5 MiB apiece.
    expect(charged).toBeGreaterThan(5 * 5 * 1024 * 1024);
    // The shared binary is split among its sharers: well under the VmRSS sum.
    expect(charged).toBeLessThan(rssSum * 0.7);

    // With the watch's bound: a group whose VmRSS sum is under it is answered with that sum (the cheap
    // reading, an upper bound of its Pss); one over it gets its Pss sum, read only then.
    const under = (await groupMemory(new Set([group]), rssSum * 4)).get(group) ?? 0;
    expect(under).toBeGreaterThan(rssSum * 0.8);
    expect(under).toBeLessThan(rssSum * 1.2);
    const over = (await groupMemory(new Set([group]), charged / 2)).get(group) ?? 0;
    expect(over).toBeGreaterThan(5 * 5 * 1024 * 1024);
    expect(over).toBeLessThan(rssSum * 0.7);
  });

  it("is empty for a group with no process", async () => {
    expect((await groupMemory(new Set([2 ** 22 + 12345]))).size).toBe(0);
  });
});
