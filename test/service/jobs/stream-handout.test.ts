import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STREAM_POSITION_HEADER } from "../../../sdk/schemas/job";
import { type Harness, KEY, startHarness } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

/**
 * /stream hands each chunk out once, and a reply that never reaches its reader must not lose them:
 * a reply not written whole is put back for the next poll, and a reader that says where it is
 * (`received`, the SDK) gets a reply it did not receive again (the SDK's side: test/sdk/jobs-stream-cut.test.ts).
 */
let h: Harness;
beforeAll(async () => {
  // Replies far past the connection's buffers (24 MB): one bounded reply (4 MiB) may fit in them whole.
  h = await startHarness({ config: { streamReplyBytes: 64 * 1024 * 1024 } });
});
afterAll(async () => {
  await h?.close();
});

interface StreamBody {
  status: string;
  stream: { output: unknown }[];
}

async function poll(endpointId: string, jobId: string, query = "") {
  const reply = await h.call("GET", `/v2/${endpointId}/stream/${jobId}${query}`);
  return {
    status: reply.status,
    body: reply.body as StreamBody,
    position: reply.headers[STREAM_POSITION_HEADER],
  };
}

/** A running job of a new endpoint and the protocol worker holding it. */
async function runningJob(name: string) {
  const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
  const worker = new ProtocolWorker(h, endpoint.id, name);
  const run = await h.call("POST", `/v2/${endpoint.id}/run`, { body: { input: {} } });
  const id = (run.body as { id: string }).id;
  await worker.take();
  return { endpointId: endpoint.id, id, worker };
}

/**
 * A /stream poll on a raw connection (no `received`, as the Python library polls) that reads the
 * reply's first bytes and then goes away, leaving the rest of a large reply unwritten.
 */
function pollAndLeave(endpointId: string, jobId: string): Promise<void> {
  const url = new URL(h.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(
        `GET /v2/${endpointId}/stream/${jobId} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${KEY}\r\n\r\n`,
      );
    });
    socket.once("data", (data: Buffer) => {
      expect(data.toString("latin1")).toMatch(/^HTTP\/1\.1 200 /);
      socket.resetAndDestroy();
      resolve();
    });
    socket.once("error", reject);
  });
}

describe("/stream hands chunks out again when their reply was not received", () => {
  it("puts back the chunks of a reply its reader left before it was written whole (a reader without `received`)", async () => {
    const { endpointId, id, worker } = await runningJob("w-handout-left");
    // 24 chunks of 1 MB: far more than the connection's buffers take before its reader reads.
    const big = "x".repeat(1_000_000);
    for (let i = 0; i < 24; i++) expect((await worker.streamChunk(id, `${i}:${big}`)).status).toBe(200);
    await pollAndLeave(endpointId, id);
    // The service sees the connection close before the reply was written: the chunks are back.
    const after = await poll(endpointId, id);
    expect(after.status).toBe(200);
    expect(after.body.stream.map((chunk) => String(chunk.output).split(":")[0])).toEqual(
      Array.from({ length: 24 }, (_, i) => String(i)),
    );
    // Written whole to a reader without `received`: handed out once, and their memory freed.
    expect(h.plane.book.find(id)?.stream ?? null).toBeNull();
    await worker.done(id, { output: [] }, true);
    expect((await poll(endpointId, id)).body).toEqual({ status: "COMPLETED", stream: [] });
  });

  it("hands a reply out again to a reader whose `received` says it never arrived, and only new chunks once it did", async () => {
    const { endpointId, id, worker } = await runningJob("w-handout-received");
    await worker.streamChunk(id, "a");
    await worker.streamChunk(id, "b");
    const first = await poll(endpointId, id, "?received=0");
    expect(first.body.stream).toEqual([{ output: "a" }, { output: "b" }]);
    expect(first.position).toBe("2");
    await worker.streamChunk(id, "c");
    // Still at 0: the reply with a and b did not reach this reader; it gets them again, then c.
    const again = await poll(endpointId, id, "?received=0");
    expect(again.body.stream).toEqual([{ output: "a" }, { output: "b" }, { output: "c" }]);
    expect(again.position).toBe("3");
    await worker.streamChunk(id, "d");
    const next = await poll(endpointId, id, "?received=3");
    expect(next.body.stream).toEqual([{ output: "d" }]);
    expect(next.position).toBe("4");
    await worker.done(id, { output: [] }, true);
    const last = await poll(endpointId, id, "?received=4");
    expect(last.body).toEqual({ status: "COMPLETED", stream: [] });
    expect(last.position).toBe("4");
  });

  it("refuses a `received` that is not a stream position, naming it", async () => {
    const { endpointId, id } = await runningJob("w-handout-bad");
    const reply = await h.call("GET", `/v2/${endpointId}/stream/${id}?received=-1`);
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ code: "VALIDATION", field: "received" });
    expect((reply.body as { error: string }).error).toContain("received");
  });
});
