import { Readable } from "node:stream";
import { request } from "undici";
import { describe, expect, it, vi } from "vitest";
import { eventually, type Harness, KEY } from "./harness";
import { ProtocolWorker } from "./protocol-worker";
import { budgetFixture } from "./stalled-body";

/**
 * A job-stream body holds its size against the memory budget from before it is read, as a job-done
 * body does (done-budget.test.ts): past the budget it is refused unread with 503 and Retry-After. The
 * chunks it carried take the hold over once kept (counted once, by their JSON size), and the hold is
 * released on every other end. The worker runtime retries a refused chunk as Retry-After says.
 */
describe("job-stream and the memory budget", () => {
  const { start, run, heldSettles, stall } = budgetFixture("job-stream");
  /** The chunks /stream drains now (call it only when some are buffered or the job has ended). */
  const drain = async (h: Harness, endpointId: string, jobId: string) => {
    const reply = await h.call("GET", `/v2/${endpointId}/stream/${jobId}`);
    expect(reply.status).toBe(200);
    return reply.body as { status: string; stream: { output: unknown }[] };
  };
  const sizeOf = (output: unknown) => JSON.stringify(output).length;

  it("refuses a job-stream past the budget unread (503, Retry-After, naming it); after the release the same chunk is kept", async () => {
    const h = await start({ memoryBudgetBytes: 2_000 });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const input = { n: 1 };
    const inputBytes = sizeOf(input);
    const id = await run(h, ep.id, input);
    const worker = new ProtocolWorker(h, ep.id, "w-stream-budget");
    await worker.take();

    // Another chunk of the job is being read: its size is held before any of it has arrived.
    const stalled = stall(h, ep.id, worker.id, id, 1_500);
    await heldSettles(h, inputBytes + 1_500);
    const chunk = { text: "x".repeat(600) };
    const over = await worker.streamChunk(id, chunk);
    expect(over.status).toBe(503);
    expect(over.headers["retry-after"]).toBe("1");
    expect(over.body).toMatchObject({ code: "UNAVAILABLE" });
    expect((over.body as { error: string }).error).toContain("memory budget for jobs (2000 bytes)");
    // Nothing of the refused body was kept or counted.
    expect(h.plane.memory.used).toBe(inputBytes + 1_500);
    expect(h.plane.book.find(id)?.stream ?? null).toBeNull();

    // The stalled post goes away: its hold is released, and the same chunk is kept, then one more.
    stalled.destroy();
    await heldSettles(h, inputBytes);
    expect((await worker.streamChunk(id, chunk)).status).toBe(200);
    expect((await worker.streamChunk(id, { text: "y" })).status).toBe(200);
    // The kept chunks count once, by their JSON size: their bodies' holds were taken over.
    await heldSettles(h, inputBytes + sizeOf(chunk) + sizeOf({ text: "y" }));
    expect((await worker.done(id, { output: [] }, true)).status).toBe(200);
    const drained = await drain(h, ep.id, id);
    expect(drained).toEqual({ status: "COMPLETED", stream: [{ output: chunk }, { output: { text: "y" } }] });
    await heldSettles(h, 0);
  });

  it("a kept chunk takes its body's hold over: a body that fits is never refused for the hold and its chunk together", async () => {
    const h = await start({ memoryBudgetBytes: 2_000, workerBodyLimit: 1_950 });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = await run(h, ep.id, { n: 1 });
    const base = h.plane.memory.used;
    const worker = new ProtocolWorker(h, ep.id, "w-stream-handover");
    await worker.take();
    // Body (1,813 bytes) and chunk (1,802) together are past the budget; each alone fits.
    const chunk = "k".repeat(1_800);
    const body = JSON.stringify({ output: chunk });
    expect(base + body.length).toBeLessThanOrEqual(2_000);
    expect(base + body.length + sizeOf(chunk)).toBeGreaterThan(2_000);
    expect((await worker.streamChunk(id, chunk)).status).toBe(200);
    expect(h.plane.memory.used).toBe(base + sizeOf(chunk));
    // The reply's close frees nothing more: the hold was handed over, not released on top.
    expect((await worker.ping([id])).status).toBe(200);
    expect(h.plane.memory.used).toBe(base + sizeOf(chunk));
    expect((await drain(h, ep.id, id)).stream).toEqual([{ output: chunk }]);
    expect(h.plane.memory.used).toBe(base);
  });

  it("releases the hold on every other end: not JSON, refused by the schema, aborted, too large, unknown job, finished job", async () => {
    const h = await start({ memoryBudgetBytes: 2_000, workerBodyLimit: 1_950 });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = await run(h, ep.id, { n: 1 });
    const base = h.plane.memory.used;
    expect(base).toBe(sizeOf({ n: 1 }));
    const worker = new ProtocolWorker(h, ep.id, "w-stream-release");
    await worker.take();
    const streamUrl = `${h.url}/v2/${ep.id}/job-stream/${worker.id}/${id}?gpu=LOCAL&isStream=false`;
    const post = (body: string) =>
      request(streamUrl, {
        method: "POST",
        headers: { authorization: KEY, "content-type": "application/x-www-form-urlencoded" },
        body,
      });

    const notJson = await post(`{${"z".repeat(1_500)}`);
    await notJson.body.dump();
    expect(notJson.statusCode).toBe(400);
    await heldSettles(h, base);
    // JobStreamBody is an object: an array is refused by the schema.
    const badShape = await post(JSON.stringify(["p".repeat(1_500)]));
    expect(badShape.statusCode).toBe(400);
    expect(((await badShape.body.json()) as { code: string }).code).toBe("VALIDATION");
    await heldSettles(h, base);

    const aborted = stall(h, ep.id, worker.id, id, 1_500);
    await heldSettles(h, base + 1_500);
    aborted.destroy();
    await heldSettles(h, base);

    // A chunked body (no content-length) holds the route's bodyLimit; past it Fastify answers 413.
    const tooLarge = await request(streamUrl, {
      method: "POST",
      headers: { authorization: KEY, "content-type": "application/json" },
      body: Readable.from(['{"output": "', "c".repeat(2_500), '"}']),
    });
    await tooLarge.body.dump();
    expect(tooLarge.statusCode).toBe(413);
    await heldSettles(h, base);
    // A content-length past bodyLimit holds nothing: 413, not 503.
    const declaredTooLarge = await worker.streamChunk(id, "d".repeat(2_500));
    expect(declaredTooLarge.status).toBe(413);
    expect(h.plane.memory.used).toBe(base);

    const unknown = await worker.streamChunk("no-such-job", "u".repeat(1_500));
    expect(unknown.status).toBe(404);
    await heldSettles(h, base);

    // Nothing leaked: the largest chunk the budget allows next to the input is kept.
    const largest = "l".repeat(1_900);
    expect((await worker.streamChunk(id, largest)).status).toBe(200);
    await heldSettles(h, base + sizeOf(largest));
    expect((await worker.done(id, { output: [] }, true)).status).toBe(200);
    // The input is released with the job; the undrained chunk stays counted until drained.
    await heldSettles(h, sizeOf(largest));

    // A chunk for a job no longer running is answered 200 and dropped: its hold is released.
    const late = await worker.streamChunk(id, "f".repeat(10));
    expect(late.status).toBe(200);
    await heldSettles(h, sizeOf(largest));
    expect(await drain(h, ep.id, id)).toEqual({ status: "COMPLETED", stream: [{ output: largest }] });
    await heldSettles(h, 0);
  });

  it("the worker runtime retries a refused chunk (Retry-After), past the real library's 3 attempts, and delivers the whole stream", async () => {
    const h = await start({ memoryBudgetBytes: 2_000 });
    const ep = h.endpoint("runpodkit/stream", { workersMin: 1, workersMax: 1 });
    const session = await eventually(() => h.plane.dispatcher.sessions(ep.id)[0]);
    const reserve = vi.spyOn(h.plane.memory, "reserve");
    // Another job-stream holds most of the budget: room for the job's input, not for a chunk too.
    const stalled = stall(h, ep.id, session.id, "job-elsewhere", 1_400);
    await heldSettles(h, 1_400);
    const words = ["a", "b", "c"].map((letter) => letter.repeat(150));
    const input = { text: words.join(" ") };
    expect(1_400 + sizeOf(input)).toBeLessThanOrEqual(2_000);
    expect(1_400 + sizeOf(input) + sizeOf({ output: { text: words[0], index: 0 } })).toBeGreaterThan(2_000);
    const id = await run(h, ep.id, input);
    // Refused more often than the real library's 3 attempts: a 503 is retried as long as it lasts.
    const refusals = () => reserve.mock.results.filter((r) => r.type === "throw").length;
    await eventually(() => (refusals() >= 4 ? true : undefined));
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({ status: "IN_PROGRESS" });
    expect(h.plane.book.find(id)?.stream ?? null).toBeNull();

    stalled.destroy();
    await eventually(async () => {
      const reply = await h.call("GET", `/v2/${ep.id}/status/${id}`);
      return (reply.body as { status: string }).status === "COMPLETED" ? true : undefined;
    });
    // Every chunk arrived, once each and in order (kept until drained).
    const drained = await drain(h, ep.id, id);
    expect(drained).toEqual({
      status: "COMPLETED",
      stream: words.map((text, index) => ({ output: { text, index } })),
    });
    await heldSettles(h, 0);
    reserve.mockRestore();
  });

  it("the worker runtime drops a chunk the service will not take (here 413), says so in the job's log, and streams on", async () => {
    const h = await start({ workerBodyLimit: 1_000 });
    const ep = h.endpoint("runpodkit/stream", { workersMin: 1, workersMax: 1 });
    const words = ["first", "w".repeat(1_500), "last"];
    const id = await run(h, ep.id, { text: words.join(" ") });
    await eventually(async () => {
      const reply = await h.call("GET", `/v2/${ep.id}/status/${id}`);
      return (reply.body as { status: string }).status === "COMPLETED" ? true : undefined;
    });
    expect((await drain(h, ep.id, id)).stream).toEqual([
      { output: { text: "first", index: 0 } },
      { output: { text: "last", index: 2 } },
    ]);
    const messages = await eventually(async () => {
      const text = (await h.call("GET", `/v2/${ep.id}/logs?job=${id}`)).text;
      const list = text
        .split("\n")
        .filter((line) => line.trim())
        .map((line) => (JSON.parse(line) as { message: string }).message);
      return list.includes("Finished.") ? list : undefined;
    });
    expect(messages.filter((m) => m.startsWith("Failed to return job results."))).toEqual([
      "Failed to return job results. | HTTP 413",
    ]);
  });
});
