/**
 * Yarn berry's default linker, Plug'n'Play (no node_modules; packages read from zip archives through
 * .pnp.cjs): `yarn runpodkit` serves a handler of the project, and its worker processes, which get
 * no NODE_OPTIONS, load the runtime from the archive through the same PnP runtime and run the job.
 * (Pulumi programs themselves need node_modules: docs/installation-configuration.md "Supported Node versions
 * and package managers".)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { installProgram, packProject, yarnBerryScript } from "../../engine/package";
import { JobClient, RestClient } from "../../sdk";

const FIXTURE = join(__dirname, "fixtures", "pnp-worker");
const KEY = "pnp-worker-key";
const TIMEOUT = 300_000;

describe("Yarn Plug'n'Play: the CLI of the installed package runs a handler's workers", () => {
  let dir = "";
  let cli: ChildProcess | undefined;

  beforeAll(async () => {
    dir = (await installProgram(FIXTURE, await packProject(), "yarn-berry-pnp")).dir;
  }, TIMEOUT);

  afterAll(() => {
    // Its own process group: yarn runs the bin in a child of its own.
    if (cli?.pid) process.kill(-cli.pid, "SIGKILL");
  });

  test(
    "a job sent to the endpoint completes, run by a worker under PnP",
    async () => {
      expect({
        pnp: existsSync(join(dir, ".pnp.cjs")),
        nodeModules: existsSync(join(dir, "node_modules")),
      }).toEqual({
        pnp: true,
        nodeModules: false,
      });
      const child = spawn(
        process.execPath,
        [
          yarnBerryScript(),
          "runpodkit",
          "--port",
          "0",
          "--data",
          ":memory:",
          "--handler",
          "acme/pnp=handler.mjs",
        ],
        {
          cwd: dir,
          detached: true,
          env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? dir, RUNPODKIT_API_KEYS: KEY },
        },
      );
      cli = child;
      let output = "";
      const queue = await new Promise<string>((resolve, reject) => {
        const read = (chunk: Buffer) => {
          output += chunk.toString();
          const found = /queue=(\S+)/.exec(output)?.[1];
          if (found) resolve(found);
        };
        child.stdout?.on("data", read);
        child.stderr?.on("data", read);
        child.once("exit", (code) =>
          reject(new Error(`yarn runpodkit exited (${code}) before it was ready:\n${output}`)),
        );
      });
      const rest = new RestClient({ apiKey: KEY, baseUrl: `${queue}/v1` });
      const template = await rest.templates.create({
        name: "pnp",
        imageName: "acme/pnp:1",
        isServerless: true,
      });
      const endpoint = await rest.endpoints.create({ name: "pnp", templateId: template.id, workersMax: 1 });
      const jobs = new JobClient({ apiKey: KEY, endpointId: endpoint.id, baseUrl: `${queue}/v2` });
      const { id } = await jobs.run({ input: { text: "hi" } });
      const done = await jobs.waitFor(id, { timeoutMs: 60_000 });
      expect({ status: done.status, output: done.output }).toEqual({
        status: "COMPLETED",
        output: { echoed: { text: "hi" }, pnp: true },
      });
      expect(output).not.toContain("exited unexpectedly");
    },
    TIMEOUT,
  );
});
