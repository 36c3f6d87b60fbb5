import runpodSdk, { health, purgeQueue, run, status, stream as streamOf } from "runpod-sdk";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SystemClock } from "../../../service/clock";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { eventually, type Harness, KEY, startHarness } from "./harness";

/** The real service's official JS client (node_modules/runpod-sdk), unchanged, against this service. */
describe("compatibility: runpod-sdk", () => {
  let h: Harness;
  let echo: EndpointRecord;
  let stream: EndpointRecord;
  let sleep: EndpointRecord;
  let fail: EndpointRecord;
  let client: ReturnType<typeof runpodSdk>;

  beforeAll(async () => {
    h = await startHarness({ clock: new SystemClock() });
    echo = h.endpoint("runpodkit/echo");
    stream = h.endpoint("runpodkit/stream");
    sleep = h.endpoint("runpodkit/sleep", { workersMax: 1 });
    fail = h.endpoint("runpodkit/fail");
    client = runpodSdk(KEY, { baseUrl: `${h.url}/v2` });
  });
  afterAll(async () => h.close());

  const endpointOf = (id: string) => {
    const endpoint = client.endpoint(id);
    if (!endpoint) throw new Error("runpod-sdk gave no endpoint");
    return endpoint;
  };

  it("run then status", async () => {
    const endpoint = endpointOf(echo.id);
    const accepted = await endpoint.run({ input: { a: 1 } });
    expect(accepted).toEqual({ id: expect.stringMatching(/-u1$/), status: "IN_QUEUE" });
    const id = (accepted as { id: string }).id;
    const done = await endpoint.statusSync(id, 30_000);
    expect(done).toMatchObject({
      id,
      status: "COMPLETED",
      output: { a: 1 },
      completed: true,
      succeeded: true,
    });
    const status = await endpoint.status(id);
    expect(status).toMatchObject({ id, status: "COMPLETED", output: { a: 1 }, started: true });
  });

  it("runSync (runsync, then /status-sync polling)", async () => {
    const result = await endpointOf(echo.id).runSync({ input: { sync: true } }, 30_000);
    expect(result).toMatchObject({ status: "COMPLETED", output: { sync: true }, succeeded: true });
    expect((result as { id: string }).id).toMatch(/^sync-/);
  });

  it("stream yields every chunk and ends on completion", async () => {
    const endpoint = endpointOf(stream.id);
    const { id } = (await endpoint.run({ input: { text: "alpha beta gamma" } })) as { id: string };
    const chunks: unknown[] = [];
    for await (const chunk of endpoint.stream(id)) chunks.push(chunk);
    expect(chunks).toEqual([
      { output: { text: "alpha", index: 0 } },
      { output: { text: "beta", index: 1 } },
      { output: { text: "gamma", index: 2 } },
    ]);
  });

  it("cancel, health and purgeQueue", async () => {
    const endpoint = endpointOf(sleep.id);
    const { id: running } = (await endpoint.run({ input: { seconds: 600 } })) as { id: string };
    await eventually(async () =>
      ((await endpoint.status(running)) as { status: string }).status === "IN_PROGRESS" ? true : undefined,
    );
    const { id: queued } = (await endpoint.run({ input: { seconds: 600 } })) as { id: string };
    const { id: purged } = (await endpoint.run({ input: { seconds: 600 } })) as { id: string };
    const cancelled = await endpoint.cancel(queued);
    expect(cancelled).toMatchObject({ id: queued, status: "CANCELLED" });
    const health = await endpoint.health();
    expect(health).toMatchObject({
      jobs: { completed: 0, failed: 0, inQueue: 1, inProgress: 1, retried: 0 },
      workers: { idle: 0, running: 1, initializing: 0 },
    });
    expect(await endpoint.purgeQueue()).toEqual({ removed: 1, status: "completed" });
    await expect(endpoint.status(purged)).rejects.toThrow(/404/);
    await endpoint.cancel(running);
    expect(await endpoint.status(running)).toMatchObject({ status: "CANCELLED" });
  });
  it("runSync past its wait keeps the job id (IN_QUEUE, completed: false); statusSync then finishes it", async () => {
    // runSync prints each poll (console.log); keep the test output quiet.
    const print = vi.spyOn(console, "log").mockImplementation(() => undefined);
    try {
      const parked = h.endpoint("runpodkit/echo", { workersMax: 0 });
      const endpoint = endpointOf(parked.id);
      const waited = (await endpoint.runSync({ input: { later: true } }, 1_000)) as unknown as {
        id: string;
        status: string;
        completed: boolean;
      };
      expect(waited).toMatchObject({ status: "IN_QUEUE", started: true, completed: false });
      expect(waited.id).toMatch(/^sync-.*-u1$/);
      h.management.endpoints.update(parked.accountId, parked.id, { workersMax: 1 });
      const done = await endpoint.statusSync(waited.id, 30_000);
      expect(done).toMatchObject({
        id: waited.id,
        status: "COMPLETED",
        output: { later: true },
        completed: true,
        succeeded: true,
      });
    } finally {
      print.mockRestore();
    }
  });

  it("runSync of a failing handler: FAILED with its error, succeeded: false", async () => {
    const result = await endpointOf(fail.id).runSync({ input: { message: "boom" } }, 30_000);
    expect(result).toMatchObject({ status: "FAILED", completed: true, succeeded: false });
    const error = JSON.parse((result as unknown as { error: string }).error) as Record<string, unknown>;
    expect(error).toMatchObject({ error_type: "<class 'Error'>", error_message: "boom" });
    expect(result).not.toHaveProperty("output");
  });

  it("stream ends on a handler failing mid-stream, after the chunks sent before it; status says FAILED", async () => {
    const endpoint = endpointOf(stream.id);
    const { id } = (await endpoint.run({ input: { text: "one two three four", failAt: 2 } })) as {
      id: string;
    };
    const chunks: unknown[] = [];
    for await (const chunk of endpoint.stream(id)) chunks.push(chunk);
    expect(chunks).toEqual([{ output: { text: "one", index: 0 } }, { output: { text: "two", index: 1 } }]);
    const failed = (await endpoint.status(id)) as unknown as { status: string; error: string };
    expect(failed.status).toBe("FAILED");
    expect(failed.error).toMatch(/^handler: stream failed at chunk 2 \ntraceback: /);
  });

  it("stream ends when the job is cancelled", async () => {
    const endpoint = endpointOf(stream.id);
    const { id } = (await endpoint.run({ input: { count: 1_000, delayMs: 50 } })) as { id: string };
    const chunks: unknown[] = [];
    for await (const chunk of endpoint.stream(id)) {
      chunks.push(chunk);
      if (chunks.length === 2) expect(await endpoint.cancel(id)).toMatchObject({ id, status: "CANCELLED" });
    }
    expect(chunks.length).toBeGreaterThanOrEqual(2);
    expect(chunks.length).toBeLessThan(1_000);
    expect(chunks.slice(0, 2)).toEqual([
      { output: { text: "token-0", index: 0 } },
      { output: { text: "token-1", index: 1 } },
    ]);
    expect(await endpoint.status(id)).toMatchObject({ status: "CANCELLED" });
  });

  it("the curried functions (run, status, stream, health, purgeQueue) call the same routes", async () => {
    const base = `${h.url}/v2`;
    const accepted = (await run(base, KEY, echo.id, { input: { curried: 1 } })) as {
      id: string;
      status: string;
    };
    expect(accepted.status).toBe("IN_QUEUE");
    const done = await eventually(async () => {
      const now = (await status(base)(KEY)(echo.id)(accepted.id)) as { status: string };
      return now.status === "COMPLETED" ? now : undefined;
    });
    expect(done).toMatchObject({ id: accepted.id, output: { curried: 1 }, completed: true, succeeded: true });
    const { id } = (await run(base, KEY, stream.id, { input: { text: "x y" } })) as { id: string };
    const chunks: unknown[] = [];
    for await (const chunk of streamOf(base, KEY, stream.id, id)) chunks.push(chunk);
    expect(chunks).toEqual([{ output: { text: "x", index: 0 } }, { output: { text: "y", index: 1 } }]);
    expect(await health(base, KEY, echo.id)).toMatchObject({ jobs: { inQueue: 0, inProgress: 0 } });
    expect(await purgeQueue(base, KEY, echo.id)).toEqual({ removed: 0, status: "completed" });
  });

  it("a wrong key rejects with 401, an unknown endpoint or job with 404 (xior throws on both)", async () => {
    const wrong = runpodSdk("not-a-key", { baseUrl: `${h.url}/v2` }).endpoint(echo.id);
    await expect(wrong?.health()).rejects.toMatchObject({ response: { status: 401 } });
    await expect(endpointOf("nosuchendpoint").run({ input: {} })).rejects.toMatchObject({
      response: { status: 404, data: { message: "endpoint nosuchendpoint not found" } },
    });
    await expect(endpointOf(echo.id).status("nosuchjob")).rejects.toMatchObject({
      response: {
        status: 404,
        data: { message: expect.stringContaining(`job nosuchjob not found on endpoint ${echo.id}`) },
      },
    });
  });
});
