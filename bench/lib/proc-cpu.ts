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
}

function stat(pid: number): Stat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may hold spaces and parentheses: fields are counted after the last ')'.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const ppid = Number(fields[1]);
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return { ppid, cpuMs: ((utime + stime) / TICKS_PER_SEC) * 1000 };
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
