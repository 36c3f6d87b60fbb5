/**
 * GitOps: every commit deploys itself.
 *   1. build-and-push (a local command) builds worker/ into `<imageRepository>:<commit>` and pushes it;
 *      its trigger is the commit, so it runs again only when the commit changes;
 *   2. the Template's image is the tag that command reports it pushed, so the template follows it;
 *   3. the Endpoint runs that template (a new image is a rolling release of the endpoint);
 *   4. smoke-test (a local command, after the endpoint) submits a job and checks that the answer
 *      comes from this commit's image; a failure fails the `pulumi up`.
 * `pulumi preview` runs no command (only `git rev-parse` when gitCommit is not set); `pulumi up` runs
 * them. Command paths are relative to this folder (the commands' working directory), so the state
 * holds no machine-specific path.
 */
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { Endpoint, Template } from "runpodkit";

const config = new pulumi.Config();

// Both settings end up in the image reference `docker build` tags. Checked here, when the program runs,
// so a value Docker refuses fails the pull request's preview (which runs no command), not the up on main.
const DOMAIN_PART = "[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?";
const DOMAIN = new RegExp(`^${DOMAIN_PART}(?:\\.${DOMAIN_PART})*(?::[0-9]+)?$`);
const PATH_PART = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const COMMIT = /^[0-9a-f]{7,64}$/;

/** Docker's repository grammar: an optional registry host (it has a dot or a port, or is localhost), then lowercase path parts. */
function imageRepository(value: string): string {
  const parts = value.split("/");
  const first = parts[0] ?? "";
  const hasRegistry = parts.length > 1 && (/[.:]/.test(first) || first === "localhost");
  const path = hasRegistry ? parts.slice(1) : parts;
  if (value.length > 255 || (hasRegistry && !DOMAIN.test(first)) || !path.every((p) => PATH_PART.test(p)))
    throw new pulumi.RunError(
      `imageRepository: ${JSON.stringify(value.slice(0, 300))} is not an image repository Docker accepts: at most 255 characters, lowercase, without a tag or digest (the commit is the tag), e.g. ghcr.io/acme/worker`,
    );
  return value;
}

/** A commit id, the image's tag: `git rev-parse HEAD` prints one; a branch name or a ref is refused. */
function commitId(value: string, from: string): string {
  if (!COMMIT.test(value))
    throw new pulumi.RunError(
      `${from}: must be a commit id (7 to 64 lowercase hex digits, e.g. $GITHUB_SHA), got ${JSON.stringify(value.slice(0, 100))}`,
    );
  return value;
}

/** Where the image goes, without a tag, e.g. ghcr.io/acme/worker. */
const repository = imageRepository(config.require("imageRepository"));

/** The commit to deploy: CI passes it (gitCommit = $GITHUB_SHA); otherwise the checkout's HEAD. */
const configuredCommit = config.get("gitCommit");
const commit: pulumi.Output<string> = configuredCommit
  ? pulumi.output(commitId(configuredCommit, "gitCommit"))
  : command.local
      .runOutput({ command: "git rev-parse HEAD", dir: "." })
      .apply((run) => commitId((run.stdout ?? "").trim(), "git rev-parse HEAD"));

const image = pulumi.interpolate`${repository}:${commit}`;

// Values reach the shell as environment variables, never spliced into the command text. Docker's own
// output goes to stderr; stdout is the pushed reference alone, which the template reads.
const buildAndPush = new command.local.Command("build-and-push", {
  dir: "worker",
  create: [
    'docker build --build-arg GIT_COMMIT="$GIT_COMMIT" --tag "$IMAGE" . 1>&2',
    'docker push "$IMAGE" 1>&2',
    'echo "$IMAGE"',
  ].join(" && "),
  environment: { IMAGE: image, GIT_COMMIT: commit },
  triggers: [commit],
});

/** The tag the command pushed (its last stdout line): unknown in a preview that will rebuild. */
export const pushedImage = buildAndPush.stdout.apply((out) => out.trim().split("\n").at(-1) ?? "");

const template = new Template("worker", {
  imageName: pushedImage,
  isServerless: true,
  // A private registry: create a ContainerRegistryAuth and pass its id here.
  containerRegistryAuthId: config.get("registryAuthId"),
});

const endpoint = new Endpoint("worker", {
  templateId: template.id,
  gpuIds: config.get("gpuIds") ?? "AMPERE_16",
  workersMin: 0,
  workersMax: config.getNumber("workersMax") ?? 2,
  idleTimeout: 5,
});

/** The key the smoke test sends: runpodkit:apiKey when set, else RUNPOD_API_KEY from the environment. */
const apiKey = new pulumi.Config("runpodkit").getSecret("apiKey");

const smokeTest = new command.local.Command(
  "smoke-test",
  {
    dir: ".",
    create: "npx --no-install tsx smoke-test.ts",
    environment: {
      ENDPOINT_URL: endpoint.url,
      EXPECT_COMMIT: commit,
      ...(apiKey ? { RUNPOD_API_KEY: apiKey } : {}),
    },
    // Again after every release of the endpoint (its version moves with the template's image).
    triggers: [endpoint.version, template.imageName],
  },
  { dependsOn: [endpoint] },
);

export const templateId = template.id;
export const endpointId = endpoint.id;
export const endpointUrl = endpoint.url;
/** What the smoke test printed: the job id, its status and the commit that answered. */
export const smokeTestResult = smokeTest.stdout;
