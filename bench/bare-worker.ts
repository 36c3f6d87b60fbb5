/**
 * The relay floor's worker (see bare-server.ts): takes a job with a long-poll GET job-take, calls the
 * no-op handler, posts its output to job-done and, as the service's worker runtime does, asks for
 * the next job at once instead of waiting for job-done's answer. undici pools, one for takes and one
 * for posts (the runtime's two), replies read whole by a dispatch handler. Its own process.
 */
import { type Dispatcher, Pool } from "undici";
import { handler as echo } from "../service/jobs/workers/handlers/echo";
import { serveIpc } from "./lib/ipc";

const base = new URL(process.env.BARE_URL ?? "http://127.0.0.1:1");
const takes = new Pool(base.origin, { connections: 1 });
const posts = new Pool(base.origin, { connections: 1 });
let stopped = false;

function exchange(pool: Pool, method: "GET" | "POST", path: string, body?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: () => {},
      onResponseStart: () => {},
      onResponseData: (_controller, chunk) => {
        chunks.push(chunk);
      },
      onResponseEnd: () => resolve(Buffer.concat(chunks).toString("utf8")),
      onResponseError: (_controller, error) => reject(error),
    };
    const headers = body === undefined ? {} : { "content-type": "application/json" };
    pool.dispatch(
      { origin: base.origin, path, method, headers, body, headersTimeout: 0, bodyTimeout: 0 },
      handler,
    );
  });
}

async function takeLoop(): Promise<void> {
  while (!stopped) {
    const text = await exchange(takes, "GET", "/v2/relay/job-take/bare-worker").catch(() => "");
    if (!text) continue;
    const job = JSON.parse(text) as { id: string; input: unknown };
    const output = await echo({ id: job.id, input: job.input });
    void exchange(posts, "POST", `/v2/relay/job-done/bare-worker/${job.id}`, JSON.stringify({ output }));
  }
}

serveIpc({}, { pid: process.pid }, async () => {
  stopped = true;
  await Promise.allSettled([takes.destroy(), posts.destroy()]);
});
void takeLoop();
