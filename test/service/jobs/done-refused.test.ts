import { resolve } from "node:path";
import { Readable } from "node:stream";
import { request } from "undici";
import { describe, expect, it } from "vitest";
import { type Harness, KEY } from "./harness";
import { ProtocolWorker } from "./protocol-worker";
import { budgetFixture } from "./stalled-body";

/**
 * A result the service refuses (not JSON, nested past the depth bound, of the wrong shape) fails its
 * job at once, naming the refusal: the real worker library does not send a 4xx'd result again, so
 * the job would otherwise wait IN_PROGRESS to be found lost and run again to the same end.
 */
const DEEP = resolve("test/service/jobs/fixtures/deep-result-handler.ts");
const nested = (levels: number) => `${"[".repeat(levels)}1${"]".repeat(levels)}`;

const { start, run: submit } = budgetFixture("job-done");
const statusOf = async (h: Harness, endpointId: string, id: string) =>
  (await h.call("GET", `/v2/${endpointId}/status/${id}`)).body as { status: string; error?: string };

describe("a refused job-done", () => {
  it("too deep, through the fast path (content-length): 400, and the job FAILED naming the member and the bound, not run again", async () => {
    const h = await start({});
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = await submit(h, ep.id, { n: 1 });
    const worker = new ProtocolWorker(h, ep.id, "w-deep");
    expect((await worker.take()).text).toContain(id);
    const refused = await worker.done(id, `{"output":${nested(65)}}`);
    expect(refused.status).toBe(400);
    expect((refused.body as { error: string }).error).toBe("output nested deeper than 64 levels");
    expect(await statusOf(h, ep.id, id)).toMatchObject({
      status: "FAILED",
      error: "the job's result was refused: output nested deeper than 64 levels (job-done answered 400)",
    });
    // The worker's next take (holding nothing) finds no lost job to run again.
    const take = worker.take();
    const next = await submit(h, ep.id, { n: 2 });
    const taken = await take;
    expect(taken.text).toContain(next);
    expect(taken.text).not.toContain(id);
    expect((await h.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({
      jobs: { failed: 1, retried: 0 },
    });
    // One level less is a result.
    expect((await worker.done(next, `{"output":${nested(64)}}`)).status).toBe(200);
    expect(await statusOf(h, ep.id, next)).toMatchObject({ status: "COMPLETED" });
  });

  it("too deep under a long key: the job's error and the 400 show the key cut, not the worker's megabytes", async () => {
    const h = await start({});
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = await submit(h, ep.id, { n: 1 });
    const worker = new ProtocolWorker(h, ep.id, "w-long-key");
    expect((await worker.take()).text).toContain(id);
    const key = "k".repeat(2_000_000);
    const refused = await worker.done(id, `{"${key}":${nested(65)}}`);
    expect(refused.status).toBe(400);
    const shown = `${"k".repeat(100)}…`;
    // Lengths first: a failure then does not print the worker's megabytes.
    expect((refused.body as { error: string }).error.length).toBeLessThan(200);
    expect(((await statusOf(h, ep.id, id)).error ?? "").length).toBeLessThan(300);
    expect(refused.body).toMatchObject({ error: `${shown} nested deeper than 64 levels` });
    expect(await statusOf(h, ep.id, id)).toMatchObject({
      status: "FAILED",
      error: `the job's result was refused: ${shown} nested deeper than 64 levels (job-done answered 400)`,
    });
  });

  it("through Fastify's route (a chunked body): not JSON, and a field of the wrong type, each fail their job; a progress update does not", async () => {
    const h = await start({});
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const worker = new ProtocolWorker(h, ep.id, "w-chunked");
    const chunked = async (id: string, parts: string[]) => {
      const reply = await request(
        `${h.url}/v2/${ep.id}/job-done/${worker.id}/${id}?gpu=LOCAL&isStream=false`,
        { method: "POST", headers: { authorization: KEY }, body: Readable.from(parts) },
      );
      const text = await reply.body.text();
      return { status: reply.statusCode, text };
    };

    // A refused progress update ends nothing: the library goes on with the job.
    const progressing = await submit(h, ep.id, { n: 0 });
    await worker.take();
    const deepProgress = ['{"status": "IN_PROGRESS", ', `"output": ${nested(65)}}`];
    expect(await chunked(progressing, deepProgress)).toMatchObject({ status: 400 });
    expect(await chunked(progressing, ['{"status": "IN_PROGRESS", ', '"stopPod": 1}'])).toMatchObject({
      status: 400,
    });
    expect(await statusOf(h, ep.id, progressing)).toMatchObject({ status: "IN_PROGRESS" });
    expect(await chunked(progressing, ['{"output": ', '"done"}'])).toMatchObject({ status: 200 });
    expect(await statusOf(h, ep.id, progressing)).toMatchObject({ status: "COMPLETED", output: "done" });

    const notJson = await submit(h, ep.id, { n: 1 });
    await worker.take();
    expect(await chunked(notJson, ['{"output": ', "tru"])).toMatchObject({ status: 400 });
    const failed = await statusOf(h, ep.id, notJson);
    expect(failed.status).toBe("FAILED");
    expect(failed.error).toMatch(
      /^the job's result was refused: body: not JSON: .+ \(job-done answered 400\)$/,
    );

    const badShape = await submit(h, ep.id, { n: 2 });
    await worker.take();
    expect(await chunked(badShape, ['{"output": 1, ', '"stopPod": "yes"}'])).toMatchObject({ status: 400 });
    const failedShape = await statusOf(h, ep.id, badShape);
    expect(failedShape.status).toBe("FAILED");
    expect(failedShape.error).toContain("stopPod");
  });

  it("ends nothing of another worker's job, nor of a worker refused itself", async () => {
    const h = await start({});
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = await submit(h, ep.id, { n: 1 });
    const owner = new ProtocolWorker(h, ep.id, "w-owner");
    expect((await owner.take()).text).toContain(id);
    const other = new ProtocolWorker(h, ep.id, "w-other");
    expect((await other.done(id, "{not json")).status).toBe(400);
    const stranger = new ProtocolWorker(h, ep.id, "w-owner", "wrong-key");
    expect((await stranger.done(id, "{not json")).status).toBe(401);
    expect(await statusOf(h, ep.id, id)).toMatchObject({ status: "IN_PROGRESS" });
    expect((await owner.done(id, { output: "fine" })).status).toBe(200);
    expect(await statusOf(h, ep.id, id)).toMatchObject({ status: "COMPLETED", output: "fine" });
  });

  it("a real worker's result too deep: /runsync answers FAILED at once, naming why", async () => {
    const h = await start({ handlers: { "acme/deep": DEEP } });
    const ep = h.endpoint("acme/deep", { workersMin: 1, workersMax: 1 });
    const ok = await h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { levels: 64 } } });
    expect(ok.body).toMatchObject({ status: "COMPLETED" });
    const deep = await h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { levels: 65 } } });
    expect(deep.body).toMatchObject({
      status: "FAILED",
      error: "the job's result was refused: output nested deeper than 64 levels (job-done answered 400)",
    });
    expect((await h.call("GET", `/v2/${ep.id}/health`)).body).toMatchObject({
      jobs: { completed: 1, failed: 1, retried: 0 },
    });
  });
});
