/**
 * The settings `npm start -- --example <name>` gives an example program besides the runpodkit:* keys:
 * a local value for each setting the program requires that the local service can take (a made-up
 * token or registry password: nothing leaves the machine), and the user's own through
 * `--config key=value`. A required setting with no local value (gitops' image repository, where
 * Docker pushes) is refused before anything is built, naming the flag that passes it; before, the
 * deploy failed after the build and install with Pulumi's "Missing required configuration variable",
 * whose advice (`pulumi config set`) a user of `npm start` cannot follow.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

export interface ConfigValue {
  value: string;
  secret?: boolean;
}

/** One setting an example's program requires (`config.require*`). */
export interface RequiredSetting {
  key: string;
  secret: boolean;
  /** A value that works on the local service; none: the user must give one (`why` says so). */
  local?: () => string;
  why?: string;
}

const localSecret = () => `local-${randomBytes(12).toString("hex")}`;

/** Each deployable example's required settings (test/scripts/example-settings.test.ts reads the programs to keep this whole). */
export const REQUIRED_SETTINGS: Readonly<Record<string, readonly RequiredSetting[]>> = {
  "secrets-cpu": [{ key: "apiToken", secret: true, local: localSecret }],
  "private-model": [
    { key: "registryUsername", secret: false, local: () => "local-user" },
    { key: "registryPassword", secret: true, local: localSecret },
  ],
  gitops: [
    {
      key: "imageRepository",
      secret: false,
      why: "where `docker build` and `docker push` put the worker image (a registry you are logged in to); see examples/gitops/README.md",
    },
  ],
};

/**
 * Examples npm start's engine cannot deploy, and what to do instead. Its engine runs dynamic providers
 * only; gitops' build and smoke test are @pulumi/command resources (a plugin the Pulumi CLI runs), so
 * `npm start -- --example gitops` used to build and install it, then fail the deploy with "unknown
 * function command:local:run" (or UNSUPPORTED_RESOURCE), whatever the user had installed.
 */
export const NOT_ON_NPM_START: Readonly<Record<string, string>> = {
  gitops:
    "examples/gitops needs the Pulumi CLI: its image build and smoke test are @pulumi/command commands, a provider plugin the Pulumi CLI runs and npm start's engine cannot (it runs dynamic providers only). Deploy it with `pulumi up` (examples/gitops/README.md, which also says which of its parts the tests run without the CLI)",
};

/** `npm start` could not be given the example or its settings: what to type instead. */
export class MainJobUsageError extends Error {
  readonly code = "USAGE";
  constructor(message: string) {
    super(message);
    this.name = "MainJobUsageError";
  }
}

/** The examples that are Pulumi programs (a Pulumi.yaml), by folder name, sorted. */
export function deployableExamples(examplesDir: string): string[] {
  return readdirSync(examplesDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(examplesDir, entry.name, "Pulumi.yaml")))
    .map((entry) => entry.name)
    .sort();
}

/** The longest setting key or value `--config` takes (a Pulumi config key is short; bounded input). */
const MAX_KEY = 100;
const MAX_VALUE = 4_096;

/**
 * The config the example's stack gets besides runpodkit:*: local values for its required settings,
 * then what `--config key=value` gave (later wins). Refuses an example that is not a Pulumi program
 * or that the engine cannot run, a malformed `--config`, and a required setting left without a value.
 */
export function exampleConfig(
  examplesDir: string,
  example: string,
  given: readonly string[],
): Record<string, ConfigValue> {
  const examples = deployableExamples(examplesDir);
  if (!examples.includes(example)) {
    const runnable = examples.filter((name) => NOT_ON_NPM_START[name] === undefined);
    throw new MainJobUsageError(
      `--example ${JSON.stringify(example.slice(0, MAX_KEY))} is not a Pulumi program under examples/: give one of ${runnable.join(", ")} (examples/jobs and examples/handlers are not deployed; the quickstart runs examples/jobs)`,
    );
  }
  const refused = NOT_ON_NPM_START[example];
  if (refused !== undefined) throw new MainJobUsageError(refused);
  const required = REQUIRED_SETTINGS[example] ?? [];
  const config: Record<string, ConfigValue> = {};
  for (const setting of required) {
    if (setting.local) config[setting.key] = { value: setting.local(), secret: setting.secret };
  }
  for (const pair of given) {
    const at = pair.indexOf("=");
    const key = at < 0 ? pair : pair.slice(0, at);
    if (at <= 0 || !/^[A-Za-z][\w.-]*(:[A-Za-z][\w.-]*)?$/.test(key) || key.length > MAX_KEY) {
      throw new MainJobUsageError(
        `--config ${JSON.stringify(pair.slice(0, MAX_KEY))}: give a setting as key=value, e.g. --config ${required[0]?.key ?? "imageName"}=<value>`,
      );
    }
    if (key.startsWith("runpodkit:")) {
      throw new MainJobUsageError(
        `--config ${key}: npm start sets the runpodkit:* keys itself, to its own local service and a fresh key; give the example's own settings only`,
      );
    }
    const value = pair.slice(at + 1);
    if (value.length > MAX_VALUE) {
      throw new MainJobUsageError(`--config ${key}: the value is longer than ${MAX_VALUE} characters`);
    }
    const secret = required.find((setting) => setting.key === key)?.secret ?? false;
    config[key] = { value, secret };
  }
  const missing = required.filter((setting) => config[setting.key] === undefined);
  if (missing.length > 0) {
    const flags = missing.map((setting) => `--config ${setting.key}=<value>`).join(" ");
    const whys = missing.map((setting) => `${setting.key}: ${setting.why ?? "required by the program"}`);
    throw new MainJobUsageError(
      `examples/${example} needs ${missing.map((setting) => setting.key).join(", ")}, which has no local value: run npm start -- --example ${example} ${flags} (${whys.join("; ")})`,
    );
  }
  return config;
}
