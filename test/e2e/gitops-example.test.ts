/**
 * The parts of examples/gitops that can run without the Pulumi CLI and Docker, run for real on the
 * example as a user installs it (the package packed, the example copied and installed from the
 * tarball): its own tsconfig typechecks it; the worker runs as its image's CMD would; the smoke-test
 * command the program declares passes against an endpoint of the local service running that worker
 * for the expected commit, and fails for another. The image's GIT_COMMIT (a Dockerfile ENV) is given
 * as the template's env here, since no image is built.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { installProgram, PROJECT_ROOT, packProject } from "../../engine/package";
import { RestClient } from "../../sdk/rest";
import { type RunningService, startService } from "../../service/index";
import { buildOutsideDocker } from "./support/dockerfile";

const run = promisify(execFile);

/** The smoke test's command line as examples/gitops/index.ts declares it (its mock test pins it). */
const SMOKE_TEST_COMMAND = "npx --no-install tsx smoke-test.ts";
const IMAGE_REPOSITORY = "ghcr.io/acme/worker";
const COMMIT = "5e1f0c9a7b3d2e4f6a8b0c1d2e3f4a5b6c7d8e9f";

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command line through the shell, as the command provider does (`/bin/sh -c`). */
async function shell(line: string, cwd: string, env: Record<string, string>): Promise<Ran> {
  try {
    const { stdout, stderr } = await run("/bin/sh", ["-c", line], {
      cwd,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout = "", stderr = "" } = error as { code?: unknown; stdout?: string; stderr?: string };
    return { code: typeof code === "number" ? code : -1, stdout, stderr };
  }
}

describe("examples/gitops, installed from the packed package", () => {
  const apiKey = `rpk_gitops_${randomBytes(12).toString("hex")}`;
  let dir = "";
  let service: RunningService;
  let rest: RestClient;
  let endpointUrl = "";

  beforeAll(async () => {
    dir = (await installProgram(join(PROJECT_ROOT, "examples", "gitops"), await packProject())).dir;
    const worker = join(dir, "worker", "handler.ts");
    service = await startService({
      apiKeys: [apiKey],
      config: {
        jobs: { handlers: { [`${IMAGE_REPOSITORY}:${COMMIT}`]: `cmd:"${process.execPath}" "${worker}"` } },
      },
    });
    rest = new RestClient({ apiKey, baseUrl: service.restUrl });
    const template = await rest.templates.create({
      name: "gitops-worker",
      imageName: `${IMAGE_REPOSITORY}:${COMMIT}`,
      isServerless: true,
      env: { GIT_COMMIT: COMMIT },
    });
    const endpoint = await rest.endpoints.create({ templateId: template.id, workersMax: 1, idleTimeout: 5 });
    endpointUrl = `${service.queueUrl}/v2/${endpoint.id}`;
  }, 300_000);

  afterAll(async () => {
    await rest?.close();
    await service?.close();
  });

  test("typechecks with its own tsconfig (program, smoke test, worker)", async () => {
    const tsc = `"${process.execPath}" node_modules/typescript/bin/tsc -p tsconfig.json --noEmit`;
    const checked = await shell(tsc, dir, {});
    expect(checked.stdout).toBe("");
    expect(checked.code).toBe(0);
  }, 120_000);

  test("the worker runs as the image's CMD does (`node handler.ts`), answering with its commit", async () => {
    const ran = await shell(
      `"${process.execPath}" handler.ts --test_input '{"input":{"name":"ci"}}'`,
      join(dir, "worker"),
      {
        GIT_COMMIT: COMMIT,
      },
    );
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout)).toEqual({ output: { greeting: "hello ci", commit: COMMIT } });
  }, 60_000);

  test("the smoke test passes on an endpoint that runs the expected commit", async () => {
    const ran = await shell(SMOKE_TEST_COMMAND, dir, {
      ENDPOINT_URL: endpointUrl,
      EXPECT_COMMIT: COMMIT,
      RUNPOD_API_KEY: apiKey,
    });
    expect(ran.stderr).not.toContain("smoke test failed");
    expect(ran.code).toBe(0);
    expect(ran.stdout).toMatch(new RegExp(`^smoke test passed: job \\S+ COMPLETED on commit ${COMMIT}\\n$`));
  }, 120_000);

  test("the smoke test fails (exit 1, the reason on stderr) when the endpoint runs another commit", async () => {
    const expected = "0000000000000000000000000000000000000000";
    const ran = await shell(SMOKE_TEST_COMMAND, dir, {
      ENDPOINT_URL: endpointUrl,
      EXPECT_COMMIT: expected,
      RUNPOD_API_KEY: apiKey,
    });
    expect(ran.code).toBe(1);
    expect(ran.stdout).toBe("");
    expect(ran.stderr).toContain(`ran commit ${COMMIT}, expected ${expected}`);
  }, 120_000);

  test("the smoke test fails with the SDK's error code on a wrong key, and never prints the key", async () => {
    const wrongKey = `rpk_wrong_${randomBytes(12).toString("hex")}`;
    const ran = await shell(SMOKE_TEST_COMMAND, dir, {
      ENDPOINT_URL: endpointUrl,
      EXPECT_COMMIT: COMMIT,
      RUNPOD_API_KEY: wrongKey,
    });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toContain("smoke test failed (UNAUTHORIZED)");
    expect((ran.stdout + ran.stderr).includes(wrongKey)).toBe(false);
  }, 120_000);
});

/**
 * worker/Dockerfile's steps, run outside Docker on a build context as the README has users make it:
 * worker/ with its package-lock.json written by `npm install` there (runpodkit from the packed
 * package, as `npm install <tarball>` records it). The image installs exactly that lockfile (`npm ci`),
 * and a context without one does not build: a build that resolved the ranges afresh could give two
 * builds of one commit different dependencies.
 */
describe("examples/gitops/worker/Dockerfile, its steps run outside Docker", () => {
  const workerDir = join(PROJECT_ROOT, "examples", "gitops", "worker");
  let scratch = "";
  let context = "";

  beforeAll(async () => {
    const pkg = await packProject();
    scratch = await mkdtemp(join(tmpdir(), "gitops-image-"));
    context = join(scratch, "context");
    await cp(workerDir, context, { recursive: true });
    const manifestPath = join(context, "package.json");
    const manifest = JSON.parse(await readFile(manifestPath, "utf8")) as {
      dependencies: Record<string, string>;
    };
    manifest.dependencies[pkg.name] = `file:${pkg.tarball}`;
    await writeFile(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
    const installed = await shell(
      "npm install --prefer-offline --no-audit --no-fund --loglevel=error",
      context,
      {},
    );
    expect(installed.stderr).toBe("");
    expect(installed.code).toBe(0);
  }, 300_000);

  afterAll(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  test("builds from the lockfile: the image holds exactly the locked packages, and its CMD answers", async () => {
    const image = await buildOutsideDocker(join(workerDir, "Dockerfile"), context, join(scratch, "image"), {
      GIT_COMMIT: COMMIT,
    });
    expect(image.from).toMatch(/^node:24(-|$)/);
    expect(image.env).toEqual({ GIT_COMMIT: COMMIT });
    expect(image.cmd).toEqual(["node", "handler.ts"]);

    const packages = async (path: string) =>
      (
        JSON.parse(await readFile(path, "utf8")) as {
          packages: Record<string, { version?: string; dev?: boolean }>;
        }
      ).packages;
    const locked = await packages(join(context, "package-lock.json"));
    const wanted = Object.entries(locked)
      .filter(([path, entry]) => path !== "" && entry.dev !== true)
      .map(([path, entry]) => [path, entry.version]);
    const inImage = Object.entries(
      await packages(join(image.workdir, "node_modules", ".package-lock.json")),
    ).map(([path, entry]) => [path, entry.version]);
    expect(wanted.length).toBeGreaterThan(10);
    expect(Object.fromEntries(inImage)).toEqual(Object.fromEntries(wanted));

    const [program, ...args] = image.cmd;
    const ran = await shell(
      `"${program === "node" ? process.execPath : program}" ${args.join(" ")} --test_input '{"input":{"name":"ci"}}'`,
      image.workdir,
      image.env,
    );
    expect(ran.code).toBe(0);
    expect(JSON.parse(ran.stdout)).toEqual({ output: { greeting: "hello ci", commit: COMMIT } });
  }, 300_000);

  test("does not build a context without package-lock.json", async () => {
    const unlocked = join(scratch, "unlocked");
    await cp(context, unlocked, {
      recursive: true,
      filter: (src) => !src.endsWith("package-lock.json") && !src.endsWith("node_modules"),
    });
    await expect(
      buildOutsideDocker(join(workerDir, "Dockerfile"), unlocked, join(scratch, "image-unlocked")),
    ).rejects.toThrow(/package-lock\.json/);
  }, 300_000);
});
