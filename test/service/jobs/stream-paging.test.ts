import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobClient } from "../../../sdk/jobs";
import { STREAM_POSITION_HEADER } from "../../../sdk/schemas/job";
import { JOB_POLICY } from "../../../service/jobs/policy";
import { type Harness, KEY, startHarness } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

/**
 * One /stream reply carries at most JOB_POLICY.streamReplyBytes of chunks (the rest on the next poll,
 * answered at once), and the SDK's stream() pages through a job whose buffered chunks pass its
 * maxReplyBytes; a stream() left early goes on, on the same client, where its consumer left.
 * The harness's clock is manual: a poll the service held would never answer, so each poll here
 * answering at all shows it was not held.
 */
let h: Harness;
const clients: JobClient[] = [];
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  for (const client of clients) await client.close();
  await h?.close();
});

interface StreamBody {
  status: string;
  stream: { output: string }[];
}

async function poll(endpointId: string, jobId: string, query = "") {
  const reply = await h.call("GET", `/v2/${endpointId}/stream/${jobId}${query}`);
  expect(reply.status).toBe(200);
  const body = reply.body as StreamBody;
  return {
    bytes: Buffer.byteLength(reply.text),
    labels: body.stream.map((chunk) => chunk.output.split(":")[0]),
    position: reply.headers[STREAM_POSITION_HEADER],
  };
}

/** A running job of a new endpoint, its protocol worker, and a client of that endpoint. */
async function runningJob(name: string, maxReplyBytes?: number) {
  const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
  const worker = new ProtocolWorker(h, endpoint.id, name);
  const jobs = new JobClient({ apiKey: KEY, endpointId: endpoint.id, baseUrl: `${h.url}/v2`, maxReplyBytes });
  clients.push(jobs);
  const { id } = await jobs.run({ input: {} });
  await worker.take();
  return { endpointId: endpoint.id, id, worker, jobs };
}

// 900 kB chunks: four make a reply under the 4 MiB bound, five pass it.
const CHUNK_TEXT = "x".repeat(900_000);

async function streamChunks(worker: ProtocolWorker, id: string, count: number) {
  for (let i = 0; i < count; i++)
    expect((await worker.streamChunk(id, `${i}:${CHUNK_TEXT}`)).status).toBe(200);
}

/** Buffered bytes of a job as the memory budget counts them: each chunk's output JSON. */
const heldFor = (count: number) => count * JSON.stringify(`0:${CHUNK_TEXT}`).length;

describe("one /stream reply is bounded", () => {
  it("hands out at most streamReplyBytes of chunks, the rest on the next poll at once, with the stream position of each reply", async () => {
    expect(JOB_POLICY.streamReplyBytes).toBe(4 * 1024 * 1024);
    const { endpointId, id, worker } = await runningJob("w-page-plain");
    await streamChunks(worker, id, 10);
    expect(h.plane.book.find(id)?.streamBytes).toBe(heldFor(10));

    // A reader without `received` (the Python library): each reply is drained once written.
    const first = await poll(endpointId, id);
    expect(first.labels).toEqual(["0", "1", "2", "3"]);
    expect(first.position).toBe("4");
    expect(first.bytes).toBeLessThanOrEqual(JOB_POLICY.streamReplyBytes + 64);
    const second = await poll(endpointId, id);
    expect(second.labels).toEqual(["4", "5", "6", "7"]);
    expect(second.position).toBe("8");
    // The memory budget gives back exactly what was handed out.
    expect(h.plane.book.find(id)?.streamBytes).toBe(heldFor(2));
    const third = await poll(endpointId, id);
    expect(third.labels).toEqual(["8", "9"]);
    expect(third.position).toBe("10");
    expect(h.plane.book.find(id)?.stream ?? null).toBeNull();
    expect(h.plane.book.find(id)?.streamBytes).toBe(0);
    await worker.done(id, { output: [] }, true);
  });

  it("pages a reader that sends `received`: a reply it did not get again, part of one it left partway from where it left", async () => {
    const { endpointId, id, worker } = await runningJob("w-page-received");
    await streamChunks(worker, id, 10);
    const first = await poll(endpointId, id, "?received=0");
    expect(first.labels).toEqual(["0", "1", "2", "3"]);
    expect(first.position).toBe("4");
    // Still at 0: the same page again.
    expect((await poll(endpointId, id, "?received=0")).labels).toEqual(["0", "1", "2", "3"]);
    const second = await poll(endpointId, id, "?received=4");
    expect(second.labels).toEqual(["4", "5", "6", "7"]);
    expect(second.position).toBe("8");
    // Took 4 and 5 of that page only: 6 and 7 come again, with what follows.
    const third = await poll(endpointId, id, "?received=6");
    expect(third.labels).toEqual(["6", "7", "8", "9"]);
    expect(third.position).toBe("10");
    expect(h.plane.book.find(id)?.streamBytes).toBe(heldFor(4));
    await worker.done(id, { output: [] }, true);
    const last = await h.call("GET", `/v2/${endpointId}/stream/${id}?received=10`);
    expect(last.body).toEqual({ status: "COMPLETED", stream: [] });
    expect(last.headers[STREAM_POSITION_HEADER]).toBe("10");
    expect(h.plane.book.find(id)?.streamBytes ?? 0).toBe(0);
  });
});

/** A stream read to its end: each chunk's label (its output before ":") and the status it ended on. */
async function drain(stream: AsyncGenerator<{ output: unknown }, unknown>) {
  const labels: string[] = [];
  for (;;) {
    const next = await stream.next();
    if (next.done) return { labels, end: next.value };
    labels.push(String(next.value.output).split(":")[0] as string);
  }
}

describe("JobClient.stream", () => {
  it("pages through a job whose buffered chunks pass the client's maxReplyBytes", async () => {
    // 6 MB: above one bounded reply, below the 9 MB buffered.
    const { id, worker, jobs } = await runningJob("w-page-sdk", 6_000_000);
    await streamChunks(worker, id, 10);
    await worker.done(id, { output: [] }, true);
    // The old service's one 9 MB reply: refused by the client (a ProtocolError).
    const { labels, end } = await drain(jobs.stream(id, { pollIntervalMs: 20 }));
    expect(labels).toEqual(Array.from({ length: 10 }, (_, i) => String(i)));
    expect(end).toBe("COMPLETED");
  });

  it("streams a client whose maxReplyBytes is under one bounded reply: each poll says its limit and its reply fits", async () => {
    // 2 MB: two 900 kB chunks fit, the service's 4 MiB reply (four of them) does not.
    const { id, worker, jobs } = await runningJob("w-page-small", 2_000_000);
    await streamChunks(worker, id, 10);
    await worker.done(id, { output: [] }, true);
    // Before the fix: a 3.6 MB reply, a ProtocolError (past maxReplyBytes) that is not retried.
    const { labels, end } = await drain(jobs.stream(id, { pollIntervalMs: 20 }));
    expect(labels).toEqual(Array.from({ length: 10 }, (_, i) => String(i)));
    expect(end).toBe("COMPLETED");

    // The bound as a raw reader sees it: the whole body within maxReplyBytes, one chunk at least.
    const next = await runningJob("w-page-raw");
    await streamChunks(next.worker, next.id, 3);
    const small = await poll(next.endpointId, next.id, "?received=0&maxReplyBytes=2000000");
    expect(small.labels).toEqual(["0", "1"]);
    expect(small.bytes).toBeLessThanOrEqual(2_000_000);
    // Under one chunk: that chunk alone (a reply must carry one to make progress).
    const tiny = await poll(next.endpointId, next.id, "?received=2&maxReplyBytes=1");
    expect(tiny.labels).toEqual(["2"]);
    expect(tiny.position).toBe("3");
    const bad = await h.call("GET", `/v2/${next.endpointId}/stream/${next.id}?maxReplyBytes=0`);
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("maxReplyBytes");
    await next.worker.done(next.id, { output: [] }, true);

    // A failed job's error goes in every reply: the chunks get what it leaves (two would pass).
    const failed = await runningJob("w-page-error");
    await streamChunks(failed.worker, failed.id, 2);
    await failed.worker.done(failed.id, { error: "e".repeat(300_000) }, true);
    const first = await poll(failed.endpointId, failed.id, "?received=0&maxReplyBytes=2000000");
    expect(first.labels).toEqual(["0"]);
    expect(first.bytes).toBeLessThanOrEqual(2_000_000);
    expect(first.bytes).toBeGreaterThan(1_100_000);
    expect((await poll(failed.endpointId, failed.id, "?received=1&maxReplyBytes=2000000")).labels).toEqual([
      "1",
    ]);
  });

  it("a stream() left after 2 of 5 chunks goes on, on the same client, with the 3rd; no chunk twice", async () => {
    const { id, worker, jobs } = await runningJob("w-page-break");
    for (const text of ["a", "b", "c", "d", "e"]) await worker.streamChunk(id, text);
    const taken: unknown[] = [];
    for await (const chunk of jobs.stream(id, { pollIntervalMs: 20 })) {
      taken.push(chunk.output);
      if (taken.length === 2) break;
    }
    expect(taken).toEqual(["a", "b"]);
    await worker.streamChunk(id, "f");
    const rest: unknown[] = [];
    for await (const chunk of jobs.stream(id, { pollIntervalMs: 20 })) {
      rest.push(chunk.output);
      if (rest.length === 4) break;
    }
    expect(rest).toEqual(["c", "d", "e", "f"]);
    await worker.done(id, { output: [] }, true);
    const last: unknown[] = [];
    const stream = jobs.stream(id, { pollIntervalMs: 20 });
    for (;;) {
      const next = await stream.next();
      if (next.done) {
        expect(next.value).toBe("COMPLETED");
        break;
      }
      last.push(next.value.output);
    }
    expect(last).toEqual([]);
  });
});
