/**
 * The account `npm start` prints of its long steps (scripts/progress.ts), on a ManualClock: start and
 * end lines with durations, the alive signal while a step runs (appended lines in CI, one line redrawn
 * on a terminal), failures, and the closing list of where to look next.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { PROJECT_ROOT } from "../../engine/package";
import { DOCS_POINTED_TO, nextSteps, SERVE_COMMAND, SERVE_KEY, SERVE_PORT } from "../../scripts/next-steps";
import { formatDuration, formatNextSteps, Progress } from "../../scripts/progress";
import { ManualClock } from "../../service/clock";

function account(live: boolean) {
  const clock = new ManualClock();
  let out = "";
  const progress = new Progress({ write: (text) => (out += text), clock, live });
  return { clock, progress, output: () => out };
}

/** A step whose end the test decides. */
function pending<T>() {
  let finish!: (value: T) => void;
  let fail!: (error: Error) => void;
  const promise = new Promise<T>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  return { promise, finish, fail };
}

describe("formatDuration", () => {
  test("tenths of seconds under a minute, then minutes and seconds", () => {
    expect(formatDuration(0)).toBe("0.0 s");
    expect(formatDuration(420)).toBe("0.4 s");
    expect(formatDuration(12_345)).toBe("12.3 s");
    expect(formatDuration(59_940)).toBe("59.9 s");
    expect(formatDuration(60_000)).toBe("1 min 00 s");
    expect(formatDuration(125_400)).toBe("2 min 05 s");
  });
});

describe("Progress, not on a terminal (CI, a pipe)", () => {
  test("a step prints its start with its note, a line every 15 s with its detail, and its end with its duration", async () => {
    const { clock, progress, output } = account(false);
    const build = pending<string>();
    let calls = 0;
    const step = progress.step("deploy", () => build.promise, {
      note: "pulumi up examples/quickstart",
      detail: () => `${calls} provider calls`,
    });
    await clock.advance(14_999);
    expect(output()).toBe("▸ deploy  pulumi up examples/quickstart\n");
    calls = 4;
    await clock.advance(1);
    calls = 6;
    await clock.advance(15_000);
    await clock.advance(2_500);
    build.finish("outputs");
    expect(await step).toBe("outputs");
    expect(output()).toBe(
      [
        "▸ deploy  pulumi up examples/quickstart",
        "  … deploy 15.0 s, 4 provider calls",
        "  … deploy 30.0 s, 6 provider calls",
        "✓ deploy  32.5 s",
        "",
      ].join("\n"),
    );
    // Nothing keeps ticking once the step is over.
    expect(clock.pending).toBe(0);
  });

  test("a failing step says after how long, and its error reaches the caller", async () => {
    const { clock, progress, output } = account(false);
    const install = pending<void>();
    const step = progress.step("install", () => install.promise);
    await clock.advance(3_100);
    install.fail(new Error("npm install failed"));
    await expect(step).rejects.toThrow("npm install failed");
    expect(output()).toBe("▸ install\n✗ install failed after 3.1 s\n");
    expect(clock.pending).toBe(0);
  });

  test("lines printed during a step come between its start and its end", async () => {
    const { clock, progress, output } = account(false);
    await progress.step("jobs", async () => {
      progress.line("  run  job-1 COMPLETED");
      await clock.advance(600);
    });
    expect(output()).toBe("▸ jobs\n  run  job-1 COMPLETED\n✓ jobs  0.6 s\n");
  });
});

describe("Progress, on a terminal", () => {
  test("one alive line is redrawn every second, and cleared before any other line and at the end", async () => {
    const { clock, progress, output } = account(true);
    const build = pending<void>();
    const step = progress.step("build + pack", () => build.promise, { detail: () => "tsc" });
    await clock.advance(2_000);
    progress.line("a line of the account");
    await clock.advance(1_000);
    build.finish();
    await step;
    expect(output()).toBe(
      [
        "▸ build + pack\n",
        "\r\x1b[2K  ⠙ build + pack 1.0 s, tsc",
        "\r\x1b[2K  ⠹ build + pack 2.0 s, tsc",
        // Another line: the alive line is cleared, the line printed, the alive line drawn again.
        "\r\x1b[2Ka line of the account\n",
        "\r\x1b[2K  ⠹ build + pack 2.0 s, tsc",
        "\r\x1b[2K  ⠸ build + pack 3.0 s, tsc",
        "\r\x1b[2K✓ build + pack  3.0 s\n",
      ].join(""),
    );
  });
});

describe("where to look next", () => {
  test("labels aligned under a title", () => {
    expect(
      formatNextSteps([
        { label: "docs", text: "docs/_index.md" },
        { label: "console", text: "http://127.0.0.1:8080/" },
      ]),
    ).toEqual(["where to look next", "  docs     docs/_index.md", "  console  http://127.0.0.1:8080/"]);
  });

  test("the main job's list names only what outlives the job: a service the reader starts, its console, logs and deploy", () => {
    // The list is read after `npm start` exits: its service is stopped (its free port answers nothing),
    // its key random and unprinted, its endpoint destroyed. Every address must be the served one's.
    const steps = nextSteps();
    expect(steps.map((s) => s.label)).toEqual(["serve", "deploy", "console", "logs", "docs"]);
    const text = steps.map((s) => s.text).join("\n");
    const serve = steps[0]?.text ?? "";
    expect(serve.startsWith(`${SERVE_COMMAND} `)).toBe(true);
    expect(SERVE_COMMAND).toBe("RUNPODKIT_API_KEYS=dev-key npm run serve -- --port 8080");
    // Every URL is on the port the serve step listens on, and every key is the one it starts with.
    const ports = [...text.matchAll(/https?:\/\/127\.0\.0\.1:(\d+)/g)].map((m) => Number(m[1]));
    expect(ports.length).toBeGreaterThan(0);
    expect(new Set(ports)).toEqual(new Set([SERVE_PORT]));
    expect(steps[2]?.text).toBe(`http://127.0.0.1:${SERVE_PORT}/console/ (paste the key ${SERVE_KEY})`);
    // `runpodkit` is on no PATH in a checkout (and `npx runpodkit` needs dist/): the sources' CLI,
    // which finds `npm run serve`'s service beside its default store, so no --url.
    expect(steps[3]?.text).toMatch(
      new RegExp(`^RUNPOD_API_KEY=${SERVE_KEY} npx tsx service/main\\.ts logs <endpoint id> `),
    );
    expect(steps[3]?.text).not.toMatch(/--url|RUNPOD_BASE_URL/);
    expect(existsSync(join(PROJECT_ROOT, "service", "main.ts"))).toBe(true);
    expect(text).not.toMatch(/rpk_/);
    for (const path of DOCS_POINTED_TO) {
      expect(steps[4]?.text).toContain(path);
      expect(existsSync(join(PROJECT_ROOT, path)), path).toBe(true);
    }
  });
});
