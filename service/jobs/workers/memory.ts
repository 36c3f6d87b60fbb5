import { readdir, readFile } from "node:fs/promises";

/**
 * The resident memory of each of the given process groups, bytes: the sum of VmRSS over the processes
 * in /proc whose process group is one of them (a worker leads its own group: launch.ts). Read with
 * async IO, one file at a time, so that a machine with many processes does not hold the service's
 * event loop. Empty where there is no /proc (not Linux): the memory watch then does nothing.
 */
export async function groupMemory(groups: ReadonlySet<number>): Promise<Map<number, number>> {
  const totals = new Map<number, number>();
  let entries: string[];
  try {
    entries = await readdir("/proc");
  } catch {
    return totals;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, "utf8");
      // After "(comm) ": state, ppid, pgrp (comm may hold spaces and parentheses).
      const group = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
      if (!groups.has(group)) continue;
      const status = await readFile(`/proc/${entry}/status`, "utf8");
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
