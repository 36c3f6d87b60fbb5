import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RunpodkitError, StreamInterruptedError } from "../../sdk/errors";
import { JobClient } from "../../sdk/jobs";
import { type Harness, KEY, startHarness } from "../service/jobs/harness";
import { ProtocolWorker } from "../service/jobs/protocol-worker";

/** Where an armed proxy cuts the next /stream reply. */
type CutAt = "body" | "before-status";

/**
 * A TCP proxy in front of the service that, once armed, resets the client's connection a few bytes
 * into the body of the next /stream reply, or before any byte of it (as a gateway or a flaky network
 * would). With `stripPosition` it removes the service's stream position header from every reply, as
 * a service that does not hand chunks out again (the real one) answers.
 */
class CuttingProxy {
  readonly #server: Server;
  readonly #target: number;
  readonly #sockets = new Set<Socket>();
  #armed: CutAt | null = null;
  stripPosition = false;
  #onCut: () => void = () => {};
  cut: Promise<void> = Promise.resolve();

  private constructor(server: Server, target: number) {
    this.#server = server;
    this.#target = target;
  }

  static async start(targetPort: number): Promise<{ proxy: CuttingProxy; port: number }> {
    let proxy!: CuttingProxy;
    const server = createServer((client) => proxy.#relay(client));
    proxy = new CuttingProxy(server, targetPort);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    return { proxy, port: address.port };
  }

  /** The next /stream reply is cut 8 bytes into its body (or before it); `cut` resolves once it was. */
  arm(at: CutAt = "body"): void {
    this.#armed = at;
    this.cut = new Promise((resolve) => {
      this.#onCut = resolve;
    });
  }

  #relay(client: Socket): void {
    const upstream = connect(this.#target, "127.0.0.1");
    this.#sockets.add(client).add(upstream);
    let cutting: CutAt | null = null;
    let reply = Buffer.alloc(0);
    client.on("data", (data: Buffer) => {
      if (this.#armed && /^GET \/v2\/[^ ]+\/stream\//.test(data.toString("latin1"))) {
        cutting = this.#armed;
        this.#armed = null;
      }
      upstream.write(data);
    });
    upstream.on("data", (raw: Buffer) => {
      const data = this.stripPosition
        ? Buffer.from(raw.toString("latin1").replace(/\r\nx-runpodkit-stream-position: \d+/i, ""), "latin1")
        : raw;
      if (cutting === null) {
        client.write(data);
        return;
      }
      if (cutting === "before-status") {
        // The service wrote its whole reply; none of it reaches the client.
        client.resetAndDestroy();
        upstream.destroy();
        this.#onCut();
        return;
      }
      reply = Buffer.concat([reply, data]);
      const bodyAt = reply.indexOf("\r\n\r\n");
      if (bodyAt < 0 || reply.length < bodyAt + 4 + 8) return;
      // The status line, the headers and 8 bytes of the body reach the client; then a reset.
      client.write(reply.subarray(0, bodyAt + 4 + 8), () => {
        client.resetAndDestroy();
        upstream.destroy();
        this.#onCut();
      });
    });
    const end = () => {
      this.#sockets.delete(client);
      this.#sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
  }

  close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

let h: Harness;
let proxy: CuttingProxy;
let proxyPort: number;
const clients: JobClient[] = [];

beforeAll(async () => {
  h = await startHarness();
  ({ proxy, port: proxyPort } = await CuttingProxy.start(Number(new URL(h.url).port)));
});
afterAll(async () => {
  for (const client of clients) await client.close();
  await proxy?.close();
  await h?.close();
});

/** Every chunk a stream yields, then how it ended. */
async function drain(stream: AsyncGenerator<unknown, unknown>): Promise<{ chunks: unknown[]; end: unknown }> {
  const chunks: unknown[] = [];
  for (;;) {
    const next = await stream.next();
    if (next.done) return { chunks, end: next.value };
    chunks.push(next.value);
  }
}

/**
 * A job on an endpoint without workers of its own, taken by a protocol worker that streams "one" and
 * "two", and a stream through the proxy (`stripPosition` as given) that has yielded both.
 */
async function streamPastTwoChunks(workerId: string, stripPosition: boolean) {
  proxy.stripPosition = stripPosition;
  const endpoint = h.endpoint("runpodkit/echo", { workersMax: 0 });
  const worker = new ProtocolWorker(h, endpoint.id, workerId);
  const direct = new JobClient({ apiKey: KEY, endpointId: endpoint.id, baseUrl: `${h.url}/v2` });
  const jobs = new JobClient({
    apiKey: KEY,
    endpointId: endpoint.id,
    baseUrl: `http://127.0.0.1:${proxyPort}/v2`,
  });
  clients.push(direct, jobs);
  const { id } = await direct.run({ input: {} });
  await worker.take();
  await worker.streamChunk(id, { text: "one" });
  await worker.streamChunk(id, { text: "two" });
  const stream = jobs.stream(id, { pollIntervalMs: 20 });
  expect((await stream.next()).value).toEqual({ output: { text: "one" } });
  expect((await stream.next()).value).toEqual({ output: { text: "two" } });
  return { worker, id, stream, direct };
}

describe("JobClient.stream when a /stream reply is cut", () => {
  for (const at of ["before-status", "body"] as const) {
    it(`goes on with every chunk once when the reply is cut ${at === "body" ? "mid-body" : "before its status line"} (the service hands the chunks out again)`, async () => {
      const { worker, id, stream } = await streamPastTwoChunks(`w-stream-resend-${at}`, false);

      // The next poll's reply (three, four) is written by the service and lost on the way.
      proxy.arm(at);
      await worker.streamChunk(id, { text: "three" });
      await worker.streamChunk(id, { text: "four" });
      const rest = drain(stream);
      rest.catch(() => {}); // awaited below; a failure must not go unhandled meanwhile
      await proxy.cut;
      await worker.streamChunk(id, { text: "five" });
      await worker.done(id, { output: "done" });
      const { chunks, end } = await rest;
      expect(chunks).toEqual([
        { output: { text: "three" } },
        { output: { text: "four" } },
        { output: { text: "five" } },
      ]);
      expect(end).toBe("COMPLETED");
    });
  }

  it("against a service that does not hand chunks out again, throws a StreamInterruptedError naming the job and the chunks received, never a stream with a hole", async () => {
    const { worker, id, stream, direct } = await streamPastTwoChunks("w-stream-cut", true);

    // The next poll's reply (three, four: handed out, so drained from the job) is cut.
    proxy.arm();
    await worker.streamChunk(id, { text: "three" });
    await worker.streamChunk(id, { text: "four" });
    const next = stream.next().then(
      (result) => ({ result, error: undefined }),
      (error: unknown) => ({ result: undefined, error }),
    );
    await proxy.cut;
    // The job goes on; a client that went on polling would yield "five" after "two".
    await worker.streamChunk(id, { text: "five" });
    await worker.done(id, { output: "done" });
    const { result, error } = await next;
    expect(result).toBeUndefined();
    expect(error).toBeInstanceOf(StreamInterruptedError);
    expect(error).toBeInstanceOf(RunpodkitError);
    const interrupted = error as StreamInterruptedError;
    expect(interrupted.toJSON()).toMatchObject({
      code: "STREAM_INTERRUPTED",
      operation: "jobs.stream",
      jobId: id,
      chunksReceived: 2,
    });
    expect(interrupted.message).toMatch(
      new RegExp(
        `^jobs\\.stream: job ${id}: a /stream reply was cut after the service had begun it \\(.+\\); the service hands each chunk out once, so the chunks in that reply are lost to this stream \\(2 chunk\\(s\\) were received before it\\)\\. The job goes on: read its final status and output with status\\(\\) or waitFor\\(\\)$`,
      ),
    );
    expect(interrupted.message).not.toContain(KEY);
    // The iteration is over; the job's result is still there.
    expect(await stream.next()).toEqual({ done: true, value: undefined });
    expect(await direct.waitFor(id, { pollIntervalMs: 20 })).toMatchObject({
      status: "COMPLETED",
      output: "done",
    });
    proxy.stripPosition = false;
  });
});
