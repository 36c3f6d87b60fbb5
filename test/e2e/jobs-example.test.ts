/**
 * The jobs example end to end: the quickstart deployed from the installed package with the
 * runpodkit/stream image and one warm worker, then the jobs example (installed the same way, so it
 * imports the packed SDK) runs, streams and cancels jobs on that endpoint; then destroy.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect } from "vitest";
import { installProgram, PROJECT_ROOT, packProject } from "../../engine/package";
import { describeScenario, outputString, type Scenario } from "./support/scenario";

type SendJobsModule = typeof import("../../examples/jobs/send-jobs");

const IMAGE = "runpodkit/stream:1.0";
const run = promisify(execFile);

/** The jobs example installed from the packed tarball, as a user's copy of it would be. */
async function installJobsExample(): Promise<{ dir: string; module: SendJobsModule }> {
  const program = await installProgram(join(PROJECT_ROOT, "examples", "jobs"), await packProject());
  const module = (await import(join(program.dir, "send-jobs.ts"))) as SendJobsModule;
  return { dir: program.dir, module };
}

const jobsScenario: Scenario = {
  example: "quickstart",
  config: () => ({ imageName: { value: IMAGE }, workersMin: { value: "1" } }),
  steps: [
    {
      name: "up deploys the quickstart with the stream image and one warm worker",
      async run(ctx) {
        const { outputs, changes } = await ctx.driver.up();
        expect(changes).toEqual({ create: 3 });
        ctx.outputs = outputs;
        const endpointId = outputString(outputs, "endpointId");
        expect(outputString(outputs, "endpointUrl")).toBe(`${ctx.svc.service.queueUrl}/v2/${endpointId}`);
        expect(await ctx.svc.rest.endpoints.get(endpointId)).toMatchObject({ workersMin: 1, workersMax: 2 });
        const templateId = outputString(outputs, "templateId");
        expect((await ctx.svc.rest.templates.get(templateId)).imageName).toBe(IMAGE);
      },
    },
    {
      name: "sendJobs runs a job, streams one word by word and cancels a long one whose worker stops",
      async run({ svc, outputs }) {
        const { module } = await installJobsExample();
        const endpointId = outputString(outputs, "endpointId");
        // The base URL as a user derives it from the endpointUrl output.
        const baseUrl = outputString(outputs, "endpointUrl").slice(0, -`/${endpointId}`.length);
        const lines: string[] = [];
        const sent = await module.sendJobs({
          apiKey: svc.apiKey,
          endpointId,
          baseUrl,
          log: (line) => lines.push(line),
        });

        expect(sent.run).toMatchObject({ submitted: "IN_QUEUE", status: "COMPLETED", output: [] });
        expect(sent.run.chunks).toEqual(["hello", "from", "runpodkit"]);

        expect(sent.stream.words).toEqual(module.STREAM_TEXT.split(" "));
        expect(sent.stream).toMatchObject({ ended: true, status: "COMPLETED" });

        // It was running (it streamed), the cancel is final, and the worker dropped it: the next job
        // ran on that same worker (it runs one job at a time) and no job is left in progress.
        expect(sent.cancel).toMatchObject({ firstChunk: "token-0", reply: "CANCELLED", status: "CANCELLED" });
        expect(sent.cancel.workerId).toEqual(expect.any(String));
        expect(sent.next).toMatchObject({ status: "COMPLETED", workerId: sent.cancel.workerId });
        expect(sent.cancelledLater).toBe("CANCELLED");
        expect(sent.health.jobs).toMatchObject({ inProgress: 0, inQueue: 0, completed: 3, failed: 0 });
        expect(sent.health.workers).toMatchObject({ running: 0, idle: 1 });

        expect(lines.some((line) => line.includes("POST /cancel -> CANCELLED"))).toBe(true);
        // A boolean, so a failure never prints the key.
        expect(lines.join("\n").includes(svc.apiKey)).toBe(false);
      },
    },
    {
      name: "the example type-checks against the packed typings and runs from its environment",
      async run({ svc, outputs }) {
        const { dir } = await installJobsExample();
        // Its own tsconfig, against the installed package's .d.ts (tsx alone would not check types).
        await run(process.execPath, [join(dir, "node_modules", "typescript", "bin", "tsc"), "-p", "."], {
          cwd: dir,
        });
        const tsx = join(dir, "node_modules", "tsx", "dist", "cli.mjs");
        // RUNPOD_ENDPOINT_URL is the quickstart's endpointUrl output, as the README sets it.
        const { stdout, stderr } = await run(process.execPath, [tsx, "index.ts"], {
          cwd: dir,
          env: {
            PATH: process.env.PATH,
            RUNPOD_API_KEY: svc.apiKey,
            RUNPOD_ENDPOINT_URL: outputString(outputs, "endpointUrl"),
          },
        });
        expect(stdout).toMatch(/chunk 8: dog\n {2}stream ended: COMPLETED/);
        expect(stdout).toMatch(/ {2}status CANCELLED \(worker \w+\)/);
        expect(`${stdout}${stderr}`.includes(svc.apiKey)).toBe(false);
      },
    },
    {
      // Before, it went on against a worker that does not stream and printed "running: first chunk",
      // "POST /cancel -> COMPLETED" for a job that had long completed, and exited 0.
      name: "on the quickstart's default image (runpodkit/echo, no stream) it stops after the first job, naming the image to set",
      async run({ driver, svc }) {
        await driver.setConfig("imageName", { value: "runpodkit/echo:1.0" });
        const { outputs, changes } = await driver.up();
        expect(changes).toEqual({ same: 2, update: 1 });
        const { dir } = await installJobsExample();
        const tsx = join(dir, "node_modules", "tsx", "dist", "cli.mjs");
        const failed = await run(process.execPath, [tsx, "index.ts"], {
          cwd: dir,
          env: {
            PATH: process.env.PATH,
            RUNPOD_API_KEY: svc.apiKey,
            RUNPOD_ENDPOINT_URL: outputString(outputs, "endpointUrl"),
          },
        }).then(
          () => undefined,
          (error: { code?: unknown; stdout?: string; stderr?: string }) => error,
        );
        expect(failed?.code).toBe(1);
        expect(failed?.stderr).toMatch(
          /^jobs example failed: job \S+ ended COMPLETED without a stream chunk: this endpoint's worker does not stream\. .*`pulumi config set imageName runpodkit\/stream:1\.0`/,
        );
        expect(failed?.stdout).toMatch(/^run {6}\S+ IN_QUEUE/);
        expect(failed?.stdout).not.toContain("cancel");
        expect(`${failed?.stdout}${failed?.stderr}`.includes(svc.apiKey)).toBe(false);
      },
    },
    {
      name: "destroy removes the endpoint and the template",
      async run({ driver, svc }) {
        expect(await driver.destroy()).toEqual({ delete: 3 });
        expect(await svc.rest.endpoints.list()).toEqual([]);
        expect(await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).toEqual([]);
      },
    },
  ],
};

// The deploy path itself is covered for both drivers by quickstart.test.ts; the engine suffices here.
describe("jobs example", () => describeScenario("engine", jobsScenario));
