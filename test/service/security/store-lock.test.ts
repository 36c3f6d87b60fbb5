import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../../service/db";
import { type Cli, startCli } from "./cli";

const ENV = { RUNPODKIT_API_KEYS: "rpk_lock_alpha_0123456789" };
/**
 * What the pid file records beside the pid on Linux: the boot id and the process's start time, then
 * that the kernel's lock guarded it.
 */
const IDENTITY = "[0-9a-f-]{36} \\d+\nkernel-locked";

describe("one service per store file", () => {
  const started: Cli[] = [];
  const dirs: string[] = [];
  afterEach(() => {
    for (const cli of started.splice(0)) cli.kill();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const start = (data: string) => {
    const cli = startCli(["--data", data], ENV);
    started.push(cli);
    return cli;
  };

  it("a second service on the same --data is refused, naming the first; a killed one's lock is taken over; a stop removes it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "runpodkit-lock-"));
    dirs.push(dir);
    const data = join(dir, "store.sqlite");
    const first = start(data);
    await first.ready;
    expect(readFileSync(`${data}.lock`, "utf8")).toMatch(new RegExp(`^${first.child.pid}\n${IDENTITY}\n$`));

    // Before: it started, requeued the first's running jobs as its own and ran them again.
    const second = start(data);
    const refused = await second.exited;
    expect(refused.code).toBe(1);
    expect(second.stderr()).toBe(
      `runpodkit: --data ${data}: the store cannot be opened there: it is in use by another runpodkit service (pid ${first.child.pid}): stop that one, or give this one another --data (two services on one store would run each other's jobs again)\n`,
    );

    first.kill();
    await first.exited;
    const third = start(data);
    await third.ready;
    expect(readFileSync(`${data}.lock`, "utf8")).toMatch(new RegExp(`^${third.child.pid}\n${IDENTITY}\n$`));
    third.child.kill("SIGTERM");
    expect(await third.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(`${data}.lock`)).toBe(false);
  });

  it("a killed process's lock naming this process's own pid (a container restarted) is taken over with this process's identity, and removed on close", () => {
    const dir = mkdtempSync(join(tmpdir(), "runpodkit-lock-"));
    dirs.push(dir);
    const data = join(dir, "store.sqlite");
    const stale = `${process.pid}\n00000000-0000-0000-0000-000000000000 1\n`;
    for (let attempt = 0; attempt < 2; attempt++) {
      writeFileSync(`${data}.lock`, stale);
      const db = openDatabase(data, []);
      // Kept as it was, a second service would read this live pid with a dead identity as stale.
      const lock = readFileSync(`${data}.lock`, "utf8");
      expect(lock).not.toBe(stale);
      expect(lock).toMatch(new RegExp(`^${process.pid}\n${IDENTITY}\n$`));
      db.close();
      expect(existsSync(`${data}.lock`)).toBe(false);
    }
  });

  it("a killed service's lock naming a pid the system has since given another process (a reboot, a container restarted) is taken over", async () => {
    const dir = mkdtempSync(join(tmpdir(), "runpodkit-lock-"));
    dirs.push(dir);
    const data = join(dir, "store.sqlite");
    const first = start(data);
    await first.ready;
    first.kill();
    await first.exited;
    // The killed service's lock, as another process (alive, not a service) now has its pid.
    const other = spawn("sleep", ["60"], { stdio: "ignore" });
    try {
      const [, identity] = readFileSync(`${data}.lock`, "utf8").split("\n");
      for (let attempt = 0; attempt < 2; attempt++) {
        writeFileSync(`${data}.lock`, `${other.pid}\n${identity}\n`);
        const next = start(data);
        const outcome = await Promise.race([next.exited, next.ready.then(() => "served" as const)]);
        expect(outcome, next.stderr()).toBe("served");
        expect(readFileSync(`${data}.lock`, "utf8")).toMatch(
          new RegExp(`^${next.child.pid}\n${IDENTITY}\n$`),
        );
        next.kill();
        await next.exited;
      }
    } finally {
      other.kill("SIGKILL");
    }
  });

  it("a second service is refused even once the pid file is deleted by hand; the kernel's lock goes with a SIGKILLed service", async () => {
    const dir = mkdtempSync(join(tmpdir(), "runpodkit-lock-"));
    dirs.push(dir);
    const data = join(dir, "store.sqlite");
    const first = start(data);
    await first.ready;
    expect(statSync(`${data}.lock.sqlite`).mode & 0o777).toBe(0o600);
    // Before, a journal file beside it, 0644, while the service ran (and after a kill).
    expect(
      readdirSync(dir)
        .filter((name) => name.startsWith("store.sqlite.lock"))
        .sort(),
    ).toEqual(["store.sqlite.lock", "store.sqlite.lock.sqlite"]);
    // Before: the pid file was the only lock; with it gone the second service ran on the same store.
    for (let attempt = 0; attempt < 2; attempt++) {
      rmSync(`${data}.lock`, { force: true });
      const second = start(data);
      expect((await second.exited).code).toBe(1);
      expect(second.stderr()).toBe(
        `runpodkit: --data ${data}: the store cannot be opened there: it is in use by another runpodkit service: stop that one, or give this one another --data (two services on one store would run each other's jobs again)\n`,
      );
    }
    first.kill();
    await first.exited;
    const third = start(data);
    await third.ready;
    expect(readFileSync(`${data}.lock`, "utf8")).toMatch(new RegExp(`^${third.child.pid}\n${IDENTITY}\n$`));
  });

  it("of several processes opening one store at the same moment over a killed service's lock, exactly one opens it", async () => {
    // Before: each read the same stale lock, removed it and wrote its own, removing another's on the
    // way (about one try in three let two open it).
    const CONTENDERS = 3;
    for (let round = 0; round < 6; round++) {
      const dir = mkdtempSync(join(tmpdir(), "runpodkit-lock-"));
      dirs.push(dir);
      const data = join(dir, "store.sqlite");
      const go = join(dir, "go");
      openDatabase(data, []).close();
      // A killed service's lock: a pid no process has.
      writeFileSync(`${data}.lock`, "4194304\n");
      const contenders = Array.from({ length: CONTENDERS }, () => contender(data, go));
      try {
        await Promise.all(contenders.map((each) => each.said(/^waiting$/m)));
        writeFileSync(go, "");
        const outcomes = await Promise.all(contenders.map((each) => each.said(/^(opened|refused: .*)$/m)));
        expect(
          outcomes.filter((line) => line === "opened"),
          `round ${round}: ${outcomes.join(" | ")}`,
        ).toHaveLength(1);
        for (const line of outcomes.filter((each) => each !== "opened")) {
          expect(line).toMatch(
            /^refused: the store .* cannot be opened: it is in use by another runpodkit service/,
          );
        }
      } finally {
        for (const each of contenders) each.child.kill("SIGKILL");
        await Promise.all(contenders.map((each) => each.exited));
      }
    }
  }, 120_000);
});

/** A process (fixtures/lock-race-child.ts) that opens the store at `data` once `go` exists. */
function contender(data: string, go: string) {
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", "test/service/security/fixtures/lock-race-child.ts", data, go],
    { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  const waiters: (() => void)[] = [];
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    for (const wake of waiters.splice(0)) wake();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const said = async (pattern: RegExp): Promise<string> => {
    for (;;) {
      const match = out.match(pattern);
      if (match) return match[1] ?? match[0];
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited: ${out}`);
      await Promise.race([new Promise<void>((resolve) => waiters.push(resolve)), exited]);
    }
  };
  return { child, said, exited };
}
