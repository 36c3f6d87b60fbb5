import type { Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { QueueWorker, workerEnvFrom } from "../../../service/jobs/workers/runtime/worker";
import { type HeldPort, holdPort, relayTo } from "../../helpers/tcp-relay";
import { eventually, type Harness, KEY, startHarness } from "./harness";

describe("the worker runtime's connections to the service", () => {
  let h: Harness | null = null;
  let relay: Server | null = null;
  let held: HeldPort | null = null;
  afterEach(async () => {
    held?.close();
    held = null;
    relay?.close();
    relay = null;
    await h?.close();
    h = null;
  });

  it("a result whose connection was refused is posted again, and the job completes", async () => {
    h = await startHarness({ clock: new ManualClock() });
    const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
    const id = (
      (await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { n: 7 } } })).body as { id: string }
    ).id;
    // Results go to a port that refuses connections until the relay to the service opens there.
    held = holdPort();
    const env = workerEnvFrom({
      RUNPOD_WEBHOOK_GET_JOB: `${h.url}/v2/${ep.id}/job-take/$ID?gpu=LOCAL`,
      RUNPOD_WEBHOOK_POST_OUTPUT: `http://127.0.0.1:${held.port}/v2/${ep.id}/job-done/$RUNPOD_POD_ID/$ID?gpu=LOCAL`,
      RUNPOD_AI_API_KEY: KEY,
      RUNPOD_POD_ID: "w-refused",
    });
    if (!env) throw new Error("no worker environment");
    const worker = new QueueWorker(env, { handler: (job) => job.input });
    const running = worker.run();
    const service = h;
    // The job is taken and its result's first post refused (nothing listens on the port yet).
    await eventually(async () => {
      const status = (await service.call("GET", `/v2/${ep.id}/status/${id}`)).body as { status: string };
      return status.status === "IN_PROGRESS" ? true : undefined;
    });
    relay = await relayTo(held, h.url);
    const done = await eventually(async () => {
      const status = (await service.call("GET", `/v2/${ep.id}/status/${id}`)).body as {
        status: string;
        output?: unknown;
      };
      return status.status === "COMPLETED" ? status : undefined;
    });
    expect(done.output).toEqual({ n: 7 });
    worker.shutdown();
    await running;
  });
});
