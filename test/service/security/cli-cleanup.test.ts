import { describe, expect, it } from "vitest";
import { alive, startCli } from "./cli";

describe("startCli", () => {
  // The two run in order: the second checks what the first left once it ended.
  let pid: number | undefined;
  it("a CLI its test leaves running (a refusal that regressed, a test failing before its kill)...", async () => {
    const cli = startCli(["--data", ":memory:"], { RUNPODKIT_API_KEYS: "k-cli-cleanup" });
    await cli.ready;
    pid = cli.child.pid;
    expect(alive(pid ?? 0)).toBe(true);
  });

  it("...is killed once that test has ended", () => {
    expect(pid).toBeGreaterThan(0);
    // Before, it served on until the run ended, reparented to init, and kept the run from ending.
    expect(alive(pid ?? 0)).toBe(false);
  });
});
