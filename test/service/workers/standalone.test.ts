import { type ChildProcess, execFile, spawn } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { ACCOUNT, type Harness, KEY, startHarness } from "../jobs/harness";

const LOADER = `file://${resolve("node_modules/tsx/dist/loader.mjs")}`;

/** The worker runtime used on its own, as a user would: by hand, against this service. */
describe("standalone worker runtime", () => {
  let h: Harness | null = null;
  let worker: ChildProcess | null = null;
  afterEach(async () => {
    worker?.kill("SIGKILL");
    await h?.close();
    h = null;
  });

  it("a self-starting module run by hand with the RUNPOD_WEBHOOK_* environment serves an endpoint", async () => {
    h = await startHarness();
    const ep = h.endpoint("acme/by-hand", { workersMax: 0 });
    const base = `${h.url}/v2/${ep.id}`;
    worker = spawn(process.execPath, ["--import", LOADER, resolve("examples/handlers/self-start.ts")], {
      env: {
        PATH: process.env.PATH ?? "",
        RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID?gpu=LAPTOP`,
        RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?gpu=LAPTOP`,
        RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID?gpu=LAPTOP`,
        RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID`,
        RUNPOD_AI_API_KEY: KEY,
        RUNPOD_POD_ID: "my-laptop",
      },
      stdio: "ignore",
    });
    const reply = await h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { text: "by hand" } } });
    expect(reply.body).toMatchObject({
      status: "COMPLETED",
      workerId: "my-laptop",
      output: [{ word: "by" }, { word: "hand" }],
    });
    expect(h.plane.workers.list(ACCOUNT, ep.id)).toEqual([
      expect.objectContaining({ id: "my-laptop", imageName: "external", desiredStatus: "RUNNING" }),
    ]);
  });

  it("without the environment it runs one local test job (--test_input) and exits", async () => {
    const run = promisify(execFile);
    const { stdout } = await run(
      process.execPath,
      [
        "--import",
        LOADER,
        resolve("service/jobs/workers/runtime/main.ts"),
        resolve("examples/handlers/uppercase.ts"),
        "--test_input",
        '{"input": {"text": "local"}}',
      ],
      { env: { PATH: process.env.PATH ?? "" } },
    );
    expect(JSON.parse(stdout)).toEqual({ output: { text: "LOCAL" } });
  });
});
