import { readdirSync, readFileSync } from "node:fs";

/** Processes read between two turns of the event loop: ~2 ms, so a reading never holds the service long. */
const BATCH = 64;

/**
 * The resident memory of each of the given process groups, bytes, as the memory watch needs it: the
 * processes in /proc whose process group is one of them (a worker leads its own group: launch.ts),
 * summed by group.
 *
 * Two passes. First each member's VmRSS (/proc/<pid>/status: cheap). A group whose VmRSS sum is at
 * most `bound` is answered with that sum: a process's Pss never exceeds its VmRSS, so it is under the
 * bound either way. Only a group over it is read again as the sum of its members' proportional set
 * size (Pss, /proc/<pid>/smaps_rollup), which splits a shared page among the processes that map it, so
 * a handler that forks eight copies of itself is charged for the pages they share once, not eight
 * times (each node process maps ~33 MiB of the same binary). smaps_rollup walks a process's page
 * tables: ~1.5 ms of CPU a node process, 150 ms a reading of 100 idle workers read every second,
 * where VmRSS costs a few microseconds. Without `bound`, every group gets its Pss sum. VmRSS stands in
 * for Pss where smaps_rollup is missing (Linux before 4.14).
 *
 * Synchronous reads in batches, yielding to the event loop between them: async reads cost ~6 times the
 * CPU, and one synchronous pass over a machine with thousands of processes would hold every request.
 * Empty where there is no /proc (not Linux): the memory watch then does nothing.
 */
export async function groupMemory(groups: ReadonlySet<number>, bound?: number): Promise<Map<number, number>> {
  const totals = new Map<number, number>();
  const members = new Map<number, string[]>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return totals;
  }
  let read = 0;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    if (++read % BATCH === 0) await new Promise((resolve) => setImmediate(resolve));
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // After "(comm) ": state, ppid, pgrp (comm may hold spaces and parentheses).
      const group = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
      if (!groups.has(group)) continue;
      totals.set(group, (totals.get(group) ?? 0) + vmRssKib(entry) * 1024);
      const pids = members.get(group);
      if (pids) pids.push(entry);
      else members.set(group, [entry]);
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  for (const [group, rss] of totals) {
    if (bound !== undefined && rss <= bound) continue;
    let pss = 0;
    for (const pid of members.get(group) ?? []) {
      if (++read % BATCH === 0) await new Promise((resolve) => setImmediate(resolve));
      try {
        pss += pssKib(pid) * 1024;
      } catch {
        // Gone since the first pass.
      }
    }
    totals.set(group, pss);
  }
  return totals;
}

/** One process's VmRSS, KiB; throws if the process is gone. */
function vmRssKib(pid: string): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
}

/** One process's Pss, KiB (its VmRSS without smaps_rollup); throws if the process is gone. */
function pssKib(pid: string): number {
  let rollup: string | null = null;
  try {
    rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  } catch {
    // Before Linux 4.14, or not readable: fall back to VmRSS below.
  }
  const pss = rollup === null ? undefined : /^Pss:\s+(\d+) kB/m.exec(rollup)?.[1];
  return pss !== undefined ? Number(pss) : vmRssKib(pid);
}

/** Bytes as MiB for a message: `96 MiB`. */
export function mib(bytes: number): string {
  return `${Math.round(bytes / (1024 * 1024))} MiB`;
}
