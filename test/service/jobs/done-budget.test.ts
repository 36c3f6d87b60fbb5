import { Readable } from "node:stream";
import { request } from "undici";
import { describe, expect, it, vi } from "vitest";
import { eventually, KEY } from "./harness";
import { ProtocolWorker } from "./protocol-worker";
import { budgetFixture } from "./stalled-body";

/**
 * Issue 10's leftover: a job-done body holds its size against the memory budget from before it is
 * read until its output is handed over or the request ends; past the budget it is refused unread
 * with 503 and Retry-After, and the worker runtime delivers it on a retry.
 */
describe("job-done and the memory budget", () => {
  const { start, run, heldSettles, stall } = budgetFixture("job-done");

  it("refuses a job-done past the budget unread (503, Retry-After, naming it); after the release the same one completes the job", async () => {
    const h = await start({ memoryBudgetBytes: 2_000 });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const input = { n: 1 };
    const inputBytes = JSON.stringify(input).length;
    const id = await run(h, ep.id, input);
    const worker = new ProtocolWorker(h, ep.id, "w-budget");
    await worker.take();

    const stalled = stall(h, ep.id, worker.id, id, 1_500);
    await heldSettles(h, inputBytes + 1_500);
    const result = { output: { text: "x".repeat(600) } };
    const over = await worker.done(id, result);
    expect(over.status).toBe(503);
    expect(over.headers["retry-after"]).toBe("1");
    expect(over.body).toMatchObject({ code: "UNAVAILABLE" });
    expect((over.body as { error: string }).error).toContain("memory budget for jobs (2000 bytes)");
    // Nothing of the refused body was kept; the service keeps answering.
    expect(h.plane.memory.used).toBe(inputBytes + 1_500);
    const status = await h.call("GET", `/v2/${ep.id}/status/${id}`);
    expect(status.body).toMatchObject({ id, status: "IN_PROGRESS" });

    // The stalled worker goes away: its reservation is released, and the same result is taken.
    stalled.destroy();
    await heldSettles(h, inputBytes);
    expect((await worker.done(id, result)).status).toBe(200);
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
      id,
      status: "COMPLETED",
      output: result.output,
    });
    await heldSettles(h, 0);
  });

  it("releases the reservation on every end: a body that is not JSON, one its schema refuses, a client abort, one too large", async () => {
    const h = await start({ memoryBudgetBytes: 2_000, workerBodyLimit: 1_950 });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const worker = new ProtocolWorker(h, ep.id, "w-release");
    /** A new job taken by the worker; the budget then holds its input (`base`). */
    const taken = async (n: number) => {
      const id = await run(h, ep.id, { n });
      await worker.take();
      return { id, base: h.plane.memory.used };
    };
    const doneUrl = (id: string) =>
      `${h.url}/v2/${ep.id}/job-done/${worker.id}/${id}?gpu=LOCAL&isStream=false`;
    // A refused result ends its job (failRefusedResult): the input is released with the reservation.
    const failedSaying = async (id: string, text: string) => {
      await heldSettles(h, 0);
      const status = (await h.call("GET", `/v2/${ep.id}/status/${id}`)).body as {
        status: string;
        error: string;
      };
      expect(status.status).toBe("FAILED");
      expect(status.error).toContain(text);
    };

    const first = await taken(1);
    const notJson = await worker.done(first.id, `{${"z".repeat(1_500)}`);
    expect(notJson.status).toBe(400);
    await failedSaying(first.id, "not JSON");

    const second = await taken(2);
    const badShape = await worker.done(second.id, { stopPod: "yes", pad: "p".repeat(1_500) });
    expect(badShape.status).toBe(400);
    expect((badShape.body as { error: string }).error).toContain("stopPod");
    await failedSaying(second.id, "stopPod");

    // An abort ends nothing: the job stays the worker's, its input held.
    const third = await taken(3);
    const aborted = stall(h, ep.id, worker.id, third.id, 1_500);
    await heldSettles(h, third.base + 1_500);
    aborted.destroy();
    await heldSettles(h, third.base);

    // A chunked body (no content-length) holds the route's bodyLimit; past it Fastify answers 413.
    const tooLarge = await request(doneUrl(third.id), {
      method: "POST",
      headers: { authorization: KEY, "content-type": "application/json" },
      body: Readable.from(['{"output": "', "c".repeat(2_500), '"}']),
    });
    await tooLarge.body.dump();
    expect(tooLarge.statusCode).toBe(413);
    await failedSaying(third.id, "larger than the 1950 bytes");
    // A content-length past bodyLimit holds nothing: 413, not 503.
    const declaredTooLarge = await worker.done(third.id, { output: "d".repeat(2_500) });
    expect(declaredTooLarge.status).toBe(413);
    expect(h.plane.memory.used).toBe(0);

    // Nothing leaked: the largest body the budget allows next to the input still passes.
    const next = await taken(4);
    await heldSettles(h, next.base);
    const largest = { output: "l".repeat(1_900) };
    expect(JSON.stringify(largest).length + next.base).toBeLessThanOrEqual(2_000);
    expect((await worker.done(next.id, largest)).status).toBe(200);
    expect((await h.call("GET", `/v2/${ep.id}/status/${next.id}`)).body).toMatchObject({
      status: "COMPLETED",
      output: largest.output,
    });
    await heldSettles(h, 0);
  });

  it("a result past the worker body limit fails its job at once, saying why; it is not run again", async () => {
    const h = await start({ workerBodyLimit: 4_096 });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = await run(h, ep.id, { n: 1 });
    const worker = new ProtocolWorker(h, ep.id, "w-large");
    expect((await worker.take()).text).toContain(id);
    expect((await worker.done(id, { output: "x".repeat(5_000) })).status).toBe(413);
    const failed = (await h.call("GET", `/v2/${ep.id}/status/${id}`)).body;
    expect(failed).toMatchObject({ id, status: "FAILED" });
    expect((failed as { error: string }).error).toBe(
      "the job's result was larger than the 4096 bytes a worker may send (job-done was refused with 413)",
    );
    // The worker's next take (holding nothing, as the real library sends it) finds no lost job to run
    // again: it gets the next job submitted, and the first stays FAILED.
    const take = worker.take();
    const next = await run(h, ep.id, { n: 2 });
    const taken = await take;
    expect(taken.text).toContain(next);
    expect(taken.text).not.toContain(id);
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({ status: "FAILED" });
    expect((await h.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({
      jobs: { failed: 1, retried: 0 },
    });
  });

  it("the worker runtime retries a refused result (Retry-After), past the real library's 3 attempts, and delivers it once there is room", async () => {
    const h = await start({ memoryBudgetBytes: 2_000 });
    const ep = h.endpoint("runpodkit/echo", { workersMin: 1, workersMax: 1 });
    const session = await eventually(() => h.plane.dispatcher.sessions(ep.id)[0]);
    const reserve = vi.spyOn(h.plane.memory, "reserve");
    // Another job-done holds most of the budget: room for the job's input, not for its result too.
    const stalled = stall(h, ep.id, session.id, "job-elsewhere", 1_700);
    await heldSettles(h, 1_700);
    const input = { text: "e".repeat(200) };
    const id = await run(h, ep.id, input);
    // Refused more often than the real library's 3 attempts: a 503 is retried as long as it lasts.
    const refusals = () => reserve.mock.results.filter((r) => r.type === "throw").length;
    await eventually(() => (refusals() >= 4 ? true : undefined));
    expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({ status: "IN_PROGRESS" });

    stalled.destroy();
    const done = await eventually(async () => {
      const reply = await h.call("GET", `/v2/${ep.id}/status/${id}`);
      return (reply.body as { status: string }).status === "COMPLETED" ? reply.body : undefined;
    });
    expect(done).toMatchObject({ id, status: "COMPLETED", output: input });
    reserve.mockRestore();
  });
});
