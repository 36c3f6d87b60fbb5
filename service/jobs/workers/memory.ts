import { readdirSync, readFileSync } from "node:fs";

/** Processes read between two turns of the event loop: ~2 ms, so a reading never holds the service long. */
const BATCH = 64;

/**
 * The resident memory of each of the given process groups, bytes: the sum of the proportional set
 * size (Pss) over the processes in /proc whose process group is one of them (a worker leads its own
 * group: launch.ts). Pss splits a shared page among the processes that map it, so a handler that
 * forks eight copies of itself is charged for the pages they share once, not eight times as a sum
 * of VmRSS would (each node process maps ~33 MiB of the same binary); VmRSS is read where
 * smaps_rollup is not (Linux before 4.14). Read with
 * synchronous reads in batches, yielding to the event loop between them: async reads cost ~6 times
 * the CPU (17 ms against 3 ms a reading of 106 processes), and one synchronous pass over a machine
 * with thousands of processes would hold every request. Empty where there is no /proc (not Linux):
 * the memory watch then does nothing.
 */
export async function groupMemory(groups: ReadonlySet<number>): Promise<Map<number, number>> {
  const totals = new Map<number, number>();
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
      totals.set(group, (totals.get(group) ?? 0) + residentKib(entry) * 1024);
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return totals;
}

/** One process's Pss, KiB (its VmRSS without smaps_rollup); throws if the process is gone. */
function residentKib(pid: string): number {
  let rollup: string | null = null;
  try {
    rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  } catch {
    // Before Linux 4.14, or not readable: fall back to VmRSS below.
  }
  const pss = rollup === null ? undefined : /^Pss:\s+(\d+) kB/m.exec(rollup)?.[1];
  if (pss !== undefined) return Number(pss);
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
}

/** Bytes as MiB for a message: `96 MiB`. */
export function mib(bytes: number): string {
  return `${Math.round(bytes / (1024 * 1024))} MiB`;
}
