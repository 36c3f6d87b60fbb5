/**
 * examples/gitops under Pulumi's mocks (`pulumi.runtime.setMocks`): what the program declares and how
 * it wires outputs into inputs. The command provider cannot run here (it is a plugin of the Pulumi
 * CLI), so the mocks stand in for it: build-and-push "prints" the image it was given, as its command
 * line does. `runpodkit` is this checkout's source. Also the CI workflow's triggers and steps.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { beforeEach, describe, expect, test, vi } from "vitest";
import { z } from "zod";

// The package as the checkout's source (the program imports it by name, as users do).
vi.mock("runpodkit", () => vi.importActual("../../index"));

/** A variable, so that the program is loaded anew (after vi.resetModules) on each run. */
const PROGRAM = "../../examples/gitops/index";

const PROJECT = "runpodkit-gitops";
const REPOSITORY = "ghcr.io/acme/worker";
const COMMIT = "3f9c2b1d8e7a6f5c4b3a29180716253443526170";
const HEAD = "aaaabbbbccccddddeeeeffff0000111122223333";
const API_KEY = "rpk_gitops_test_key";

interface Registered {
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}
interface Invoked {
  token: string;
  inputs: Record<string, unknown>;
}

type GitopsProgram = typeof import("../../examples/gitops/index");

/** Runs the program once under fresh mocks and config; resolves when its last output is known. */
async function runProgram(config: Record<string, string>, buildStdout = (image: string) => `${image}\n`) {
  const registered: Registered[] = [];
  const invoked: Invoked[] = [];
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        registered.push({ type: args.type, name: args.name, inputs: args.inputs });
        const state: Record<string, unknown> = { ...args.inputs };
        if (args.type === "command:local:Command") {
          const env = args.inputs.environment as Record<string, string>;
          state.stdout = args.name === "build-and-push" ? buildStdout(env.IMAGE!) : "smoke test passed\n";
          state.stderr = "";
        }
        if (args.type.endsWith(":Endpoint")) {
          state.url = `http://queue.test/v2/${args.name}-id`;
          state.version = 3;
        }
        return { id: `${args.name}-id`, state };
      },
      call: (args) => {
        invoked.push({ token: args.token, inputs: args.inputs });
        return args.token === "command:local:run"
          ? { command: args.inputs.command, stdout: `${HEAD}\n` }
          : {};
      },
    },
    PROJECT,
    "ci",
    false,
  );
  const secrets: string[] = [];
  const all: Record<string, string> = {};
  for (const [key, value] of Object.entries(config))
    all[key.includes(":") ? key : `${PROJECT}:${key}`] = value;
  if (all["runpodkit:apiKey"]) secrets.push("runpodkit:apiKey");
  pulumi.runtime.setAllConfig(all, secrets);
  vi.resetModules();
  const program = (await import(PROGRAM)) as GitopsProgram;
  await resolved(program.smokeTestResult);
  /** The resource of this name (and type suffix, where two resources share a name). */
  const find = (name: string, type = "") => {
    const found = registered.find((r) => r.name === name && r.type.endsWith(type));
    if (!found) throw new Error(`${name} ${type} was not registered`);
    return found;
  };
  return { program, registered, invoked, find };
}

function resolved<T>(output: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => output.apply(resolve));
}

describe("examples/gitops under Pulumi's mocks", () => {
  beforeEach(() => {
    vi.resetModules();
  });

  test("declares the build command, the template, the endpoint and the smoke test", async () => {
    const { registered } = await runProgram({ imageRepository: REPOSITORY, gitCommit: COMMIT });
    expect(registered.map((r) => [r.type, r.name])).toEqual(
      expect.arrayContaining([
        ["command:local:Command", "build-and-push"],
        ["pulumi-nodejs:dynamic/runpodkit:Template", "worker"],
        ["pulumi-nodejs:dynamic/runpodkit:Endpoint", "worker"],
        ["command:local:Command", "smoke-test"],
      ]),
    );
    expect(registered.filter((r) => r.type !== "pulumi:pulumi:Stack")).toHaveLength(4);
  });

  test("the build runs again only when the commit changes, and pushes the commit's tag", async () => {
    const { find } = await runProgram({ imageRepository: REPOSITORY, gitCommit: COMMIT });
    const build = find("build-and-push").inputs;
    expect(build.triggers).toEqual([COMMIT]);
    expect(build.environment).toEqual({ IMAGE: `${REPOSITORY}:${COMMIT}`, GIT_COMMIT: COMMIT });
    expect(build.dir).toBe("worker");
    // Values travel as environment variables, not spliced into the command line.
    expect(build.create).toBe(
      'docker build --build-arg GIT_COMMIT="$GIT_COMMIT" --tag "$IMAGE" . 1>&2 && docker push "$IMAGE" 1>&2 && echo "$IMAGE"',
    );
    expect(String(build.create)).not.toContain(COMMIT);
  });

  test("the template's image is the tag the build pushed; the endpoint runs that template", async () => {
    const { find, program } = await runProgram({ imageRepository: REPOSITORY, gitCommit: COMMIT });
    const template = find("worker", ":Template").inputs;
    expect(template).toMatchObject({ imageName: `${REPOSITORY}:${COMMIT}`, isServerless: true });
    expect(await resolved(program.pushedImage)).toBe(`${REPOSITORY}:${COMMIT}`);
    const endpoint = find("worker", ":Endpoint").inputs;
    expect(endpoint).toMatchObject({ templateId: "worker-id", workersMin: 0, workersMax: 2 });
  });

  test("the template takes the reference the build printed last, not one computed beside it", async () => {
    const pushed = "registry.example/acme/worker@sha256:0123456789abcdef";
    const { find } = await runProgram(
      { imageRepository: REPOSITORY, gitCommit: COMMIT },
      () => `Pushed\n${pushed}\n`,
    );
    expect(find("worker", ":Template").inputs.imageName).toBe(pushed);
  });

  test("the smoke test runs after the endpoint, against its URL, expecting this commit, with the key as a secret", async () => {
    const { find, program } = await runProgram({
      imageRepository: REPOSITORY,
      gitCommit: COMMIT,
      "runpodkit:apiKey": API_KEY,
    });
    const smoke = find("smoke-test").inputs;
    expect(smoke.create).toBe("npx --no-install tsx smoke-test.ts");
    expect(smoke.dir).toBe(".");
    // The key makes the whole environment a secret (Pulumi's secret envelope on the wire).
    expect(smoke.environment).toEqual({
      [pulumi.runtime.specialSigKey]: pulumi.runtime.specialSecretSig,
      value: {
        ENDPOINT_URL: "http://queue.test/v2/worker-id",
        EXPECT_COMMIT: COMMIT,
        RUNPOD_API_KEY: API_KEY,
      },
    });
    // Again after each release: the endpoint's version and the image are its triggers.
    expect(smoke.triggers).toEqual([3, `${REPOSITORY}:${COMMIT}`]);
    expect(await resolved(program.endpointUrl)).toBe("http://queue.test/v2/worker-id");
    expect(await resolved(program.smokeTestResult)).toBe("smoke test passed\n");
  });

  test("without gitCommit the commit is the checkout's HEAD, read with git rev-parse", async () => {
    const { find, invoked } = await runProgram({ imageRepository: REPOSITORY });
    expect(invoked).toEqual([
      { token: "command:local:run", inputs: expect.objectContaining({ command: "git rev-parse HEAD" }) },
    ]);
    expect(find("build-and-push").inputs.triggers).toEqual([HEAD]);
    expect(find("worker", ":Template").inputs.imageName).toBe(`${REPOSITORY}:${HEAD}`);
    // No key in config: the smoke test inherits RUNPOD_API_KEY, and its environment is not a secret.
    expect(find("smoke-test").inputs.environment).toEqual({
      ENDPOINT_URL: "http://queue.test/v2/worker-id",
      EXPECT_COMMIT: HEAD,
    });
  });

  test("imageRepository is required", async () => {
    await expect(runProgram({ gitCommit: COMMIT })).rejects.toThrow(/imageRepository/);
  });

  // A value Docker refuses passed the PR's preview (which runs no command) and failed `docker build`
  // in the up on main, after the merge. The program now refuses it when it runs, so preview too.
  test.each([
    ["a tag", "ghcr.io/acme/worker:latest"],
    ["a digest", "ghcr.io/acme/worker@sha256:0123"],
    ["capitals in the path", "ghcr.io/Acme/worker"],
    ["capitals without a registry", "Acme/worker"],
    ["a space", "ghcr.io/acme/my worker"],
    ["a trailing slash", "ghcr.io/acme/worker/"],
    ["a scheme", "https://ghcr.io/acme/worker"],
    ["256 characters", `ghcr.io/${"a".repeat(248)}`],
  ])("imageRepository with %s is refused naming the setting when the program runs", async (_, value) => {
    const run = runProgram({ imageRepository: value, gitCommit: COMMIT });
    await expect(run).rejects.toThrow(/^imageRepository: /);
    await expect(run).rejects.toThrow(/lowercase, without a tag or digest/);
  });

  test.each([
    ["a registry", "ghcr.io/acme/worker"],
    ["Docker Hub's", "acme/worker"],
    ["one part", "worker"],
    ["localhost with a port", "localhost:5000/worker"],
    ["a host without a dot but a port", "registry:5000/worker"],
    ["separators", "Registry.example:5000/team/sub_team/worker-api.v2__x"],
    ["an ECR", "123456789012.dkr.ecr.eu-west-1.amazonaws.com/acme/worker"],
    ["255 characters", `ghcr.io/${"a".repeat(247)}`],
  ])("imageRepository as %s is taken as written", async (_, value) => {
    const { find } = await runProgram({ imageRepository: value, gitCommit: COMMIT });
    expect(find("build-and-push").inputs.environment).toMatchObject({ IMAGE: `${value}:${COMMIT}` });
  });

  test.each([
    ["a branch name", "main"],
    ["a ref with a slash", "feature/x"],
    ["capitals", COMMIT.toUpperCase()],
    ["6 digits", "3f9c2b"],
    ["65 digits", "a".repeat(65)],
    ["a newline", `${COMMIT}\n`],
  ])("gitCommit as %s is refused naming the setting (it becomes the image tag)", async (_, value) => {
    await expect(runProgram({ imageRepository: REPOSITORY, gitCommit: value })).rejects.toThrow(
      /^gitCommit: must be a commit id \(7 to 64 lowercase hex digits/,
    );
  });

  test("a short commit id is taken as the tag", async () => {
    const { find } = await runProgram({ imageRepository: REPOSITORY, gitCommit: "3f9c2b1" });
    expect(find("build-and-push").inputs.triggers).toEqual(["3f9c2b1"]);
  });
});

describe("examples/gitops CI workflow", () => {
  const yaml = createRequire(require.resolve("@pulumi/pulumi/package.json"))("js-yaml") as {
    load(text: string): unknown;
  };
  const Workflow = z.object({
    on: z.object({
      pull_request: z.object({ branches: z.array(z.string()) }),
      push: z.object({ branches: z.array(z.string()) }),
    }),
    env: z.record(z.string(), z.string()),
    jobs: z.record(
      z.string(),
      z.object({
        steps: z.array(
          z.object({
            uses: z.string().optional(),
            run: z.string().optional(),
            with: z.record(z.string(), z.unknown()).optional(),
            env: z.record(z.string(), z.string()).optional(),
          }),
        ),
      }),
    ),
  });
  const workflow = Workflow.parse(
    yaml.load(readFileSync(join(__dirname, "../../examples/gitops/.github/workflows/deploy.yml"), "utf8")),
  );
  const steps = Object.values(workflow.jobs).flatMap((job) => job.steps);
  const deploy = steps.find((s) => s.uses?.startsWith("pulumi/actions@") && s.with?.command);
  /** A GitHub expression as written in the workflow: `${{ body }}`. */
  const expression = (body: string) => `$\{{ ${body} }}`;

  test("previews on pull requests to main and runs up on pushes to main, in the example's folder", () => {
    expect(workflow.on.pull_request.branches).toEqual(["main"]);
    expect(workflow.on.push.branches).toEqual(["main"]);
    expect(deploy?.with?.command).toBe(
      expression("github.event_name == 'pull_request' && 'preview' || 'up'"),
    );
    expect(deploy?.with?.["work-dir"]).toBe(expression("env.WORK_DIR"));
    // `--refresh` on both: drift made by hand is shown and undone, a resource deleted by hand made again.
    expect(deploy?.with?.refresh).toBe(true);
    expect(workflow.env.WORK_DIR).toBe("examples/gitops");
  });

  test("deploys the pushed commit with the service key from the secrets", () => {
    const settings = steps.find((s) => s.run?.includes("pulumi config set gitCommit"));
    expect(settings?.run).toContain('pulumi config set gitCommit "$GITHUB_SHA"');
    expect(settings?.run).toContain("pulumi config set imageRepository");
    expect(deploy?.env?.RUNPOD_API_KEY).toBe(expression("secrets.RUNPOD_API_KEY"));
    // The CLI is installed before the step that uses it, and npm ci before the program runs.
    const index = (match: (s: (typeof steps)[number]) => boolean) => steps.findIndex(match);
    expect(index((s) => s.uses === "pulumi/actions@v6" && !s.with)).toBeLessThan(
      index((s) => s === settings),
    );
    expect(index((s) => s.run === "npm ci")).toBeLessThan(index((s) => s === deploy));
  });

  test("npm ci needs lockfiles the example does not ship: the README and the workflow say to commit both", () => {
    const dir = join(__dirname, "../../examples/gitops");
    expect(steps.some((s) => s.run === "npm ci")).toBe(true);
    // The program's (the workflow's npm ci) and the worker's (the image's npm ci, worker/Dockerfile).
    expect(existsSync(join(dir, "package-lock.json"))).toBe(false);
    expect(existsSync(join(dir, "worker", "package-lock.json"))).toBe(false);
    expect(readFileSync(join(dir, "worker", "Dockerfile"), "utf8")).toMatch(/^RUN npm ci\b/m);
    const readme = readFileSync(join(dir, "README.md"), "utf8").replace(/\s+/g, " ");
    expect(readme).toContain("commit two lockfiles: the program's `package-lock.json`");
    expect(readme).toContain("and `worker/package-lock.json` (`npm install` in `worker/`)");
    const workflow = readFileSync(join(dir, ".github/workflows/deploy.yml"), "utf8");
    expect(workflow).toMatch(/Commit that\n# folder's package-lock.json/);
    expect(workflow).toMatch(/# worker\/package-lock.json \(`npm install` in worker\/\)/);
  });
});
