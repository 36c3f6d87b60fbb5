import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ManualClock } from "../../../service/clock";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { ACCOUNT, eventually, type Harness, type HarnessOptions, startHarness } from "../jobs/harness";

type Envelope = { id: string; status: string; output?: unknown; error?: string; workerId?: string };

/** Real worker processes running the worker runtime and the built-in handlers. */
describe("worker runtime and built-in handlers", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  const start = async (options: HarnessOptions = {}) => {
    h = await startHarness(options);
    return h;
  };
  const runsync = async (ep: EndpointRecord, input: object, extra: object = {}) =>
    (await h.call("POST", `/v2/${ep.id}/runsync`, { body: { input, ...extra } })).body as Envelope;
  const run = async (ep: EndpointRecord, input: object, extra: object = {}) =>
    ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input, ...extra } })).body as Envelope).id;
  const status = async (ep: EndpointRecord, id: string) =>
    (await h.call("GET", `/v2/${ep.id}/status/${id}`)).body as Envelope;
  const statusSync = async (ep: EndpointRecord, id: string) =>
    (await h.call("GET", `/v2/${ep.id}/status-sync/${id}?wait=90000`)).body as Envelope;
  const until = (ep: EndpointRecord, id: string, wanted: string) =>
    eventually(async () => {
      const s = await status(ep, id);
      return s.status === wanted ? s : undefined;
    });
  const livePods = (ep: EndpointRecord) =>
    h.plane.workers.list(ACCOUNT, ep.id).filter((p) => p.desiredStatus === "RUNNING");

  it("echo: the output is the input, on a worker shown among the endpoint's pods", async () => {
    await start();
    const ep = h.endpoint("runpodkit/echo");
    const reply = await runsync(ep, { hello: "world", n: [1, 2] });
    expect(reply).toMatchObject({ status: "COMPLETED", output: { hello: "world", n: [1, 2] } });
    const pods = livePods(ep);
    expect(pods.map((p) => p.id)).toEqual([reply.workerId]);
    expect(pods[0]).toMatchObject({
      imageName: "runpodkit/echo",
      templateId: ep.templateId,
      endpointId: ep.id,
    });
  });

  it("fail: a thrown error ends FAILED with the exception payload as a JSON string", async () => {
    await start();
    const ep = h.endpoint("runpodkit/fail");
    const thrown = await runsync(ep, { message: "bad input" });
    expect(thrown.status).toBe("FAILED");
    expect(JSON.parse(thrown.error ?? "")).toMatchObject({
      error_type: "<class 'Error'>",
      error_message: "bad input",
      worker_id: thrown.workerId,
    });
    const returned = await runsync(ep, { message: "as a result", as: "result" });
    expect(returned).toMatchObject({ status: "FAILED", error: "as a result" });
  });

  it("stream: /stream drains the chunks of a generator handler in order until COMPLETED", async () => {
    await start();
    const ep = h.endpoint("runpodkit/stream");
    const id = await run(ep, { text: "one two three four", delayMs: 20 });
    const seen: unknown[] = [];
    let last = "";
    while (!["COMPLETED", "FAILED"].includes(last)) {
      const reply = (await h.call("GET", `/v2/${ep.id}/stream/${id}`)).body as {
        status: string;
        stream: { output: unknown }[];
      };
      seen.push(...reply.stream.map((c) => c.output));
      last = reply.status;
    }
    expect(last).toBe("COMPLETED");
    expect(seen).toEqual(["one", "two", "three", "four"].map((text, index) => ({ text, index })));
    expect((await status(ep, id)).output).toEqual([]);
  });

  it("a failing stream ends FAILED, visible on /stream", async () => {
    await start();
    const ep = h.endpoint("runpodkit/stream");
    const id = await run(ep, { count: 3, failAt: 2 });
    const final = await statusSync(ep, id);
    expect(final.status).toBe("FAILED");
    expect(final.error).toContain("stream failed at chunk 2");
    const drained = (await h.call("GET", `/v2/${ep.id}/stream/${id}`)).body;
    expect(drained).toMatchObject({
      status: "FAILED",
      stream: [{ output: { index: 0 } }, { output: { index: 1 } }],
    });
  });

  it("progress: the latest progress value is the output while the job runs", async () => {
    await start();
    const ep = h.endpoint("runpodkit/misbehave");
    const id = await run(ep, { mode: "progress", steps: 2, holdMs: 60_000 });
    const seen = await eventually(async () => {
      const s = await status(ep, id);
      return s.status === "IN_PROGRESS" && (s.output as { step?: number } | undefined)?.step === 2
        ? s
        : undefined;
    });
    expect(seen.output).toEqual({ step: 2 });
    await h.call("POST", `/v2/${ep.id}/cancel/${id}`);
  });

  it("cancel of a running job stops its handler; the same worker goes on with the next job", async () => {
    await start();
    const ep = h.endpoint("runpodkit/sleep");
    const id = await run(ep, { seconds: 600 });
    const running = await until(ep, id, "IN_PROGRESS");
    expect((await h.call("POST", `/v2/${ep.id}/cancel/${id}`)).body).toEqual({ id, status: "CANCELLED" });
    const next = await runsync(ep, { ms: 1 });
    expect(next).toMatchObject({ status: "COMPLETED", output: { slept: 1 }, workerId: running.workerId });
    expect((await status(ep, id)).status).toBe("CANCELLED");
  });

  it("a handler that hangs: the execution timeout ends it TIMED_OUT and the worker is freed", async () => {
    await start();
    const ep = h.endpoint("runpodkit/misbehave");
    const id = await run(ep, { mode: "hang" }, { policy: { executionTimeout: 5_000 } });
    const running = await until(ep, id, "IN_PROGRESS");
    await (h.clock as ManualClock).advance(5_000);
    expect((await status(ep, id)).status).toBe("TIMED_OUT");
    const next = await runsync(ep, { mode: "echo" });
    expect(next).toMatchObject({ status: "COMPLETED", workerId: running.workerId });
  });

  it("a handler that loops on the CPU: after the stop grace its worker is killed and replaced", async () => {
    await start();
    const ep = h.endpoint("runpodkit/misbehave");
    const id = await run(ep, { mode: "spin" });
    const running = await until(ep, id, "IN_PROGRESS");
    await h.call("POST", `/v2/${ep.id}/cancel/${id}`);
    // The stop grace's timer is set once the cancel reaches the worker's session, which on a busy
    // machine can come after a single advance: the clock moves on until the worker is gone.
    await eventually(async () => {
      if (!livePods(ep).some((p) => p.id === running.workerId)) return true;
      await (h.clock as ManualClock).advance(h.plane.config.stopGraceMs);
      return undefined;
    });
    expect(h.plane.workers.list(ACCOUNT, ep.id).find((p) => p.id === running.workerId)?.desiredStatus).toBe(
      "TERMINATED",
    );
    const next = await runsync(ep, { mode: "fine" });
    expect(next.status).toBe("COMPLETED");
    expect(next.workerId).not.toBe(running.workerId);
    expect((await status(ep, id)).status).toBe("CANCELLED");
  });

  it("a handler that kills its process: the job is requeued on a fresh worker, then FAILED after 3 retries", async () => {
    await start();
    const ep = h.endpoint("runpodkit/misbehave");
    const id = await run(ep, { mode: "crash" });
    const final = await statusSync(ep, id);
    // The error names how the last worker's process ended (process.exit(13)), not only "was lost".
    expect(final).toMatchObject({
      status: "FAILED",
      error: `worker ${final.workerId} was lost while running the job: its process exited (code 13)`,
    });
    expect((await h.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({
      jobs: { failed: 1, retried: 3 },
    });
    const dead = h.plane.workers.list(ACCOUNT, ep.id).filter((p) => p.desiredStatus === "TERMINATED");
    expect(dead.length).toBeGreaterThanOrEqual(4);
    expect(h.logs.some((line) => line.includes("exited unexpectedly"))).toBe(true);
    // The service, and the endpoint, still work.
    expect((await runsync(ep, { mode: "ok" })).status).toBe("COMPLETED");
  });

  it("refresh_worker (stopPod): the worker is replaced after its job", async () => {
    await start({ config: { handlers: { "acme/refresh": resolve("examples/handlers/refresh.ts") } } });
    const ep = h.endpoint("acme/refresh:1.0");
    const first = await runsync(ep, {});
    expect(first.status).toBe("COMPLETED");
    await eventually(() => (livePods(ep).some((p) => p.id === first.workerId) ? undefined : true));
    const second = await runsync(ep, {});
    expect(second.workerId).not.toBe(first.workerId);
    expect((second.output as { pid: number }).pid).not.toBe((first.output as { pid: number }).pid);
  });

  it("handlers config: a user module by image name (tag ignored), a self-starting module, a command line", async () => {
    const runtimeMain = resolve("service/jobs/workers/runtime/main.ts");
    const loader = `file://${resolve("node_modules/tsx/dist/loader.mjs")}`;
    await start({
      config: {
        handlers: {
          "acme/uppercase": "examples/handlers/uppercase.ts",
          "acme/self-start": resolve("examples/handlers/self-start.ts"),
          "acme/cmd": `cmd:"${process.execPath}" --import ${loader} "${runtimeMain}" "${resolve("examples/handlers/uppercase.ts")}"`,
        },
      },
    });
    const upper = h.endpoint("acme/uppercase:2.3");
    expect(await runsync(upper, { text: "shout" })).toMatchObject({
      status: "COMPLETED",
      output: { text: "SHOUT" },
    });
    const self = h.endpoint("acme/self-start");
    expect(await runsync(self, { text: "a b" })).toMatchObject({
      status: "COMPLETED",
      output: [{ word: "a" }, { word: "b" }],
    });
    const cmd = h.endpoint("acme/cmd");
    expect(await runsync(cmd, { text: "cmd" })).toMatchObject({
      status: "COMPLETED",
      output: { text: "CMD" },
    });
  });

  it("the runtime's lines and a handler's own output keep their order in the job's logs", async () => {
    await start({
      config: { handlers: { "acme/chatty": resolve("test/service/workers/fixtures/chatty.ts") } },
    });
    const ep = h.endpoint("acme/chatty");
    const messagesOf = async (id: string) =>
      (await h.call("GET", `/v2/${ep.id}/logs?job=${id}`)).text
        .split("\n")
        .filter((line) => line.trim())
        .map((line) => (JSON.parse(line) as { message: string }).message);
    for (const say of ["one", "two"]) {
      const reply = await runsync(ep, { say });
      expect(reply).toMatchObject({ status: "COMPLETED", output: { said: say } });
      // The runtime's lines of a turn go out together at its end; the handler's line must not
      // overtake "Started.", and "Finished." must arrive although nothing else is printed after it.
      const messages = await eventually(async () => {
        const list = await messagesOf(reply.id);
        return list.includes("Finished.") ? list : undefined;
      });
      expect(messages).toEqual(["Started.", `handler says ${say}`, "Finished."]);
    }
  });

  it("an image nobody configured runs the echo handler, with a warning", async () => {
    await start();
    const ep = h.endpoint("someone/unknown-image:latest");
    expect(await runsync(ep, { x: 1 })).toMatchObject({ status: "COMPLETED", output: { x: 1 } });
    expect(
      h.logs.some(
        (line) => line.includes('"someone/unknown-image:latest"') && line.includes("runpodkit/echo"),
      ),
    ).toBe(true);
  });

  it("a worker being stopped that ignores SIGTERM is not reported idle by /health, and still counts against workersMax until it is killed", async () => {
    await start({
      config: { handlers: { "acme/stubborn": resolve("test/service/workers/fixtures/stubborn.ts") } },
    });
    const clock = h.clock as ManualClock;
    const ep = h.endpoint("acme/stubborn", { workersMin: 1, workersMax: 1, idleTimeout: 1 });
    type Health = { workers: Record<string, number> };
    const health = async () => ((await h.call("GET", `/v2/${ep.id}/health`)).body as Health).workers;
    await eventually(async () => ((await health()).idle === 1 ? true : undefined));
    const [stubborn] = h.plane.pool.workersOf(ep.id);
    // Scaled to zero: it is drained and sent SIGTERM, which it ignores (the kill timer runs on the
    // manual clock, so it stays until the clock moves).
    h.management.endpoints.update(ACCOUNT, ep.id, { workersMin: 0 });
    await clock.advance(1_000 + h.plane.config.scalerIntervalMs);
    await eventually(() => (stubborn?.session.draining ? true : undefined));
    expect(stubborn?.process?.exitCode).toBeNull();
    expect(await health()).toEqual({
      idle: 0,
      running: 0,
      initializing: 0,
      ready: 0,
      throttled: 0,
      unhealthy: 0,
    });
    // A job is not handed to it, and no second process starts beside it: workersMax is 1.
    const id = await run(ep, { n: 1 });
    for (let i = 0; i < 3; i++) {
      await clock.advance(h.plane.config.scalerIntervalMs);
      expect(h.plane.pool.workersOf(ep.id).map((w) => w.session.id)).toEqual([stubborn?.session.id]);
    }
    expect((await status(ep, id)).status).toBe("IN_QUEUE");
    // Its kill grace over, it is killed, and a new worker runs the job.
    await clock.advance(h.plane.config.killGraceMs);
    const done = await until(ep, id, "COMPLETED");
    expect(done).toMatchObject({ output: { n: 1 } });
    expect(done.workerId).not.toBe(stubborn?.session.id);
    expect(stubborn?.process?.signalCode).toBe("SIGKILL");
    expect(h.plane.pool.workersOf(ep.id)).toHaveLength(1);
  });

  it("an endpoint update replaces a worker that ignores SIGTERM without running workersMax + 1 processes", async () => {
    await start({
      config: { handlers: { "acme/stubborn": resolve("test/service/workers/fixtures/stubborn.ts") } },
    });
    const clock = h.clock as ManualClock;
    const ep = h.endpoint("acme/stubborn", { workersMin: 1, workersMax: 1 });
    await eventually(() => (h.plane.pool.workersOf(ep.id)[0]?.session.readyAt ? true : undefined));
    const [old] = h.plane.pool.workersOf(ep.id);
    // A new version: the old worker is replaced (SIGTERM, ignored).
    h.management.endpoints.update(ACCOUNT, ep.id, { env: { RELEASE: "2" } });
    await eventually(() => (old?.stopping ? true : undefined));
    for (let i = 0; i < 3; i++) {
      await clock.advance(h.plane.config.scalerIntervalMs);
      expect(h.plane.pool.workersOf(ep.id)).toHaveLength(1);
    }
    await clock.advance(h.plane.config.killGraceMs);
    // Killed; its replacement starts (scale-up is held only while the old process lives).
    const replacement = await eventually(() => {
      const [w] = h.plane.pool.workersOf(ep.id);
      return w && w !== old && w.session.readyAt !== null ? w : undefined;
    });
    expect(old?.process?.signalCode).toBe("SIGKILL");
    expect(replacement.endpoint.version).not.toBe(old?.endpoint.version);
    expect(h.plane.pool.workersOf(ep.id)).toHaveLength(1);
  });

  it("workersMin workers are always up; a worker that dies is replaced", async () => {
    await start();
    const ep = h.endpoint("runpodkit/echo", { workersMin: 2, workersMax: 3 });
    await eventually(async () => {
      const health = (await h.call("GET", `/v2/${ep.id}/health`)).body as { workers: { idle: number } };
      return health.workers.idle === 2 ? true : undefined;
    });
    const [victim] = h.plane.pool.workersOf(ep.id);
    victim?.process?.kill("SIGKILL");
    await eventually(() => {
      const pods = livePods(ep);
      return pods.length === 2 && !pods.some((p) => p.id === victim?.session.id) ? true : undefined;
    });
    expect(h.plane.workers.list(ACCOUNT, ep.id).find((p) => p.id === victim?.session.id)?.desiredStatus).toBe(
      "TERMINATED",
    );
  });
});
