/**
 * The relay floor's worker (see bare-server.ts): takes a job with a long-poll GET job-take, calls the
 * no-op handler, posts its output to job-done and, as the service's worker runtime does, asks for
 * the next job at once instead of waiting for job-done's answer. undici pools, one for takes and one
 * for posts (the runtime's two), replies read whole by the SDK's dispatchWhole, as the runtime's are.
 * Its own process.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { Pool } from "undici";
import { dispatchWhole } from "../sdk/dispatch-reply";
import { handler as echo } from "../service/jobs/workers/handlers/echo";
import { serveIpc } from "./lib/ipc";

const base = new URL(process.env.BARE_URL ?? "http://127.0.0.1:1");
const takes = new Pool(base.origin, { connections: 1 });
const posts = new Pool(base.origin, { connections: 1 });
let stopped = false;

async function takeLoop(): Promise<void> {
  const origin = base.origin;
  while (!stopped) {
    let text: string;
    try {
      // A long-poll: undici's own timeouts off (the relay holds it until a /runsync comes).
      const take = {
        origin,
        path: "/v2/relay/job-take/bare-worker",
        method: "GET" as const,
        headersTimeout: 0,
      };
      text = (await dispatchWhole(takes, take)).text;
    } catch {
      await sleep(100);
      continue;
    }
    const job = JSON.parse(text) as { id: string; input: unknown };
    const output = await echo({ id: job.id, input: job.input });
    const done = {
      origin,
      path: `/v2/relay/job-done/bare-worker/${job.id}`,
      method: "POST" as const,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ output }),
    };
    dispatchWhole(posts, done).catch(() => {});
  }
}

serveIpc({}, { pid: process.pid }, async () => {
  stopped = true;
  await Promise.allSettled([takes.destroy(), posts.destroy()]);
});
void takeLoop();
