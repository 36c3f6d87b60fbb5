import { readdirSync, readFileSync } from "node:fs";
import { markOf } from "./runtime/tree";

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
 *
 * With `marked`, a process outside every group that carries a worker's mark (runtime/tree.ts: it left its
 * worker's group with `setsid` or a detached spawn) counts in that worker's group, `marks` giving the
 * group of each mark. Its mark is read from /proc/<pid>/environ once per process (`cache`, by pid and
 * start time, kept between readings and pruned to the processes of the last one), not every reading:
 * after the first reading, one that finds no new process reads no environ at all.
 */
export async function groupMemory(
  groups: ReadonlySet<number>,
  bound?: number,
  marked?: { marks: ReadonlyMap<string, number>; cache: MarkCache },
): Promise<Map<number, number>> {
  const totals = new Map<number, number>();
  const members = new Map<number, string[]>();
  /** The processes outside the groups this reading saw (what the mark cache keeps). */
  const seen = new Set<string>();
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
      // After "(comm) ": state, ppid, pgrp, ... starttime (the 20th); comm may hold spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      let group = Number(fields[2]);
      if (!groups.has(group)) {
        if (marked === undefined) continue;
        const owner = markedGroup(entry, fields[19] ?? "", marked, seen);
        if (owner === undefined) continue;
        group = owner;
      }
      totals.set(group, (totals.get(group) ?? 0) + vmRssKib(entry) * 1024);
      const pids = members.get(group);
      if (pids) pids.push(entry);
      else members.set(group, [entry]);
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  if (marked !== undefined)
    for (const pid of marked.cache.keys()) if (!seen.has(pid)) marked.cache.delete(pid);
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

/** The worker mark of each process outside the workers' groups, by pid, as last read (groupMemory). */
export type MarkCache = Map<string, { start: string; mark: string | null }>;

/** The group of the worker whose mark the process carries, if any (its environ read once: `cache`). */
function markedGroup(
  pid: string,
  start: string,
  marked: { marks: ReadonlyMap<string, number>; cache: MarkCache },
  seen: Set<string>,
): number | undefined {
  seen.add(pid);
  let known = marked.cache.get(pid);
  // A pid reused by a new process has another start time.
  if (known === undefined || known.start !== start) {
    known = { start, mark: markOf(pid) };
    marked.cache.set(pid, known);
  }
  return known.mark === null ? undefined : marked.marks.get(known.mark);
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
