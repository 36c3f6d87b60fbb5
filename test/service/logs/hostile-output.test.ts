import { connect } from "node:net";
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { LineSplitter } from "../../../service/jobs/logs/line-splitter";
import { DEFAULT_LOG_LIMITS } from "../../../service/jobs/logs/log-book";
import { terminalSafe } from "../../../service/jobs/logs/terminal";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { eventually, type Harness, KEY, startHarness } from "../jobs/harness";
import { entriesOf, logsCli, runsyncCompleted } from "./support";

const NOISY = resolve("test/service/logs/fixtures/noisy-handler.ts");
const ESC = "\x1b";
/** Characters that would act on a terminal if printed raw. */
const rawControl = (text: string) => [...text].some((char) => `${ESC}\x07\0\u009b\u202e`.includes(char));

describe("LineSplitter: a worker's output as lines, never holding more than the bound", () => {
  it("cuts an over-long line as it arrives and says how much went", () => {
    const lines: [string, number][] = [];
    const splitter = new LineSplitter(8, (line, cut) => lines.push([line, cut]));
    for (let i = 0; i < 1000; i++) {
      splitter.push(Buffer.from("y".repeat(1024)));
      expect(splitter.buffered).toBeLessThanOrEqual(8);
    }
    splitter.push(Buffer.from("\nshort\n"));
    expect(lines).toEqual([
      ["yyyyyyyy", 1024 * 1000 - 8],
      ["short", 0],
    ]);
  });

  it("ends lines at \\n and \\r\\n (also split across chunks); a lone \\r redraws the line; decodes UTF-8 split across chunks", () => {
    const lines: string[] = [];
    const splitter = new LineSplitter(1024, (line) => lines.push(line));
    const euro = Buffer.from("€");
    splitter.push(Buffer.from("a\r\nb\r"));
    splitter.push(Buffer.from("\nc\rd\n"));
    splitter.push(Buffer.concat([Buffer.from("e"), euro.subarray(0, 1)]));
    splitter.push(Buffer.concat([euro.subarray(1), Buffer.from([0x0a, 0xff, 0x0a])]));
    splitter.push(Buffer.from("last"));
    splitter.end();
    // "c\rd": d is drawn over c, as a terminal shows it (it was two lines, "c" and "d").
    expect(lines).toEqual(["a", "b", "d", "e€", "\ufffd", "last"]);
  });

  it("a progress bar's \\r redraws are one line, its final state; a line ending in \\r keeps its text", () => {
    const lines: string[] = [];
    const splitter = new LineSplitter(1024, (line) => lines.push(line));
    // tqdm-style: each redraw starts with \r; the bar ends with a newline. Split anywhere.
    const bar = Array.from({ length: 201 }, (_, i) => `\r${i}/200 [${"#".repeat(i / 10).padEnd(20)}]`).join(
      "",
    );
    const bytes = Buffer.from(`${bar}\nnext\n`);
    for (let at = 0; at < bytes.length; at += 7) splitter.push(bytes.subarray(at, at + 7));
    expect(lines).toEqual([`200/200 [${"#".repeat(20)}]`, "next"]);
    // A trailing \r (and repeated ones) leaves the line as printed; no empty line from a leading \r.
    splitter.push(Buffer.from("\rsaved\r\r\nend\r"));
    splitter.end();
    expect(lines.slice(2)).toEqual(["saved", "end"]);
  });

  it("a million redraws without a newline hold one line at most, and emit nothing until it ends", () => {
    const lines: string[] = [];
    const splitter = new LineSplitter(64, (line) => lines.push(line));
    const chunk = Buffer.from(Array.from({ length: 1000 }, (_, i) => `\r${i} ${"=".repeat(80)}`).join(""));
    for (let i = 0; i < 1000; i++) {
      splitter.push(chunk);
      expect(splitter.buffered).toBeLessThanOrEqual(64);
    }
    expect(lines).toEqual([]);
    splitter.end();
    // The last redraw, cut to the bound like any line.
    expect(lines).toEqual([`999 ${"=".repeat(60)}`]);
  });

  it("an unfinished line is emitted as it stands once idle, and every flush.everyMs while redrawn", async () => {
    const clock = new ManualClock(0);
    const lines: string[] = [];
    const splitter = new LineSplitter(1024, (line) => lines.push(line), {
      clock,
      idleMs: 1000,
      everyMs: 10_000,
    });
    splitter.push(Buffer.from("Loading model..."));
    await clock.advance(999);
    expect(lines).toEqual([]);
    await clock.advance(1);
    expect(lines).toEqual(["Loading model..."]);
    // The newline that finishes it adds no second (empty) entry; what follows is a new one.
    splitter.push(Buffer.from("\n"));
    splitter.push(Buffer.from(" done\n"));
    expect(lines).toEqual(["Loading model...", " done"]);
    // A bar redrawn every 500 ms for 25 s: its state at 10 s and 20 s, then its last.
    for (let i = 1; i <= 50; i++) {
      splitter.push(Buffer.from(`\r${i}/50`));
      await clock.advance(500);
    }
    splitter.push(Buffer.from("\n"));
    expect(lines.slice(2)).toEqual(["20/50", "40/50", "50/50"]);
  });

  it("terminalSafe keeps text and tabs, and a traceback's newlines when asked", () => {
    expect(terminalSafe("plain\ttext é €")).toBe("plain\ttext é €");
    expect(terminalSafe("a\nb\rc")).toBe("a\\nb\\rc");
    expect(terminalSafe(`a\n  at x${ESC}[0m`, { keepNewlines: true })).toBe("a\n  at x\\x1b[0m");
  });
});

describe("hostile worker output: bounded, attributed, and harmless to a terminal", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  const runsync = (ep: EndpointRecord, input: unknown) => runsyncCompleted(h, ep, input);

  const cli = (args: string[]) => logsCli(`${h.url}/v2`, args);

  it("a line longer than the bound is cut as it is read (the service holds no more of it) and the next line is whole", async () => {
    h = await startHarness({
      config: {
        handlers: { "acme/noisy": NOISY },
        logs: { perWorker: 100, perEndpoint: 100, workersPerEndpoint: 5, maxLineChars: 4096 },
      },
    });
    const ep = h.endpoint("acme/noisy");
    await runsync(ep, { mode: "long", bytes: 3 * 1024 * 1024 });
    const entries = await eventually(async () => {
      const list = entriesOf((await h.call("GET", `/v2/${ep.id}/logs`)).text);
      return list.some((e) => e.message === "after-long") ? list : undefined;
    }, 10_000);
    const long = entries.find((e) => e.message.startsWith("xxxx"));
    expect(long?.message).toBe(`${"x".repeat(4096)} ...[cut ${3 * 1024 * 1024 - 4096} bytes]`);
    expect(long?.stream).toBe("stdout");
  });

  it("a flood of long lines is kept up to the endpoint's bound in characters, its newest lines first", async () => {
    // The line bounds alone kept 10,000 lines of up to 64 Ki characters an endpoint (~660 MB each).
    h = await startHarness({
      config: {
        handlers: { "acme/noisy": NOISY },
        logs: { ...DEFAULT_LOG_LIMITS, perEndpointChars: 100_000 },
      },
    });
    const ep = h.endpoint("acme/noisy");
    await runsync(ep, { mode: "flood", lines: 1_000 });
    const entries = await eventually(async () => {
      const list = entriesOf((await h.call("GET", `/v2/${ep.id}/logs`)).text);
      return list.some((e) => e.message.startsWith("999 ")) ? list : undefined;
    }, 10_000);
    const chars = entries.reduce((sum, e) => sum + e.message.length, 0);
    expect(chars).toBeLessThanOrEqual(100_000);
    expect(chars).toBeGreaterThan(90_000);
    expect(h.plane.logs.heldChars(ep.id)).toBe(chars);
    // The newest lines, in order, to the last; the worker's own ring holds no more.
    const flood = entries.filter((e) => /^\d+ f/.test(e.message)).map((e) => Number(e.message.split(" ")[0]));
    expect(flood.at(-1)).toBe(999);
    expect(flood).toEqual(Array.from({ length: flood.length }, (_, i) => 1_000 - flood.length + i));
    const workerId = entries.at(-1)?.workerId as string;
    const ofWorker = entriesOf((await h.call("GET", `/v2/${ep.id}/logs?worker=${workerId}`)).text);
    expect(ofWorker.reduce((sum, e) => sum + e.message.length, 0)).toBeLessThanOrEqual(100_000);
  });

  it("escape sequences a handler prints reach neither the service's stderr nor `runpodkit logs` raw", async () => {
    h = await startHarness({ config: { handlers: { "acme/noisy": NOISY }, workerOutput: "inherit" } });
    const ep = h.endpoint("acme/noisy");
    const echoed: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      echoed.push(String(chunk));
      return (write as (...args: unknown[]) => boolean).call(process.stderr, chunk, ...rest);
    }) as typeof process.stderr.write;
    let id: string;
    try {
      id = await runsync(ep, { mode: "escapes" });
      await eventually(() => (echoed.some((text) => text.includes("bidi")) ? true : undefined), 10_000);
    } finally {
      process.stderr.write = write;
    }
    const echo = echoed.filter((text) => text.includes("clip") || text.includes("bidi")).join("");
    expect(echo).toContain("clip \\x1b]52;c;ZXZpbA==\\x07 clear \\x1b[2J\\x1b[H title \\x1b]0;pwned\\x07");
    expect(echo).toContain("c1 \\x9b2J nul \\x00 bidi \\u202eevil");
    expect(rawControl(echo)).toBe(false);

    // Kept as printed (the API answers JSON, which escapes them); shown escaped by the CLI.
    const kept = entriesOf((await h.call("GET", `/v2/${ep.id}/logs?job=${id}`)).text);
    expect(kept.map((e) => e.message)).toContain("c1 \u009b2J nul \0 bidi \u202eevil");
    const shown = cli([ep.id, "--job", id]);
    await shown.exited;
    expect(shown.seen.code).toBe(0);
    expect(shown.seen.stdout).toContain(`${id} INFO  clip \\x1b]52;c;ZXZpbA==\\x07 clear \\x1b[2J`);
    expect(shown.seen.stdout).toContain(`${id} ERROR c1 \\x9b2J nul \\x00 bidi \\u202eevil`);
    expect(rawControl(shown.seen.stdout)).toBe(false);

    // --json: valid JSON lines, the same messages, and no raw C1 control or override either.
    const json = cli([ep.id, "--job", id, "--json"]);
    await json.exited;
    expect(rawControl(json.seen.stdout)).toBe(false);
    const parsed = entriesOf(json.seen.stdout).map((e) => e.message);
    expect(parsed).toContain("c1 \u009b2J nul \0 bidi \u202eevil");
    expect(parsed).toContain(kept.find((e) => e.message.startsWith("clip"))?.message);
  });

  it("a follower that stops reading is cut off instead of the service queueing every line for it", async () => {
    h = await startHarness({ config: { handlers: { "acme/noisy": NOISY } } });
    const ep = h.endpoint("acme/noisy");
    const url = new URL(h.url);
    const socket = connect(Number(url.port), url.hostname);
    socket.setNoDelay(true);
    const closed = new Promise<void>((done) => socket.once("close", () => done()));
    socket.on("error", () => {});
    socket.write(
      `GET /v2/${ep.id}/logs?follow=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${KEY}\r\n\r\n`,
    );
    // Never read: the reply piles up in the kernel, then in the service, until it gives up on us.
    socket.pause();
    for (let round = 0; round < 4; round++) await runsync(ep, { mode: "flood", lines: 10_000 });
    // Every line read by the service (the last job's "Finished." is its last), then we read again:
    // what the kernel held arrives, then the end, far short of the 40 MB printed.
    await eventually(async () => {
      const last = entriesOf((await h.call("GET", `/v2/${ep.id}/logs?limit=1`)).text)[0];
      return last?.message === "Finished." && last.seq > 40_000 ? true : undefined;
    }, 20_000);
    let received = 0;
    socket.on("data", (chunk: Buffer) => {
      received += chunk.length;
    });
    socket.resume();
    await closed;
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(20 * 1024 * 1024);
  });

  it("following ends when the endpoint is deleted, and `runpodkit logs --follow` says so when the service ends it", async () => {
    h = await startHarness({ config: { handlers: { "acme/noisy": NOISY } } });
    const ep = h.endpoint("acme/noisy");
    await runsync(ep, { mode: "none" });
    const follower = await fetch(`${h.url}/v2/${ep.id}/logs?follow=1`, { headers: { authorization: KEY } });
    expect(follower.status).toBe(200);
    const reader = follower.body?.getReader();
    await reader?.read();
    h.management.endpoints.update(ep.accountId, ep.id, { workersMin: 0, workersMax: 0 });
    h.management.endpoints.delete(ep.accountId, ep.id);
    for (;;) if ((await reader?.read())?.done !== false) break;

    const other = h.endpoint("acme/noisy");
    await runsync(other, { mode: "none" });
    const followed = cli([other.id, "--follow"]);
    await eventually(() => (followed.seen.stdout.includes("Finished.") ? true : undefined), 10_000);
    await h.app.close();
    await followed.exited;
    expect(followed.seen.code).toBe(1);
    expect(followed.seen.stderr).toMatch(
      /^runpodkit: logs: following stopped: the service at http:\/\/127\.0\.0\.1:\d+\/v2 ended the stream: it stopped or restarted, or the endpoint was deleted; the last line printed was seq \d+ at \S+Z \(--since \S+Z reads on from there\)\n$/,
    );
  });

  it("`runpodkit logs` refuses a bad flag naming it, with the usage, and says when the service cannot be reached", async () => {
    h = await startHarness();
    const ep = h.endpoint("runpodkit/echo");
    for (const [args, first] of [
      [["--since", "yesterday"], "runpodkit: logs: --since: expected ms since the epoch or an ISO 8601 time"],
      [["--limit", "0"], "runpodkit: logs: --limit: Too small: expected number to be >=1"],
      [["--worker", ""], "runpodkit: logs: --worker: Too small: expected string to have >=1 characters"],
      [["--bogus"], "runpodkit: logs: Unknown option '--bogus'."],
    ] as const) {
      const run = cli([ep.id, ...args]);
      await run.exited;
      expect(run.seen.code).toBe(1);
      expect(run.seen.stderr.startsWith(first)).toBe(true);
      expect(run.seen.stderr).toContain("usage: runpodkit logs <endpoint id>");
      expect(run.seen.stderr).not.toContain("    at ");
    }
    const base = h.url;
    await h.app.close();
    const unreachable = cli([ep.id]);
    await unreachable.exited;
    expect(unreachable.seen.code).toBe(1);
    expect(unreachable.seen.stderr).toMatch(
      new RegExp(
        `^runpodkit: logs: cannot reach the service at ${base.replace(/\./g, "\\.")}/v2: .*ECONNREFUSED.* \\(is it running\\? --url or RUNPOD_BASE_URL names its job API base; without them, --data names its store\\)\\n$`,
      ),
    );
  });

  it("`runpodkit logs` prints all that is kept (not only the newest 1,000), and --limit the newest n", async () => {
    h = await startHarness({ config: { handlers: { "acme/noisy": NOISY } } });
    const ep = h.endpoint("acme/noisy");
    await runsync(ep, { mode: "flood", lines: 1500 });
    await eventually(async () => {
      const list = entriesOf((await h.call("GET", `/v2/${ep.id}/logs?limit=1`)).text);
      return list[0]?.message === "Finished." ? true : undefined;
    }, 10_000);
    const all = cli([ep.id]);
    await all.exited;
    const lines = all.seen.stdout.trimEnd().split("\n");
    expect(lines.filter((line) => / INFO {2}\d+ f+$/.test(line))).toHaveLength(1500);
    expect(lines[0]).toContain("worker started");
    const newest = cli([ep.id, "--limit", "2"]);
    await newest.exited;
    expect(newest.seen.stdout.trimEnd().split("\n")).toHaveLength(2);
    expect(newest.seen.stdout).toContain("Finished.");
  });
});
