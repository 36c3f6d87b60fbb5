import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { restartableHarnesses } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

describe("restart recovery", () => {
  const { storeFile, start, stop } = restartableHarnesses();

  it("loses no queued job and no kept result; running jobs are requeued, counting as retried", async () => {
    const { data } = storeFile("runpodkit-restart-");
    const clock = new ManualClock();
    const first = await start(data, clock);
    const ep = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const worker = new ProtocolWorker(first, ep.id, "w-before");
    const submit = async (input: object) =>
      ((await first.call("POST", `/v2/${ep.id}/run`, { body: { input } })).body as { id: string }).id;
    const completed = await submit({ n: "completed" });
    const failed = await submit({ n: "failed" });
    const runningJob = await submit({ n: "running" });
    const queued = await submit({ n: "queued" });
    await worker.take();
    await worker.done(completed, { output: { kept: true } });
    await worker.take();
    await worker.done(failed, { error: "broke" });
    await worker.take();
    await stop(first);

    const second = await start(data, new ManualClock(clock.now()));
    const status = async (id: string) => (await second.call("GET", `/v2/${ep.id}/status/${id}`)).body;
    expect(await status(completed)).toMatchObject({ status: "COMPLETED", output: { kept: true } });
    expect(await status(failed)).toMatchObject({ status: "FAILED", error: "broke" });
    expect(await status(runningJob)).toEqual({ id: runningJob, status: "IN_QUEUE" });
    expect(await status(queued)).toEqual({ id: queued, status: "IN_QUEUE" });
    expect((await second.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({
      jobs: { completed: 1, failed: 1, inQueue: 2, inProgress: 0, retried: 1 },
    });
    // The interrupted job goes first, then the one that was waiting; inputs intact.
    const after = new ProtocolWorker(second, ep.id, "w-after");
    expect((await after.take()).body).toMatchObject({ id: runningJob, input: { n: "running" } });
    expect((await after.take(true)).body).toMatchObject({ id: queued, input: { n: "queued" } });
    // A kept failure can still be retried after the restart.
    expect((await second.call("POST", `/v2/${ep.id}/retry/${failed}`)).body).toEqual({
      id: failed,
      status: "IN_QUEUE",
    });
  });

  it("rows of two endpoints and several statuses interleaved: each endpoint's counts and queue come back", async () => {
    const { data } = storeFile("runpodkit-interleaved-");
    const clock = new ManualClock();
    const first = await start(data, clock);
    const a = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const b = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const submit = async (endpointId: string, input: object) =>
      ((await first.call("POST", `/v2/${endpointId}/run`, { body: { input } })).body as { id: string }).id;
    // Rows: a a a (to be COMPLETED, FAILED, running), then a b a b a b, then b b b.
    const ids: Record<string, string[]> = { [a.id]: [], [b.id]: [] };
    const order = [a, a, a, a, b, a, b, a, b, b, b, b];
    for (const [i, ep] of order.entries()) ids[ep.id]?.push(await submit(ep.id, { i }));
    const worker = new ProtocolWorker(first, a.id, "w-a");
    const aIds = ids[a.id] ?? [];
    await worker.take();
    await worker.done(aIds[0] as string, { output: 1 });
    await worker.take();
    await worker.done(aIds[1] as string, { error: "broke" });
    await worker.take();
    await stop(first);

    const second = await start(data, new ManualClock(clock.now()));
    const health = async (endpointId: string) => (await second.call("GET", `/v2/${endpointId}/health`)).body;
    expect(await health(a.id)).toMatchObject({
      jobs: { completed: 1, failed: 1, inQueue: 4, inProgress: 0, retried: 1 },
    });
    expect(await health(b.id)).toMatchObject({
      jobs: { completed: 0, failed: 0, inQueue: 6, inProgress: 0, retried: 0 },
    });
    // Queue order: a's interrupted job first, then its waiting ones; b's all in submit order.
    const takeAll = async (endpointId: string, n: number) => {
      const w = new ProtocolWorker(second, endpointId, `w-after-${endpointId}`);
      const taken: string[] = [];
      for (let i = 0; i < n; i++) taken.push(((await w.take(i > 0)).body as { id: string }).id);
      return taken;
    };
    expect(await takeAll(a.id, 4)).toEqual(aIds.slice(2));
    expect(await takeAll(b.id, 6)).toEqual(ids[b.id]);
  });

  it("a job /run accepted is already on disk when the reply arrives (no graceful stop needed)", async () => {
    const { data } = storeFile("runpodkit-durable-");
    const h = await start(data, new ManualClock());
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(
        ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { i } } })).body as { id: string }).id,
      );
    }
    const reader = new DatabaseSync(data, { readOnly: true });
    const rows = reader.prepare("SELECT id, status, input FROM jobs ORDER BY created_at").all() as {
      id: string;
      status: string;
      input: string;
    }[];
    reader.close();
    expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(rows.every((r) => r.status === "IN_QUEUE")).toBe(true);
  });

  it("a job retried too often while its worker kept dying ends FAILED at restart", async () => {
    const { data } = storeFile("runpodkit-maxretry-");
    const clock = new ManualClock();
    let h = await start(data, clock);
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } })).body as { id: string })
      .id;
    for (let round = 0; round <= h.plane.config.maxRetries; round++) {
      await new ProtocolWorker(h, ep.id, `w-${round}`).take();
      await stop(h);
      h = await start(data, new ManualClock(clock.now()));
    }
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
      status: "FAILED",
      error: "the service stopped while the job was running",
    });
  });
});
