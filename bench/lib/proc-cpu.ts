/**
 * CPU time of a process and of its direct children, from /proc (Linux). On a shared machine the
 * throughput of a run depends on what else runs; the CPU each part spends per job does much less,
 * so the bench reports both.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, 100 on Linux). */
const TICKS_PER_SEC = 100;

interface Stat {
  ppid: number;
  /** user + system, ms */
  cpuMs: number;
  /** user + system of its children that ended and were waited for (cutime + cstime), ms */
  reapedMs: number;
}

function stat(pid: number): Stat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may hold spaces and parentheses: fields are counted after the last ')'.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const ppid = Number(fields[1]);
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    const reaped = Number(fields[13]) + Number(fields[14]);
    return {
      ppid,
      cpuMs: ((utime + stime) / TICKS_PER_SEC) * 1000,
      reapedMs: (reaped / TICKS_PER_SEC) * 1000,
    };
  } catch {
    return null;
  }
}

export interface TreeCpu {
  selfMs: number;
  childrenMs: number;
  children: number;
}

/** CPU of `pid` and of its live direct children; null where /proc is not available. */
export function treeCpu(pid: number): TreeCpu | null {
  const self = stat(pid);
  if (!self) return null;
  let childrenMs = 0;
  let children = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const child = stat(Number(entry));
    if (child?.ppid === pid) {
      childrenMs += child.cpuMs;
      children++;
    }
  }
  return { selfMs: self.cpuMs, childrenMs, children };
}

/**
 * CPU of everything `root` runs, except the subtrees of `exclude`, ms: its own (`rootMs`), and
 * (`descendantsMs`) that of its descendants still alive and of those that ended (counted in their
 * parent's cutime/cstime once waited for). The difference between two readings is what the tree spent in between, including
 * processes that started and ended in between (a program run, a provider host). Null without /proc.
 */
export function descendantsCpuMs(
  root: number,
  exclude: readonly number[] = [],
): { rootMs: number; descendantsMs: number } | null {
  const all = new Map<number, Stat>();
  try {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const s = stat(Number(entry));
      if (s) all.set(Number(entry), s);
    }
  } catch {
    return null;
  }
  const self = all.get(root);
  if (!self) return null;
  const children = new Map<number, number[]>();
  for (const [pid, s] of all) {
    const list = children.get(s.ppid) ?? [];
    list.push(pid);
    children.set(s.ppid, list);
  }
  const skip = new Set(exclude);
  let total = -self.cpuMs;
  const stack = [root];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    if (skip.has(pid)) continue;
    const s = all.get(pid);
    if (!s) continue;
    total += s.cpuMs + s.reapedMs;
    stack.push(...(children.get(pid) ?? []));
  }
  return { rootMs: self.cpuMs, descendantsMs: total };
}
