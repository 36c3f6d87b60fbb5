import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../../service/db";
import { type Cli, startCli } from "./cli";

const ENV = { RUNPODKIT_API_KEYS: "rpk_lock_alpha_0123456789" };
/** What the lock records beside the pid on Linux: the boot id and the process's start time. */
const IDENTITY = "[0-9a-f-]{36} \\d+";

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
      `runpodkit: --data ${data}: the store cannot be opened there: it is in use by another runpodkit service (pid ${first.child.pid}): stop that one, or give this one another --data (two services on one store would run each other's jobs again); if no such service runs, delete ${data}.lock\n`,
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
});
