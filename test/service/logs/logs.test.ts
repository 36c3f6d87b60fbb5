import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { parseWorkerLine } from "../../../service/jobs/logs/lines";
import { DEFAULT_LOG_LIMITS, LogBook } from "../../../service/jobs/logs/log-book";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { eventually, type Harness, KEY, OTHER_KEY, startHarness } from "../jobs/harness";
import { entriesOf, logsCli } from "./support";

describe("LogBook bounds in characters", () => {
  const limits = {
    ...DEFAULT_LOG_LIMITS,
    perWorker: 100,
    perEndpoint: 100,
    workersPerEndpoint: 10,
    perEndpointChars: 1_000,
    totalChars: 2_500,
  };
  const lines = (book: LogBook, ep: string, worker: string, n: number, from = 0) => {
    for (let i = from; i < from + n; i++) book.line(ep, worker, "stdout", `${i}`.padEnd(100, "."), []);
  };

  it("an endpoint keeps its newest lines up to perEndpointChars, its workers' rings included", () => {
    const book = new LogBook(new ManualClock(0), limits);
    lines(book, "ep", "quiet", 3);
    lines(book, "ep", "chatty", 50, 3);
    expect(book.heldChars("ep")).toBe(1_000);
    // The oldest went first, from every ring: the quiet worker's lines were the oldest.
    expect(book.query("ep", { workerId: "quiet" })).toEqual([]);
    expect(book.query("ep").map((e) => Number.parseInt(e.message, 10))).toEqual(
      Array.from({ length: 10 }, (_, i) => 43 + i),
    );
    expect(book.query("ep", { workerId: "chatty" })).toHaveLength(10);
  });

  it("over every endpoint, totalChars: the largest endpoint gives way; a deleted endpoint's count goes", () => {
    const book = new LogBook(new ManualClock(0), limits);
    lines(book, "a", "w", 10);
    lines(book, "b", "w", 10);
    lines(book, "c", "w", 5);
    expect(book.heldChars()).toBe(2_500);
    lines(book, "c", "w", 3, 5);
    expect(book.heldChars()).toBe(2_500);
    expect([book.heldChars("a"), book.heldChars("b"), book.heldChars("c")]).toEqual([800, 900, 800]);
    book.deleteEndpoint("a");
    expect(book.heldChars()).toBe(1_700);
  });

  it("a worker's ring dropped for a newer worker's releases what only it held", () => {
    const book = new LogBook(new ManualClock(0), { ...limits, perEndpoint: 2, workersPerEndpoint: 1 });
    lines(book, "ep", "w1", 5);
    expect(book.heldChars("ep")).toBe(500); // w1's ring holds all five, the endpoint's the last two
    lines(book, "ep", "w2", 1, 5);
    expect(book.heldChars("ep")).toBe(200);
  });
});

describe("worker lines: the shapes of the real worker library and plain output", () => {
  it("reads the JSON line a platform worker prints, with its job id", () => {
    expect(
      parseWorkerLine('{"requestId": "8d2c-job-0001-u1", "message": "Started.", "level": "INFO"}', "stdout"),
    ).toEqual({ level: "INFO", requestId: "8d2c-job-0001-u1", message: "Started." });
    expect(
      parseWorkerLine('{"requestId": null, "message": "Jobs in queue: 0", "level": "DEBUG"}', "stdout"),
    ).toEqual({ level: "DEBUG", requestId: null, message: "Jobs in queue: 0" });
  });

  it("reads the text line `LEVEL  | job id | message`, and keeps other lines whole", () => {
    expect(parseWorkerLine("ERROR  | abcd-1234-ef | Captured Handler Exception", "stdout")).toEqual({
      level: "ERROR",
      requestId: "abcd-1234-ef",
      message: "Captured Handler Exception",
    });
    expect(parseWorkerLine("INFO   | Starting worker.", "stdout")).toEqual({
      level: "INFO",
      requestId: null,
      message: "Starting worker.",
    });
    expect(parseWorkerLine("Traceback (most recent call last):", "stderr")).toEqual({
      level: "ERROR",
      requestId: null,
      message: "Traceback (most recent call last):",
    });
    expect(parseWorkerLine('{"not": "a log line"}', "stdout").message).toBe('{"not": "a log line"}');
  });

  it("normalises a level to its name, and stamps each line with the clock's time as it is read", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const book = new LogBook(clock, DEFAULT_LOG_LIMITS);
    const held = new Map([["job-aaaaaa", 1]]);
    book.line("ep", "w1", "stdout", '{"requestId":"job-aaaaaa","message":"Started.","level":"info"}', held);
    book.line(
      "ep",
      "w1",
      "stdout",
      '{"requestId":"job-aaaaaa","message":"Finished.","level":"Warning"}',
      held,
    );
    await clock.advance(1);
    book.line("ep", "w1", "stdout", "ERROR  | job-bbbbbb | late", ["job-aaaaaa"]);
    await clock.advance(2_500);
    book.line("ep", "w1", "stderr", '{"requestId":"job-bbbbbb","message":"custom","level":"notice"}', []);
    expect(book.query("ep").map((e) => [e.time, e.level, e.requestId, e.message])).toEqual([
      ["2026-01-01T00:00:00.000Z", "INFO", "job-aaaaaa", "Started."],
      ["2026-01-01T00:00:00.000Z", "WARNING", "job-aaaaaa", "Finished."],
      ["2026-01-01T00:00:00.001Z", "ERROR", "job-bbbbbb", "late"],
      ["2026-01-01T00:00:02.501Z", "NOTICE", "job-bbbbbb", "custom"],
    ]);
    // Every entry has the same fields (one shape), whatever the line was.
    expect(new Set(book.query("ep").map((e) => Object.keys(e).join()))).toEqual(
      new Set(["seq,time,endpointId,workerId,stream,level,requestId,message"]),
    );
  });

  it("attributes a line naming no job to the one job its worker holds, and bounds what it keeps", () => {
    const book = new LogBook(new ManualClock(0), {
      perWorker: 3,
      perEndpoint: 4,
      workersPerEndpoint: 2,
      maxLineChars: 20,
    });
    book.line("ep", "w1", "stdout", "plain line", ["job-a"]);
    book.line("ep", "w1", "stdout", "two jobs held", ["job-a", "job-b"]);
    book.line("ep", "w1", "stdout", '{"requestId":"job-cccccc","message":"named","level":"WARN"}', ["job-a"]);
    expect(book.query("ep").map((e) => [e.message, e.requestId])).toEqual([
      ["plain line", "job-a"],
      ["two jobs held", null],
      ["named", "job-cccccc"],
    ]);
    // The worker session's own map of held jobs (id -> handed-at) reads the same.
    const other = new LogBook(new ManualClock(0), DEFAULT_LOG_LIMITS);
    other.line("ep", "w1", "stdout", "one held", new Map([["job-a", 1]]));
    other.line(
      "ep",
      "w1",
      "stdout",
      "two held",
      new Map([
        ["job-a", 1],
        ["job-b", 2],
      ]),
    );
    other.line("ep", "w1", "stdout", "none held", new Map());
    expect(other.query("ep").map((e) => e.requestId)).toEqual(["job-a", null, null]);
    for (let i = 0; i < 5; i++) book.line("ep", "w2", "stderr", `w2 line ${i}`, []);
    expect(book.query("ep").map((e) => e.message)).toEqual([
      "w2 line 1",
      "w2 line 2",
      "w2 line 3",
      "w2 line 4",
    ]);
    expect(book.query("ep", { workerId: "w1" }).map((e) => e.message)).toEqual([
      "plain line",
      "two jobs held",
      "named",
    ]);
    expect(book.query("ep", { workerId: "w2" })).toHaveLength(3);
    book.line("ep", "w3", "stdout", "x".repeat(50), []);
    expect(book.query("ep", { workerId: "w1" })).toEqual([]);
    expect(book.query("ep", { workerId: "w3" })[0]?.message).toBe(`${"x".repeat(20)} ...[cut 30 characters]`);
  });
});

describe("worker logs through the API and `runpodkit logs`", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  const runFailing = async (ep: EndpointRecord, message: string) => {
    const reply = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { message } } });
    const id = (reply.body as { id: string }).id;
    await eventually(async () => {
      const status = (await h.call("GET", `/v2/${ep.id}/status/${id}`)).body as { status: string };
      return status.status === "FAILED" ? true : undefined;
    });
    return id;
  };

  const cli = (args: string[], key = KEY) => logsCli(`${h.url}/v2`, args, key);

  it("a failing handler's traceback is readable through the API within a second, attributed to its job", async () => {
    h = await startHarness();
    const ep = h.endpoint("runpodkit/fail");
    const id = await runFailing(ep, "exploded on purpose");
    // Bounded: the lines must be there within a second of the failure.
    const entries = await eventually(async () => {
      const reply = await h.call("GET", `/v2/${ep.id}/logs?job=${id}`);
      expect(reply.status).toBe(200);
      expect(reply.headers["content-type"]).toContain("application/x-ndjson");
      const list = entriesOf(reply.text);
      return list.some((e) => e.message.includes("Error: exploded on purpose")) ? list : undefined;
    }, 1_000);
    const traceback = entries.find((e) => e.message.includes("Error: exploded on purpose"));
    expect(traceback).toMatchObject({ level: "ERROR", requestId: id, endpointId: ep.id, stream: "stdout" });
    expect(traceback?.message).toContain("Captured Handler Exception");
    expect(traceback?.message).toMatch(/\n\s+at .*handler/);
    expect(entries.map((e) => e.message)).toContain("Started.");
    expect(entries.every((e) => e.requestId === id)).toBe(true);

    // The same through the worker filter; another job's lines are not in this job's.
    const workerId = traceback?.workerId ?? "";
    const other = await runFailing(ep, "second failure");
    const byWorker = await eventually(async () => {
      const list = entriesOf((await h.call("GET", `/v2/${ep.id}/logs?worker=${workerId}`)).text);
      return list.some((e) => e.requestId === other && e.message.includes("second failure"))
        ? list
        : undefined;
    }, 1_000);
    expect(new Set(byWorker.map((e) => e.workerId))).toEqual(new Set([workerId]));
    const firstOnly = entriesOf((await h.call("GET", `/v2/${ep.id}/logs?job=${id}`)).text);
    expect(firstOnly.some((e) => e.message.includes("second failure"))).toBe(false);
    // A page back: the newest 2 entries before a seq.
    const all = entriesOf((await h.call("GET", `/v2/${ep.id}/logs`)).text);
    const pivot = all.at(-1)?.seq ?? 0;
    const back = entriesOf((await h.call("GET", `/v2/${ep.id}/logs?before=${pivot}&limit=2`)).text);
    expect(back.map((e) => e.seq)).toEqual(all.slice(-3, -1).map((e) => e.seq));
    const both = await h.call("GET", `/v2/${ep.id}/logs?before=${pivot}&follow=1`);
    expect(both.status).toBe(400);
    expect(JSON.stringify(both.body)).toContain("before: pages back through kept lines");
    const after = entriesOf((await h.call("GET", `/v2/${ep.id}/logs?after=${traceback?.seq}`)).text);
    expect(after.every((e) => e.seq > (traceback?.seq ?? 0))).toBe(true);
    expect(after.some((e) => e.message.includes("second failure"))).toBe(true);

    // Only with the account's key.
    expect((await h.call("GET", `/v2/${ep.id}/logs`, { key: null })).status).toBe(401);
    expect((await h.call("GET", `/v2/${ep.id}/logs`, { key: OTHER_KEY })).status).toBe(404);
    expect((await h.call("GET", `/v2/${ep.id}/logs?since=yesterday`)).status).toBe(400);
  });

  it("`runpodkit logs` prints the traceback, follows new lines, and never prints the key", async () => {
    h = await startHarness({ clock: new ManualClock(Date.now()) });
    const ep = h.endpoint("runpodkit/fail");
    const id = await runFailing(ep, "cli sees this");
    await eventually(async () => {
      const list = entriesOf((await h.call("GET", `/v2/${ep.id}/logs?job=${id}`)).text);
      return list.some((e) => e.message.includes("cli sees this")) ? true : undefined;
    }, 1_000);

    const once = cli([ep.id, "--job", id]);
    await once.exited;
    expect(once.seen.stderr).toBe("");
    expect(once.seen.code).toBe(0);
    expect(once.seen.stdout).toContain(`${id} ERROR Captured Handler Exception`);
    expect(once.seen.stdout).toContain("Error: cli sees this");
    expect(once.seen.stdout).not.toContain(KEY);

    const followed = cli([ep.id, "--follow"]);
    try {
      const next = await runFailing(ep, "followed live");
      await eventually(
        () => (followed.seen.stdout.includes("Error: followed live") ? true : undefined),
        10_000,
      );
      expect(followed.seen.stdout).toContain(`${next} ERROR Captured Handler Exception`);
    } finally {
      followed.child.kill("SIGTERM");
      await followed.exited;
    }

    const refused = cli([ep.id], "rpk_wrong_key_000000000000");
    await refused.exited;
    expect(refused.seen.code).toBe(1);
    expect(refused.seen.stderr).toContain(
      "answered 401: Unauthorized: the API key is not valid (RUNPOD_API_KEY must hold one of this service's account keys)",
    );
    expect(refused.seen.stderr).not.toContain("rpk_wrong_key_000000000000");

    // The key with its line end, as a CI secret pasted with it holds it: the same key.
    const pasted = cli([ep.id], `${KEY}\n`);
    await pasted.exited;
    expect(pasted.seen.code).toBe(0);
    expect(pasted.seen.stdout).toContain("Error: cli sees this");

    // No key in the environment: said so, with what to set (zod's own "expected string" before).
    const unset = cli([ep.id], "");
    await unset.exited;
    expect(unset.seen.code).toBe(1);
    expect(unset.seen.stderr.trim()).toBe(
      "runpodkit: logs: RUNPOD_API_KEY is not set: export the account's API key (one of the service's keys)",
    );
  });

  it("a --url or RUNPOD_BASE_URL that is no job API base is refused naming where it came from and the fix", async () => {
    h = await startHarness();
    const ep = h.endpoint("runpodkit/echo");
    const host = h.url.replace(/\/+$/, "");

    // The service's ready line prints queue=<host> (runpodkit:queueUrl): pasted as the base, the
    // route is /<id>/logs, which the service does not have. Said with the base to give instead.
    for (const [args, base, source] of [
      [[ep.id, "--url", host], host, "--url"],
      [[ep.id], host, "RUNPOD_BASE_URL"],
    ] as const) {
      const run = logsCli(source === "--url" ? `${host}/v2` : base, [...args]);
      await run.exited;
      expect(run.seen.code).toBe(1);
      expect(run.seen.stderr).toContain(`answered 404: no route GET /${ep.id}/logs (this service answers`);
      expect(run.seen.stderr).toContain(`(${source} is the job API base, which ends in /v2: ${host}/v2)`);
    }
    // The right base reads the endpoint: no such hint.
    const right = logsCli(`${host}/v2`, [ep.id]);
    await right.exited;
    expect(right.seen.code).toBe(0);

    // "localhost:8080" parses as a URL of the scheme "localhost:": it was sent, and undici's "Invalid URL
    // protocol" named neither the flag nor the fix.
    const port = new URL(host).port;
    const noScheme = logsCli(`${host}/v2`, [ep.id, "--url", `localhost:${port}/v2`]);
    await noScheme.exited;
    expect(noScheme.seen.code).toBe(1);
    expect(noScheme.seen.stderr).toMatch(
      /^runpodkit: logs: --url is not an http\(s\) URL: the job API base, e\.g\. http:\/\/127\.0\.0\.1:8080\/v2\n/,
    );
    const envNoScheme = logsCli(`localhost:${port}/v2`, [ep.id]);
    await envNoScheme.exited;
    expect(envNoScheme.seen.code).toBe(1);
    expect(envNoScheme.seen.stderr.trim()).toBe(
      "runpodkit: logs: RUNPOD_BASE_URL is not an http(s) URL: the job API base, e.g. http://127.0.0.1:8080/v2",
    );
  });

  it("a worker that dies mid-job leaves a line naming its exit, attributed to the job; closing ends followers", async () => {
    h = await startHarness();
    const ep = h.endpoint("runpodkit/misbehave");
    const run = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { mode: "crash", code: 7 } } });
    const id = (run.body as { id: string }).id;
    const exit = await eventually(async () => {
      const list = entriesOf((await h.call("GET", `/v2/${ep.id}/logs?job=${id}`)).text);
      return list.find((e) => e.stream === "service" && e.message.includes("code 7"));
    });
    expect(exit).toMatchObject({ level: "ERROR", requestId: id });
    expect(exit?.message).toBe("worker exited (code 7, signal null) unexpectedly: replacing it");

    // A followed reply still open does not hold the service's close.
    const follower = await fetch(`${h.url}/v2/${ep.id}/logs?follow=1`, { headers: { authorization: KEY } });
    expect(follower.status).toBe(200);
    const reader = follower.body?.getReader();
    await reader?.read();
    await h.app.close();
    for (;;) if ((await reader?.read())?.done !== false) break;
  });

  it("recent jobs: one job by id however many came after it, and summaries without the payloads", async () => {
    h = await startHarness();
    // No worker: the jobs stay queued, each with a 4 KiB input.
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const payload = "p".repeat(4096);
    const ids: string[] = [];
    for (let n = 0; n < 55; n++) {
      const reply = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { n, payload } } });
      ids.push((reply.body as { id: string }).id);
    }
    const first = ids[0] ?? "";
    // The default list holds the newest 50: the first job is not in it, but asked for, it is there.
    const newest = (await h.call("GET", `/v2/${ep.id}/jobs`)).body as { jobs: { id: string }[] };
    expect(newest.jobs).toHaveLength(50);
    expect(newest.jobs.map((j) => j.id)).not.toContain(first);
    const one = (await h.call("GET", `/v2/${ep.id}/jobs?job=${first}`)).body as {
      jobs: { id: string; status: string; input: unknown; stream: unknown[] }[];
    };
    expect(one.jobs).toHaveLength(1);
    expect(one.jobs[0]).toMatchObject({
      id: first,
      status: "IN_QUEUE",
      input: { n: 0, payload },
      stream: [],
    });
    // Not this endpoint's job, or no such job: none, not an error.
    const other = h.endpoint("runpodkit/echo", { workersMax: 0 });
    expect((await h.call("GET", `/v2/${other.id}/jobs?job=${first}`)).body).toEqual({ jobs: [] });
    expect((await h.call("GET", `/v2/${ep.id}/jobs?job=no-such-job`)).body).toEqual({ jobs: [] });
    expect((await h.call("GET", `/v2/${ep.id}/jobs?job=${first}`, { key: OTHER_KEY })).status).toBe(404);

    // A summary: the timelines, without inputs (here 50 x 4 KiB).
    const full = await h.call("GET", `/v2/${ep.id}/jobs?limit=50`);
    const summary = await h.call("GET", `/v2/${ep.id}/jobs?limit=50&summary=1`);
    const jobs = (summary.body as { jobs: Record<string, unknown>[] }).jobs;
    expect(jobs).toHaveLength(50);
    expect(jobs[0]).toEqual({
      id: ids.at(-1),
      status: "IN_QUEUE",
      createdAt: expect.any(Number),
      queuedAt: expect.any(Number),
      startedAt: null,
      completedAt: null,
      workerId: null,
      retries: 0,
      streamChunks: 0,
      streamAt: 0,
      // Queued on the manual clock: waited 0 ms so far, run 0 ms.
      delayTime: 0,
      executionTime: 0,
    });
    expect(full.text.length).toBeGreaterThan(50 * 4096);
    expect(summary.text.length).toBeLessThan(50 * 400);
    expect((await h.call("GET", `/v2/${ep.id}/jobs?summary=maybe`)).status).toBe(400);
    // A summary with the stream from a position: its chunks from there (none buffered here), no input.
    const from = await h.call("GET", `/v2/${ep.id}/jobs?job=${first}&summary=1&streamFrom=0`);
    expect((from.body as { jobs: Record<string, unknown>[] }).jobs[0]).toMatchObject({
      stream: [],
      streamAt: 0,
    });
    expect((from.body as { jobs: Record<string, unknown>[] }).jobs[0]).not.toHaveProperty("input");
    expect((await h.call("GET", `/v2/${ep.id}/jobs?summary=1&streamFrom=-1`)).status).toBe(400);

    // Pages by a cursor (the last job of the page before): 55 jobs are 50, then 5, then none.
    type Page = { jobs: { id: string }[] };
    const page1 = (await h.call("GET", `/v2/${ep.id}/jobs?summary=1`)).body as Page;
    const cursor = page1.jobs.at(-1)?.id ?? "";
    const page2 = (await h.call("GET", `/v2/${ep.id}/jobs?summary=1&before=${cursor}`)).body as Page;
    expect(page2.jobs.map((j) => j.id)).toEqual(ids.slice(0, 5).reverse());
    // New jobs do not move the cursor.
    await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { n: 55 } } });
    const again = (await h.call("GET", `/v2/${ep.id}/jobs?summary=1&before=${cursor}`)).body as Page;
    expect(again.jobs.map((j) => j.id)).toEqual(ids.slice(0, 5).reverse());
    const last = (await h.call("GET", `/v2/${ep.id}/jobs?before=${first}`)).body as Page;
    expect(last.jobs).toEqual([]);
    const unknown = await h.call("GET", `/v2/${ep.id}/jobs?before=no-such-job`);
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain("before: no job no-such-job of this endpoint is kept");
    // Another endpoint's job is no cursor here.
    expect((await h.call("GET", `/v2/${other.id}/jobs?before=${first}`)).status).toBe(400);
  });

  it("metrics: a point per change of queue depth, running jobs and workers, the last one now", async () => {
    h = await startHarness();
    const ep = h.endpoint("runpodkit/echo");
    const empty = (await h.call("GET", `/v2/${ep.id}/metrics`)).body as { points: object[] };
    expect(empty.points).toEqual([{ t: h.clock.now(), inQueue: 0, inProgress: 0, workers: 0 }]);
    const done = (await h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { n: 1 } } })).body;
    expect(done).toMatchObject({ status: "COMPLETED" });
    const { points } = (await h.call("GET", `/v2/${ep.id}/metrics`)).body as {
      points: { inQueue: number; inProgress: number; workers: number }[];
    };
    const states = points.map((p) => [p.inQueue, p.inProgress, p.workers]);
    // Queued (a worker starts for it), then running on it, then done with the worker idle.
    expect(states[0]?.[0]).toBe(1);
    expect(states).toContainEqual([0, 1, 1]);
    expect(states.at(-1)).toEqual([0, 0, 1]);
    // From a time on: the points recorded then and after, then now (the console's chart reads these).
    const metrics = async (since: number) =>
      ((await h.call("GET", `/v2/${ep.id}/metrics?since=${since}`)).body as { points: object[] }).points;
    expect(await metrics(0)).toEqual(points);
    expect(await metrics(h.clock.now() + 1)).toEqual(points.slice(-1));
    expect((await h.call("GET", `/v2/${ep.id}/metrics?since=soon`)).status).toBe(400);
    expect((await h.call("GET", `/v2/${ep.id}/metrics`, { key: OTHER_KEY })).status).toBe(404);
  });
});
