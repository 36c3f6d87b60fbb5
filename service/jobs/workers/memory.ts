import { readdirSync, readFileSync } from "node:fs";

/** Processes read between two turns of the event loop: ~2 ms, so a reading never holds the service long. */
const BATCH = 64;

/**
 * The resident memory of each of the given process groups, bytes: the sum of VmRSS over the processes
 * in /proc whose process group is one of them (a worker leads its own group: launch.ts). Read with
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
      const status = readFileSync(`/proc/${entry}/status`, "utf8");
      const kib = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
      totals.set(group, (totals.get(group) ?? 0) + kib * 1024);
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return totals;
}

/** Bytes as MiB for a message: `96 MiB`. */
export function mib(bytes: number): string {
  return `${Math.round(bytes / (1024 * 1024))} MiB`;
}
