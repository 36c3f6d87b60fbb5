import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";

/**
 * The variable every worker process is started with (pool.ts), naming its process tree: every
 * descendant inherits it unless it is started with an environment of its own. A worker leads its own
 * process group (launch.ts) and the pool signals that group, but a child that leaves it (`setsid`, a
 * daemonizing model server, Node's `spawn(..., { detached: true })`) is out of the group's reach: it
 * is found again by this mark in /proc, and ended with its worker.
 */
export const TREE_MARK = "RUNPODKIT_WORKER_TREE";

/**
 * A new worker's mark: its id and 96 random bits, so that no two workers, of this service or of
 * another one on the machine, ever share a mark (a sweep never reaches another worker's processes).
 */
export function newMark(workerId: string): string {
  return `${workerId}.${randomBytes(12).toString("hex")}`;
}

/** Processes read per pass of a sweep (pid_max is 4,194,304 on 64-bit Linux): bounds one pass. */
const MAX_PROCESSES = 100_000;
/** Passes of a sweep: a process forked while a pass ran may have taken a pid that pass had passed. */
const MAX_PASSES = 3;
/** Processes read between two yields to the event loop: a sweep never holds the service long. */
const BATCH = 64;

const KEY = Buffer.from(`${TREE_MARK}=`);

/** The mark in a process's environment block (NUL-separated `NAME=value`), or null. */
function markIn(environ: Buffer): string | null {
  for (let at = environ.indexOf(KEY); at !== -1; at = environ.indexOf(KEY, at + 1)) {
    if (at !== 0 && environ[at - 1] !== 0) continue;
    const end = environ.indexOf(0, at);
    return environ.toString("utf8", at + KEY.length, end === -1 ? environ.length : end);
  }
  return null;
}

/**
 * The worker mark the process was started with, or null: none, gone, or not readable (another user's
 * process; a zombie's environment reads empty). Linux only (/proc/<pid>/environ).
 */
export function markOf(pid: number | string): string | null {
  try {
    return markIn(readFileSync(`/proc/${pid}/environ`));
  } catch {
    return null;
  }
}

/**
 * SIGKILLs every process started with one of `marks` (the trees of workers that ended), this service's
 * own process never: what a worker's handler started outside its process group. Reads each process's
 * /proc/<pid>/environ (one read of at most the process's environment block, which the kernel bounds),
 * at most MAX_PROCESSES a pass, in batches that yield to the event loop; passes repeat while one still
 * found something, at most MAX_PASSES. Returns the pids killed. Does nothing where there is no /proc
 * (not Linux). A process whose environment was replaced (`env -i`, a spawn given its own `env`) carries
 * no mark, and is not found.
 */
export async function killMarked(marks: ReadonlySet<string>): Promise<number[]> {
  const killed: number[] = [];
  if (marks.size === 0) return killed;
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    let entries: string[];
    try {
      entries = readdirSync("/proc");
    } catch {
      return killed;
    }
    let found = 0;
    let read = 0;
    for (const entry of entries) {
      if (!/^\d+$/.test(entry)) continue;
      if (++read > MAX_PROCESSES) break;
      if (read % BATCH === 0) await new Promise((resolve) => setImmediate(resolve));
      const pid = Number(entry);
      if (pid === process.pid) continue;
      const mark = markOf(entry);
      if (mark === null || !marks.has(mark)) continue;
      try {
        process.kill(pid, "SIGKILL");
        killed.push(pid);
        found++;
      } catch {
        // Gone meanwhile.
      }
    }
    if (found === 0) break;
  }
  return killed;
}

/**
 * Runs the sweeps of ended workers one at a time, the marks of all that ended meanwhile in one pass
 * over /proc (a service stopping 100 workers reads /proc a few times, not 100 times).
 */
export class TreeSweeper {
  readonly #pending = new Set<string>();
  readonly #log: (message: string) => void;
  #tail: Promise<void> = Promise.resolve();

  constructor(log: (message: string) => void) {
    this.#log = log;
  }

  /** Ends what carries `mark`; resolves once a sweep that started after this call has ended. */
  sweep(mark: string): Promise<void> {
    this.#pending.add(mark);
    this.#tail = this.#tail.then(() => this.#pass());
    return this.#tail;
  }

  /** Resolves once every sweep asked for so far has ended. */
  settled(): Promise<void> {
    return this.#tail;
  }

  async #pass(): Promise<void> {
    if (this.#pending.size === 0) return;
    const marks = new Set(this.#pending);
    this.#pending.clear();
    try {
      await killMarked(marks);
    } catch (error) {
      // Never the worker's exit handling's loss: logged, and what is left stays running.
      this.#log(`processes workers left could not be ended: ${String(error)}`);
    }
  }
}

/**
 * The sweep of the process's own tree, synchronous and in one pass, as JavaScript source for code run
 * from a string (the command guard, the runtime's watchdog thread): defines `killOwnTree()`, which
 * SIGKILLs every other process carrying this process's TREE_MARK. A worker calls it as it ends
 * because the service is gone (even killed with SIGKILL), before it SIGKILLs its own group: nothing is
 * left then to sweep after it.
 */
export const KILL_OWN_TREE_SOURCE = `
function killOwnTree() {
  const mark = process.env.${TREE_MARK};
  if (!mark) return;
  const { readdirSync, readFileSync } = require("node:fs");
  const wanted = "\\0${TREE_MARK}=" + mark + "\\0";
  let read = 0;
  try {
    for (const entry of readdirSync("/proc")) {
      if (!/^\\d+$/.test(entry) || Number(entry) === process.pid) continue;
      if (++read > ${MAX_PROCESSES}) break;
      try {
        if (("\\0" + readFileSync("/proc/" + entry + "/environ", "latin1")).includes(wanted)) process.kill(Number(entry), "SIGKILL");
      } catch {}
    }
  } catch {}
}
`;

/** killOwnTree() of KILL_OWN_TREE_SOURCE, for the worker runtime's own code. */
export function killOwnTree(): void {
  const mark = process.env[TREE_MARK];
  if (!mark) return;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return;
  }
  let read = 0;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    if (++read > MAX_PROCESSES) break;
    if (markOf(entry) !== mark) continue;
    try {
      process.kill(Number(entry), "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
}
