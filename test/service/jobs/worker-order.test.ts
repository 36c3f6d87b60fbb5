import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { QueueWorker, workerEnvFrom } from "../../../service/jobs/workers/runtime/worker";
import { eventually, type Harness, KEY, startHarness } from "./harness";

/** undici's channel for a request whose headers went out: the order the worker's requests are sent in. */
const SENT = "undici:client:sendHeaders";

describe("the worker runtime's order of requests", () => {
  let h: Harness | null = null;
  const sent: string[] = [];
  const record = (message: unknown) => {
    const path = (message as { request?: { path?: string } }).request?.path ?? "";
    const route = /\/(job-take-batch|job-take|job-done)\//.exec(path)?.[1];
    if (route) sent.push(route);
  };
  afterEach(async () => {
    unsubscribe(SENT, record);
    sent.length = 0;
    await h?.close();
    h = null;
  });

  it("posts the result of a handler that answers at once before it asks for the next job", async () => {
    h = await startHarness({ clock: new ManualClock() });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = (
      (await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { n: 3 } } })).body as { id: string }
    ).id;
    const env = workerEnvFrom({
      RUNPOD_WEBHOOK_GET_JOB: `${h.url}/v2/${ep.id}/job-take/$ID?gpu=LOCAL`,
      RUNPOD_WEBHOOK_POST_OUTPUT: `${h.url}/v2/${ep.id}/job-done/$RUNPOD_POD_ID/$ID?gpu=LOCAL`,
      RUNPOD_AI_API_KEY: KEY,
      RUNPOD_POD_ID: "w-order",
    });
    if (!env) throw new Error("no worker environment");
    subscribe(SENT, record);
    // Several slots: with a job in hand the worker still asks for more (a batch take).
    const worker = new QueueWorker(env, { handler: (job) => job.input, concurrency: 4 });
    const running = worker.run();
    const service = h;
    const done = await eventually(async () => {
      const status = (await service.call("GET", `/v2/${ep.id}/status/${id}`)).body as {
        status: string;
        output?: unknown;
      };
      return status.status === "COMPLETED" ? status : undefined;
    });
    expect(done.output).toEqual({ n: 3 });
    await eventually(async () => (sent.length >= 3 ? true : undefined));
    // The take that brought the job, its result, then the next take.
    expect(sent.slice(0, 3)).toEqual(["job-take-batch", "job-done", "job-take-batch"]);
    worker.shutdown();
    await running;
  });
});
