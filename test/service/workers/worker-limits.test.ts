import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { eventually, type Harness, startHarness } from "../jobs/harness";
import { entriesOf } from "../logs/support";
import { type Cli, startCli } from "../security/cli";

const LEAKS = resolve("test/service/workers/fixtures/leaks-memory.ts");
const NOISY = resolve("test/service/logs/fixtures/noisy-handler.ts");
/** Small, for a shared machine: a worker under tsx holds ~100 MiB before its handler leaks. */
const BOUND = 192 * 1024 * 1024;

let h: Harness | null = null;
let cli: Cli | null = null;

afterEach(async () => {
  await h?.close();
  h = null;
  // Its workers end with it (their IPC channel closes).
  cli?.kill();
  cli = null;
});

interface JobStatus {
  status: string;
  error?: string;
}

async function status(harness: Harness, endpointId: string, id: string): Promise<JobStatus> {
  return (await harness.call("GET", `/v2/${endpointId}/status/${id}`)).body as JobStatus;
}

describe("a worker's memory is bounded (config.jobs.workerMemoryBytes)", () => {
  it("a handler leaking Buffers is killed by the watch of its resident memory, and its job FAILS naming the bound", async () => {
    const clock = new ManualClock();
    h = await startHarness({
      clock,
      config: { handlers: { "acme/leaks": LEAKS }, workerMemoryBytes: BOUND, memoryWatchMs: 1_000 },
    });
    const harness = h;
    const ep = harness.endpoint("acme/leaks");
    const run = await harness.call("POST", `/v2/${ep.id}/run`, {
      body: { input: { kind: "buffer", mb: 320 } },
    });
    const id = (run.body as { id: string }).id;
    // Each turn of the clock is one reading of /proc; the handler holds 320 MiB once it is done.
    const failed = await eventually(async () => {
      await clock.advance(1_000);
      const job = await status(harness, ep.id, id);
      return job.status === "IN_QUEUE" || job.status === "IN_PROGRESS" ? undefined : job;
    }, 30_000);
    expect(failed.status).toBe("FAILED");
    expect(failed.error).toMatch(
      /^worker \S+ was ended while running the job: its resident memory \(its process group's, with what it started outside the group\) reached \d+ MiB, over the bound of 192 MiB a worker \(raise it if the handler needs more: --worker-memory <MiB>, config\.jobs\.workerMemoryBytes\)$/,
    );
    // Not run again on a fresh worker: it would leak there the same.
    expect(harness.plane.book.find(id)?.lostRetries ?? 0).toBe(0);
    const workerId = /^worker (\S+)/.exec(failed.error ?? "")?.[1] as string;
    const logs = entriesOf((await harness.call("GET", `/v2/${ep.id}/logs?worker=${workerId}`)).text);
    expect(logs.map((e) => e.message)).toContainEqual(
      expect.stringMatching(
        /^worker ended: its resident memory .* over the bound of 192 MiB a worker .*; the jobs it held end FAILED$/,
      ),
    );
    expect(harness.logs).toContainEqual(
      expect.stringContaining(`worker ${workerId} of endpoint ${ep.id}: its resident memory`),
    );
  }, 60_000);

  it("a handler leaking JS objects stops at a V8 heap limit of the bound, and its job FAILS naming it", async () => {
    // The clock is not advanced: no reading of /proc, only V8's limit can stop this one.
    h = await startHarness({
      config: { handlers: { "acme/leaks": LEAKS }, workerMemoryBytes: BOUND, memoryWatchMs: 1_000 },
    });
    const harness = h;
    const ep = harness.endpoint("acme/leaks");
    const run = await harness.call("POST", `/v2/${ep.id}/run`, {
      body: { input: { kind: "heap", mb: 320 } },
    });
    const id = (run.body as { id: string }).id;
    const failed = await eventually(async () => {
      const job = await status(harness, ep.id, id);
      return job.status === "IN_QUEUE" || job.status === "IN_PROGRESS" ? undefined : job;
    }, 30_000);
    expect(failed.status).toBe("FAILED");
    expect(failed.error).toMatch(
      /^worker \S+ was ended while running the job: its JavaScript heap reached V8's limit of 192 MiB \(the process aborted\), over the bound of 192 MiB a worker \(raise it if the handler needs more: --worker-memory <MiB>, config\.jobs\.workerMemoryBytes\)$/,
    );
    expect(harness.plane.book.find(id)?.lostRetries ?? 0).toBe(0);
  }, 60_000);

  it("a worker over the bound before its first call is named in /health, its endpoint backs off, and its job waits", async () => {
    const clock = new ManualClock();
    h = await startHarness({
      clock,
      config: {
        handlers: { "acme/big-model": resolve("test/service/workers/fixtures/leaks-at-import.mts") },
        workerMemoryBytes: BOUND,
        memoryWatchMs: 1_000,
      },
    });
    const harness = h;
    const ep = harness.endpoint("acme/big-model", { env: { LEAK_MB: "320" } });
    const run = await harness.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } });
    const id = (run.body as { id: string }).id;
    const issue = await eventually(async () => {
      const health = (await harness.call("GET", `/v2/${ep.id}/health`)).body as {
        startIssue?: { reason: string };
      };
      if (health.startIssue) return health.startIssue;
      // Not past the back-off of a start that failed: only the memory watch's readings.
      if (harness.plane.pool.mayStart(ep.id)) await clock.advance(1_000);
      return undefined;
    }, 30_000);
    expect(issue.reason).toMatch(
      /^worker (\S+) was ended before its first call: its resident memory \(its process group's, with what it started outside the group\) reached \d+ MiB, over the bound of 192 MiB a worker \(raise it if the handler needs more: --worker-memory <MiB>, config\.jobs\.workerMemoryBytes\); its logs: runpodkit logs \S+ --worker \1$/,
    );
    // It backs off as a crash at start does, instead of starting the same leak again at once.
    expect(harness.plane.pool.mayStart(ep.id)).toBe(false);
    expect(((await harness.call("GET", `/v2/${ep.id}/status/${id}`)).body as JobStatus).status).toBe(
      "IN_QUEUE",
    );
  }, 60_000);

  it("refuses a bound no worker could start under", async () => {
    await expect(startHarness({ config: { workerMemoryBytes: 1_000 } })).rejects.toThrow(
      /^config\.jobs\.workerMemoryBytes: expected null or a whole number of bytes of at least 67108864, got 1000$/,
    );
  });
});

describe("runpodkit serve --worker-memory", () => {
  it.each(["10", "abc", "1.5", "-1", "1048577"])(
    "refuses %s, naming the flag and its range",
    async (value) => {
      cli = startCli(["--data", ":memory:", `--worker-memory=${value}`], {
        RUNPODKIT_API_KEYS: "k-worker-memory",
      });
      const { code } = await cli.exited;
      expect(code).toBe(1);
      expect(cli.stderr()).toContain(
        `--worker-memory: expected a whole number of MiB from 64 to 1048576, or none, got "${value}"`,
      );
    },
  );

  it("bounds a command worker (no V8 heap limit there): its process group is killed and the job FAILS", async () => {
    const key = "k-worker-memory-command";
    // The worker runtime started as a command line: a group of the guard, a shell and this Node.
    const command = [
      process.execPath,
      "--import",
      pathToFileURL(resolve("node_modules/tsx/dist/loader.mjs")).href,
      resolve("service/jobs/workers/runtime/main.ts"),
      LEAKS,
    ].join(" ");
    cli = startCli(
      ["--data", ":memory:", "--worker-memory", "192", "--handler", `acme/cmd-leaks=cmd:${command}`],
      {
        RUNPODKIT_API_KEYS: key,
      },
    );
    const { restUrl, queueUrl } = await cli.ready;
    const call = async <T>(url: string, body?: unknown) =>
      (await (
        await fetch(url, {
          method: body === undefined ? "GET" : "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        })
      ).json()) as T;
    const template = await call<{ id: string }>(`${restUrl}/templates`, {
      name: "t",
      imageName: "acme/cmd-leaks",
      isServerless: true,
    });
    const endpoint = await call<{ id: string }>(`${restUrl}/endpoints`, {
      name: "e",
      templateId: template.id,
      workersMin: 0,
      workersMax: 1,
    });
    const { id } = await call<{ id: string }>(`${queueUrl}/v2/${endpoint.id}/run`, {
      input: { kind: "buffer", mb: 320 },
    });
    const failed = await eventually(async () => {
      const job = await call<JobStatus>(`${queueUrl}/v2/${endpoint.id}/status/${id}`);
      return job.status === "IN_QUEUE" || job.status === "IN_PROGRESS" ? undefined : job;
    }, 45_000);
    expect(failed.status).toBe("FAILED");
    expect(failed.error).toMatch(
      /^worker \S+ was ended while running the job: its resident memory \(its process group's, with what it started outside the group\) reached \d+ MiB, over the bound of 192 MiB a worker \(raise it if the handler needs more: --worker-memory <MiB>, config\.jobs\.workerMemoryBytes\)$/,
    );
    expect(cli.stderr()).toMatch(
      /worker \S+ of endpoint \S+: its resident memory .* over the bound of 192 MiB a worker/,
    );
  }, 90_000);
});

describe("worker output echoed to the service's stderr is bounded (config.jobs.workerEchoBytesPerSecond)", () => {
  it("a flooding handler's lines past the rate are not echoed, a note counts them, and its logs keep them all", async () => {
    const clock = new ManualClock();
    h = await startHarness({
      clock,
      config: {
        handlers: { "acme/noisy": NOISY },
        workerOutput: "inherit",
        workerEchoBytesPerSecond: 8 * 1024,
      },
    });
    const harness = h;
    const ep = harness.endpoint("acme/noisy");
    const echoed: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string | Uint8Array) => {
      echoed.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    let workerId: string;
    try {
      const reply = await harness.call("POST", `/v2/${ep.id}/runsync`, {
        body: { input: { mode: "flood", lines: 200 } },
      });
      expect((reply.body as JobStatus).status).toBe("COMPLETED");
      const entries = await eventually(async () => {
        const list = entriesOf((await harness.call("GET", `/v2/${ep.id}/logs`)).text);
        return list.some((e) => e.message.startsWith("199 ")) ? list : undefined;
      });
      // The logs API keeps every line.
      expect(entries.filter((e) => /^\d+ f/.test(e.message))).toHaveLength(200);
      workerId = entries.find((e) => e.message.startsWith("199 "))?.workerId as string;
      const flood = echoed.filter((text) => /^\[\S+\] \d+ f/.test(text));
      // 8 KiB a second (the line reaching it is written whole): 8 or 9 lines of 1 KiB, not 200.
      expect(flood.length).toBeGreaterThanOrEqual(7);
      expect(flood.length).toBeLessThanOrEqual(9);
      expect(echoed.join("")).not.toContain("not echoed");
      // As the second ends, a note counts what was not echoed; the next line is echoed again.
      await clock.advance(1_000);
      expect(echoed.filter((text) => text.includes("not echoed"))).toHaveLength(1);
      await harness.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { mode: "flood", lines: 1 } } });
      await eventually(() => (echoed.filter((text) => /\] 0 f/.test(text)).length === 2 ? true : undefined));
      expect(echoed.filter((text) => text.includes("not echoed"))).toHaveLength(1);
    } finally {
      process.stderr.write = write;
    }
    const note = echoed.find((text) => text.includes("not echoed"));
    expect(note).toMatch(
      new RegExp(
        `^\\[${workerId}\\] \\.\\.\\.\\[(\\d+) line\\(s\\) not echoed here: over 8192 bytes/s a worker \\(config\\.jobs\\.workerEchoBytesPerSecond\\); all are in its logs: runpodkit logs ${ep.id} --worker ${workerId}\\]\\n$`,
      ),
    );
    const dropped = Number(/\[(\d+) line/.exec(note ?? "")?.[1]);
    expect(dropped).toBeGreaterThanOrEqual(191);
  }, 60_000);
});
