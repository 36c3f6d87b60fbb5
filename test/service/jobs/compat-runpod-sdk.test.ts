import runpodSdk from "runpod-sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SystemClock } from "../../../service/clock";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { eventually, type Harness, KEY, startHarness } from "./harness";

/** The real service's official JS client (node_modules/runpod-sdk), unchanged, against this service. */
describe("compatibility: runpod-sdk", () => {
  let h: Harness;
  let echo: EndpointRecord;
  let stream: EndpointRecord;
  let sleep: EndpointRecord;
  let client: ReturnType<typeof runpodSdk>;

  beforeAll(async () => {
    h = await startHarness({ clock: new SystemClock() });
    echo = h.endpoint("runpodkit/echo");
    stream = h.endpoint("runpodkit/stream");
    sleep = h.endpoint("runpodkit/sleep", { workersMax: 1 });
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
});
