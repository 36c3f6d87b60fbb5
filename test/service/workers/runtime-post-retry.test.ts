import { afterEach, describe, expect, it } from "vitest";
import { QueueWorker, workerEnvFrom } from "../../../service/jobs/workers/runtime/worker";
import { startScriptedServer } from "../../sdk/scripted-server";
import { eventually } from "../jobs/harness";

interface Answer {
  status: number;
  retryAfter?: string;
}

/**
 * A scripted server standing for a platform whose job-done fails as scripted: job-take hands out
 * one job, then has none; each job-done attempt gets the next answer of `answers` (the last one
 * repeats) and is recorded.
 */
async function platform(answers: Answer[]) {
  const attempts: number[] = [];
  let handedOut = false;
  const server = await startScriptedServer((hit, res) => {
    if (hit.url.includes("/job-take/")) {
      if (handedOut) {
        setTimeout(() => res.writeHead(204).end(), 50);
        return;
      }
      handedOut = true;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: "job-1", input: { n: 1 } }));
      return;
    }
    if (hit.url.includes("/job-done/")) {
      const answer = answers[Math.min(attempts.length, answers.length - 1)] ?? { status: 200 };
      attempts.push(answer.status);
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (answer.retryAfter !== undefined) headers["retry-after"] = answer.retryAfter;
      res.writeHead(answer.status, headers).end("{}");
      return;
    }
    res.writeHead(404).end();
  });
  return { server, attempts };
}

/** The worker runtime's posts: the first attempt straight to the pool, a failed one through the retry path. */
describe("worker runtime: a result the platform fails to take", () => {
  let server: Awaited<ReturnType<typeof startScriptedServer>> | null = null;
  let worker: QueueWorker | null = null;
  let running: Promise<void> | null = null;
  afterEach(async () => {
    worker?.shutdown();
    await running;
    worker = null;
    running = null;
    await server?.close();
    server = null;
  });

  async function postOnce(answers: Answer[], settled: (attempts: number[]) => boolean): Promise<number[]> {
    const p = await platform(answers);
    server = p.server;
    const url = p.server.url;
    const env = workerEnvFrom({
      RUNPOD_WEBHOOK_GET_JOB: `${url}/v2/ep/job-take/$ID?gpu=LOCAL`,
      RUNPOD_WEBHOOK_POST_OUTPUT: `${url}/v2/ep/job-done/$RUNPOD_POD_ID/$ID?gpu=LOCAL`,
      RUNPOD_AI_API_KEY: "key",
      RUNPOD_POD_ID: "w-retry",
    });
    if (!env) throw new Error("no worker environment");
    worker = new QueueWorker(env, { handler: (job) => job.input });
    running = worker.run();
    return eventually(() => (settled(p.attempts) ? [...p.attempts] : undefined), 15_000);
  }

  it("a 500 is tried again after the first wait and delivered", async () => {
    const attempts = await postOnce([{ status: 500 }, { status: 200 }], (a) => a.length >= 2);
    expect(attempts).toEqual([500, 200]);
  });

  it("5xx are tried three times in all, as the real library does, then dropped", async () => {
    const attempts = await postOnce(
      [{ status: 502 }, { status: 500 }, { status: 504 }],
      (a) => a.length >= 3,
    );
    expect(attempts).toEqual([502, 500, 504]);
    // The post is over (dropped): a worker told to stop ends at once, no attempt pending.
    worker?.shutdown();
    const ended = await Promise.race([
      running?.then(() => "ended"),
      new Promise((resolve) => setTimeout(() => resolve("still posting"), 2_000)),
    ]);
    expect(ended).toBe("ended");
  }, 20_000);

  it("a 503 is tried again as Retry-After says, past three attempts, until accepted", async () => {
    const refused = { status: 503, retryAfter: "0" };
    const attempts = await postOnce(
      [refused, refused, refused, refused, { status: 200 }],
      (a) => a.at(-1) === 200,
    );
    expect(attempts).toEqual([503, 503, 503, 503, 200]);
  });

  it("a 4xx is not tried again", async () => {
    const attempts = await postOnce([{ status: 400 }, { status: 200 }], (a) => a.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(attempts).toEqual([400]);
  });
});
