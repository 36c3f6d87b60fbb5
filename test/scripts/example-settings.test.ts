/**
 * `npm start -- --example <name>` on examples with required settings (scripts/example-settings.ts):
 * before, secrets-cpu, private-model and gitops each failed after the build, install and a deploy
 * attempt with Pulumi's "Missing required configuration variable ... pulumi config set", which a user
 * of `npm start` cannot follow. Now the local-only ones get local values, any setting can be given as
 * `--config key=value`, and what has no local value is named, with the flag, before anything runs.
 * gitops, which the engine cannot run at all (its @pulumi/command resources), is refused as early.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../engine/package";
import {
  deployableExamples,
  exampleConfig,
  MainJobUsageError,
  REQUIRED_SETTINGS,
} from "../../scripts/example-settings";

const EXAMPLES = join(PROJECT_ROOT, "examples");
const GITOPS_REFUSAL =
  "examples/gitops needs the Pulumi CLI: its image build and smoke test are @pulumi/command commands, a provider plugin the Pulumi CLI runs and npm start's engine cannot (it runs dynamic providers only). Deploy it with `pulumi up` (examples/gitops/README.md, which also says which of its parts the tests run without the CLI)";

describe("npm start's example settings", () => {
  it("knows every setting each example program requires (config.require*), so none reaches Pulumi's error", () => {
    const examples = deployableExamples(EXAMPLES);
    expect(examples).toEqual(["gitops", "hub-release", "private-model", "quickstart", "secrets-cpu"]);
    for (const example of examples) {
      const program = readFileSync(join(EXAMPLES, example, "index.ts"), "utf8");
      const required = [
        ...program.matchAll(/config\.require(Secret)?(?:Number|Boolean|Object)?\("([^"]+)"\)/g),
      ].map(([, secret, key]) => ({ key, secret: secret !== undefined }));
      expect(
        (REQUIRED_SETTINGS[example] ?? []).map(({ key, secret }) => ({ key, secret })),
        example,
      ).toEqual(required);
    }
  });

  it("gives the local-only required settings local values (secret where the program reads a secret), and --config overrides them", () => {
    const secrets = exampleConfig(EXAMPLES, "secrets-cpu", []);
    expect(secrets).toEqual({
      apiToken: { value: expect.stringMatching(/^local-[0-9a-f]{24}$/), secret: true },
    });
    expect(exampleConfig(EXAMPLES, "private-model", ["volumeSize=20"])).toEqual({
      registryUsername: { value: "local-user", secret: false },
      registryPassword: { value: expect.stringMatching(/^local-[0-9a-f]{24}$/), secret: true },
      volumeSize: { value: "20", secret: false },
    });
    expect(exampleConfig(EXAMPLES, "secrets-cpu", ["apiToken=mine=with=equals", "podStopped=true"])).toEqual({
      apiToken: { value: "mine=with=equals", secret: true },
      podStopped: { value: "true", secret: false },
    });
    expect(exampleConfig(EXAMPLES, "quickstart", [])).toEqual({});
  });

  it("names a required setting without a local value, with the flag that passes it; a bad --config or --example says what to type", () => {
    const refusal = (example: string, given: string[] = []) => {
      try {
        exampleConfig(EXAMPLES, example, given);
      } catch (error) {
        expect(error).toBeInstanceOf(MainJobUsageError);
        return (error as Error).message;
      }
      throw new Error("not refused");
    };
    // gitops runs only under the Pulumi CLI (its @pulumi/command resources): refused whatever is given,
    // before its imageRepository; before, npm start built and installed it, then failed the deploy.
    expect(refusal("gitops")).toBe(GITOPS_REFUSAL);
    expect(refusal("gitops", ["imageRepository=localhost:5000/worker"])).toBe(GITOPS_REFUSAL);
    expect(refusal("secrets-cpu", ["apiToken"])).toBe(
      '--config "apiToken": give a setting as key=value, e.g. --config apiToken=<value>',
    );
    expect(refusal("secrets-cpu", ["=x"])).toMatch(/^--config "=x": give a setting as key=value/);
    expect(refusal("quickstart", ["runpodkit:apiKey=k"])).toMatch(
      /^--config runpodkit:apiKey: npm start sets the runpodkit:\* keys itself/,
    );
    expect(refusal("jobs")).toBe(
      '--example "jobs" is not a Pulumi program under examples/: give one of hub-release, private-model, quickstart, secrets-cpu (examples/jobs and examples/handlers are not deployed; the quickstart runs examples/jobs)',
    );
    expect(refusal("../quickstart")).toMatch(/^--example "\.\.\/quickstart" is not a Pulumi program/);
  });

  it("npm start stops at once with that line and exit code 1, before the service starts or anything is built", async () => {
    const run = promisify(execFile)(
      process.execPath,
      [
        "--import",
        "tsx",
        join(PROJECT_ROOT, "scripts", "main-job.ts"),
        "--example",
        "gitops",
        "--config",
        "imageRepository=localhost:5000/worker",
        "--data",
        ":memory:",
      ],
      { cwd: PROJECT_ROOT, encoding: "utf8" },
    );
    const failed = (await run.then(
      () => null,
      (error: unknown) => error,
    )) as { code: number; stdout: string; stderr: string } | null;
    expect(failed?.code).toBe(1);
    expect(failed?.stdout).toBe("");
    expect(failed?.stderr).toBe(`main job failed (USAGE): MainJobUsageError: ${GITOPS_REFUSAL}\n`);
  });
});
