/**
 * Streaming client (its own process): submits one job to the big-stream handler and reads its
 * output through JobClient.stream() to the end, counting the text bytes received.
 */
import { performance } from "node:perf_hooks";
import { JobClient } from "../../sdk/jobs";
import { serveIpc } from "../lib/ipc";
import { StreamArgs, type StreamResult } from "../lib/protocol";

async function stream(raw: unknown): Promise<StreamResult> {
  const args = StreamArgs.parse(raw);
  const client = new JobClient({
    apiKey: process.env.BENCH_API_KEY ?? "",
    endpointId: args.endpointId,
    baseUrl: `${args.queueUrl}/v2`,
  });
  try {
    const started = performance.now();
    const { id } = await client.run({ input: { chunks: args.chunks, chunkBytes: args.chunkBytes } });
    let bytes = 0;
    let chunks = 0;
    const iterator = client.stream(id, { pollIntervalMs: 10 });
    let next = await iterator.next();
    while (!next.done) {
      const output = next.value.output as { text?: unknown } | string;
      // The service may split an oversized chunk into pieces of its JSON text.
      bytes +=
        typeof output === "string" ? output.length : String((output as { text?: unknown }).text ?? "").length;
      chunks++;
      next = await iterator.next();
    }
    return { bytes, chunks, elapsedMs: performance.now() - started, status: next.value };
  } finally {
    await client.close();
  }
}

serveIpc({ run: stream }, { pid: process.pid });
