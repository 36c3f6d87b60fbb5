import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { onTestFinished } from "vitest";

/** The CLI (service/main.ts) as `npm run serve` runs it, in a process of its own. */
export interface Cli {
  child: ChildProcess;
  /** The ready line's three base URLs (rejects if the CLI exits first). */
  ready: Promise<{ restUrl: string; graphqlUrl: string; queueUrl: string }>;
  stdout(): string;
  stderr(): string;
  /** Resolves once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILLs the CLI if it still runs (done after the test that started it in any case). */
  kill(): void;
}

/**
 * The CLI, SIGKILLed after the test that started it whatever happened: a test awaiting `exited` for
 * a refusal that regressed (the service started) would otherwise leave it listening past the run.
 */
export function startCli(args: string[], env: Record<string, string> = {}): Cli {
  const child = spawn(process.execPath, ["--import", "tsx", "service/main.ts", "--port", "0", ...args], {
    cwd: process.cwd(),
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const ready = new Promise<{ restUrl: string; graphqlUrl: string; queueUrl: string }>((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = out.match(/rest=(\S+) graphql=(\S+) queue=(\S+)\n/);
      if (match) resolve({ restUrl: match[1] ?? "", graphqlUrl: match[2] ?? "", queueUrl: match[3] ?? "" });
    });
    exited.then(({ code }) => reject(new Error(`CLI exited (${code}) before its ready line: ${err}`)));
  });
  ready.catch(() => {});
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  try {
    onTestFinished(async () => {
      kill();
      await exited;
    });
  } catch {
    // Started outside a test (a beforeAll): its caller kills it.
  }
  return { child, ready, stdout: () => out, stderr: () => err, exited, kill };
}

/**
 * True while a process with this pid exists and has not exited (signal 0 probes without signalling; a
 * zombie, exited but not yet reaped by whoever adopted it, counts as gone).
 */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true;
  }
}

/** Polls `check` every 50 ms until it is true or `budgetMs` passes; returns its last answer. */
export async function within(budgetMs: number, check: () => boolean | Promise<boolean>): Promise<boolean> {
  const until = Date.now() + budgetMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > until) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The pids of a process's live children running `command` (from /proc). */
export function childrenOf(pid: number, command: string): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      if (Number(fields[1]) === pid && fields[0] !== "Z" && name === command) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}
