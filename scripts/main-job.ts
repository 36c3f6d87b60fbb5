/**
 * The main job (`npm start`): starts the local service embedded, deploys the quickstart example to it
 * through the test engine — the package packed and installed as a user's repository would have it, the
 * same path the e2e tests take — prints the stack outputs and the endpoint as the service sees it,
 * sends jobs (for the quickstart: the jobs example's run, stream and cancel, through the installed
 * SDK; for other examples one job), then destroys the stack and exits 0.
 *
 * Works on a fresh clone after `npm ci`: the package is built from the sources into a cache (never
 * from a possibly stale dist/), and the example's dependencies come from the npm cache first. Each long
 * step (build + pack, install, deploy, jobs, destroy) prints its start, its end with its duration and,
 * while it runs, that it is alive (scripts/progress.ts); the account ends with where to look next.
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { parseArgs } from "node:util";
import { LocalStack, type Step } from "../engine/engine";
import { installProgram, type PackedPackage, PROJECT_ROOT, packProject } from "../engine/package";
import { JobClient } from "../sdk/jobs";
import { RestClient } from "../sdk/rest";
import { SystemClock } from "../service/clock";
import { startService } from "../service/index";
import { exampleConfig } from "./example-settings";
import { nextSteps } from "./next-steps";
import { formatDuration, formatNextSteps, Progress } from "./progress";

type SendJobsModule = typeof import("../examples/jobs/send-jobs");

/** The quickstart runs the image the jobs example is written for, with one worker kept warm. */
const JOBS_EXAMPLE_CONFIG = {
  imageName: { value: "runpodkit/stream:1.0" },
  workersMin: { value: "1" },
};

const { values: flags } = parseArgs({
  options: {
    data: { type: "string", default: join(PROJECT_ROOT, ".data", "main-job.sqlite") },
    example: { type: "string", default: "quickstart" },
    // The example's own settings (key=value, repeatable): its required ones have local values.
    config: { type: "string", multiple: true, default: [] },
  },
});

const progress = new Progress({
  write: (text) => process.stdout.write(text),
  clock: new SystemClock(),
  live: process.stdout.isTTY === true && !process.env.CI,
});

function print(line = ""): void {
  progress.line(line);
}

function printSteps(steps: readonly Step[]): void {
  for (const step of steps) print(`  ${step.op.padEnd(7)} ${step.urn.split("::").slice(2).join(" ")}`);
}

async function main(): Promise<void> {
  // Settled before the service starts and the package is built: a missing setting fails at once.
  const settings = exampleConfig(
    join(PROJECT_ROOT, "examples"),
    flags.example ?? "quickstart",
    flags.config ?? [],
  );
  const apiKey = `rpk_main_${randomBytes(16).toString("hex")}`;
  const data = flags.data ?? ":memory:";
  if (data !== ":memory:") await mkdir(dirname(data), { recursive: true });
  // Worker lines stay in the service's logs (runpodkit logs, the console) instead of interleaving with this account.
  const service = await startService({
    apiKeys: [apiKey],
    port: 0,
    data,
    config: { jobs: { workerOutput: "ignore" } },
  });
  const workDir = await mkdtemp(join(tmpdir(), "runpodkit-main-job-"));
  const rest = new RestClient({ apiKey, baseUrl: service.restUrl });
  try {
    print("runpodkit main job");
    print(`service  REST ${service.restUrl}  GraphQL ${service.graphqlUrl}  jobs ${service.queueUrl}/v2`);
    print(`         store ${data === ":memory:" ? data : relative(process.cwd(), data)} (a fresh account)`);

    print();
    const pkg = await progress.step("build + pack", () => packProject(), {
      note: "npm run build, npm pack (reused while the sources are unchanged)",
    });
    const example = join(PROJECT_ROOT, "examples", flags.example ?? "quickstart");
    const program = await progress.step("install", () => installProgram(example, pkg), {
      note: `examples/${flags.example}, with the packed package, into a copy outside the repository`,
    });
    print(`package  ${basename(pkg.tarball)} (npm pack of this checkout) installed into ${program.dir}`);

    const stack = await LocalStack.open({
      programDir: program.dir,
      stackName: "main",
      stateDir: join(workDir, "state"),
      passphrase: randomBytes(16).toString("hex"),
    });
    stack.setAllConfig({
      "runpodkit:apiKey": { value: apiKey, secret: true },
      "runpodkit:restUrl": { value: service.restUrl },
      "runpodkit:graphqlUrl": { value: service.graphqlUrl },
      "runpodkit:queueUrl": { value: service.queueUrl },
      ...(flags.example === "quickstart" ? JOBS_EXAMPLE_CONFIG : {}),
      ...settings,
    });

    const providerCalls = () => `${stack.providerCalls.length} provider calls`;
    print();
    const up = await progress.step("deploy", () => stack.up(), {
      note: `pulumi up examples/${flags.example} (stack main)`,
      detail: providerCalls,
    });
    printSteps(up.steps);
    print("\nstack outputs");
    for (const [key, { value, secret }] of Object.entries(up.outputs)) {
      print(`  ${key}: ${secret ? "[secret]" : JSON.stringify(value)}`);
    }

    const endpointId = up.outputs.endpointId?.value;
    if (typeof endpointId === "string") {
      print("\nendpoint as the service sees it (GET /v1/endpoints/{id})");
      print(JSON.stringify(await rest.endpoints.get(endpointId), null, 2));
      if (flags.example === "quickstart") {
        await sendExampleJobs(pkg, { apiKey, endpointId, baseUrl: `${service.queueUrl}/v2` });
      } else {
        await sendOneJob(apiKey, `${service.queueUrl}/v2`, endpointId);
      }
    }

    print();
    const destroy = await progress.step("destroy", () => stack.destroy(), {
      note: "pulumi destroy",
      detail: providerCalls,
    });
    printSteps(destroy.steps);
    const left = (await rest.endpoints.list()).length;
    print(`\ndone in ${formatDuration(progress.elapsedMs)}: ${left} endpoints left on the service\n`);
  } finally {
    await rest.close();
    await service.close();
    await rm(workDir, { recursive: true, force: true });
  }
  // After the service has stopped: the list names only what the reader can still reach.
  for (const line of formatNextSteps(nextSteps())) print(line);
}

/** examples/jobs, installed from the same tarball as the program: run, stream and cancel, printed. */
async function sendExampleJobs(
  pkg: PackedPackage,
  target: { apiKey: string; endpointId: string; baseUrl: string },
): Promise<void> {
  print();
  const example = await progress.step(
    "install",
    () => installProgram(join(PROJECT_ROOT, "examples", "jobs"), pkg),
    { note: "examples/jobs, with the packed package" },
  );
  const { sendJobs } = (await import(join(example.dir, "send-jobs.ts"))) as SendJobsModule;
  try {
    await progress.step("jobs", () => sendJobs({ ...target, log: (line) => print(`  ${line}`) }), {
      note: `examples/jobs sendJobs() on ${target.endpointId}: run, stream, cancel`,
    });
  } catch (error) {
    // Still destroy the stack, then exit non-zero: the example is part of what the main job shows.
    const code = (error as { code?: unknown }).code;
    print(`  jobs failed: ${typeof code === "string" ? `${code} ` : ""}${(error as Error).message}`);
    process.exitCode = 1;
  }
}

/** The job plane is optional for the main job: report what happened either way. */
async function sendOneJob(apiKey: string, baseUrl: string, endpointId: string): Promise<void> {
  const jobs = new JobClient({ apiKey, endpointId, baseUrl });
  const input = { prompt: "hello from the main job" };
  print();
  try {
    const result = await progress.step("job", () => jobs.runSync({ input }, { wait: 60_000 }), {
      note: `POST /v2/${endpointId}/runsync ${JSON.stringify({ input })}`,
    });
    print(JSON.stringify(result, null, 2));
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    print(`  no result: ${typeof code === "string" ? `${code} ` : ""}${(error as Error).message}`);
  } finally {
    await jobs.close();
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    const code = (error as { code?: unknown }).code;
    process.stderr.write(
      `main job failed${typeof code === "string" ? ` (${code})` : ""}: ${String(error)}\n`,
    );
    process.exit(1);
  },
);
