/**
 * The main job (`npm start`): starts the local service embedded, deploys the quickstart example to it
 * through the test engine — the package packed and installed as a user's repository would have it, the
 * same path the e2e tests take — prints the stack outputs and the endpoint as the service sees it,
 * sends jobs (for the quickstart: the jobs example's run, stream and cancel, through the installed
 * SDK; for other examples one job), then destroys the stack and exits 0.
 *
 * Works on a fresh clone after `npm ci`: the package is built from the sources into a cache (never
 * from a possibly stale dist/), and the example's dependencies come from the npm cache first.
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
import { startService } from "../service/index";

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
  },
});

function print(line = ""): void {
  process.stdout.write(`${line}\n`);
}

function printSteps(steps: readonly Step[]): void {
  for (const step of steps) print(`  ${step.op.padEnd(7)} ${step.urn.split("::").slice(2).join(" ")}`);
}

async function main(): Promise<void> {
  const apiKey = `rpk_main_${randomBytes(16).toString("hex")}`;
  const data = flags.data ?? ":memory:";
  if (data !== ":memory:") await mkdir(dirname(data), { recursive: true });
  const service = await startService({ apiKeys: [apiKey], port: 0, data });
  const workDir = await mkdtemp(join(tmpdir(), "runpodkit-main-job-"));
  const rest = new RestClient({ apiKey, baseUrl: service.restUrl });
  try {
    print("runpodkit main job");
    print(`service  REST ${service.restUrl}  GraphQL ${service.graphqlUrl}  jobs ${service.queueUrl}/v2`);
    print(`         store ${data === ":memory:" ? data : relative(process.cwd(), data)} (a fresh account)`);

    const pkg = await packProject();
    const example = join(PROJECT_ROOT, "examples", flags.example ?? "quickstart");
    const program = await installProgram(example, pkg);
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
    });

    print(`\npulumi up  examples/${flags.example} (stack main)`);
    const up = await stack.up();
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

    print("\npulumi destroy");
    const destroy = await stack.destroy();
    printSteps(destroy.steps);
    print(`\ndone: ${(await rest.endpoints.list()).length} endpoints left on the service`);
  } finally {
    await rest.close();
    await service.close();
    await rm(workDir, { recursive: true, force: true });
  }
}

/** examples/jobs, installed from the same tarball as the program: run, stream and cancel, printed. */
async function sendExampleJobs(
  pkg: PackedPackage,
  target: { apiKey: string; endpointId: string; baseUrl: string },
): Promise<void> {
  const example = await installProgram(join(PROJECT_ROOT, "examples", "jobs"), pkg);
  const { sendJobs } = (await import(join(example.dir, "send-jobs.ts"))) as SendJobsModule;
  print(`\njobs  examples/jobs sendJobs() on ${target.endpointId} (installed into ${example.dir})`);
  try {
    await sendJobs({ ...target, log: (line) => print(`  ${line}`) });
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
  print(`\njob  POST /v2/${endpointId}/runsync ${JSON.stringify({ input })}`);
  try {
    const result = await jobs.runSync({ input }, { wait: 60_000 });
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
