import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { LOG_WRITE_BYTES } from "../../../service/jobs/workers/runtime/log";

const LOADER = `file://${resolve("node_modules/tsx/dist/loader.mjs")}`;
const FIXTURE = resolve("test/service/workers/fixtures/log-writes.ts");

async function scenario(name: string): Promise<{ writes: string[]; stdout: string }> {
  const { stdout, stderr } = await promisify(execFile)(
    process.execPath,
    ["--import", LOADER, FIXTURE, name],
    { env: { PATH: process.env.PATH ?? "" } },
  );
  const reported = stderr.trim().split("\n").at(-1);
  return { writes: reported ? (JSON.parse(reported) as string[]) : [], stdout };
}

/** The worker runtime's own log lines: written together, in order, never lost at exit. */
describe("worker runtime log lines", () => {
  it("lines of several turns (two jobs) go out in one write, in order", async () => {
    const { writes } = await scenario("turns");
    expect(writes).toEqual([
      "INFO   | job-1 | Started.\nINFO   | job-1 | Finished.\nINFO   | job-2 | Started.\nINFO   | job-2 | Finished.\n",
    ]);
  });

  it("a handler's own stdout line goes after the lines pending before it", async () => {
    const { writes } = await scenario("other-writer");
    expect(writes).toEqual([
      "INFO   | job-1 | Started.\n",
      "handler says hi\n",
      "INFO   | job-1 | Finished.\n",
    ]);
  });

  it("lines past the size bound are written at once, not held for the delay", async () => {
    const { writes } = await scenario("burst");
    expect(writes).toHaveLength(1);
    expect(writes[0]?.length).toBeGreaterThanOrEqual(LOG_WRITE_BYTES);
  });

  it("a line logged just before the process exits is written", async () => {
    const { stdout } = await scenario("exit");
    expect(stdout).toBe("INFO   | job-last | Finished.\n");
  });
});
