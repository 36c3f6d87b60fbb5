/**
 * `@pulumi/pulumi` is an optional peer dependency of the packed package (docs/installation-configuration.md "Supported Node
 * versions and package managers"): a project that uses only the SDK, the worker runtime, the local
 * service or the CLI installs no Pulumi (nor protobufjs, whose install script pnpm 11 stops on), and
 * its import of the resources stops with one line saying what to install; a Pulumi project's one copy
 * of @pulumi/pulumi, at any version of the range, is the copy runpodkit uses (npm and pnpm), deployed
 * and destroyed through the engine.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LocalStack } from "../../engine/engine";
import {
  installProgram,
  type PackageManager,
  type PackedPackage,
  PROJECT_ROOT,
  packProject,
  programWithout,
  yarnBerryScript,
} from "../../engine/package";
import {
  MISSING_PULUMI_MESSAGE,
  SUPPORTED_PULUMI,
  unsupportedPulumiMessage,
} from "../../provider/pulumi-guard";
import { outputString } from "./support/scenario";
import { type ServiceFixture, startServiceFixture } from "./support/service";

const SDK_ONLY = join(__dirname, "fixtures", "sdk-only");
const PINNED = join(__dirname, "fixtures", "pinned-pulumi");
const OLD = join(__dirname, "fixtures", "old-pulumi");
/** A first install downloads the program's packages; a deployment type-checks the program. */
const TEST_TIMEOUT = 300_000;

/** The realpath of the package.json of `name` as Node resolves it from the file `from`. */
function resolvedManifest(from: string, name: string): string {
  return realpathSync(createRequire(realpathSync(from)).resolve(`${name}/package.json`));
}

/** Every package folder npm finds in the production tree (nested copies included), relative names. */
function productionPackages(dir: string): string[] {
  const listed = spawnSync("npm", ["ls", "--all", "--parseable", "--omit=dev"], {
    cwd: dir,
    encoding: "utf8",
  });
  expect(listed.status).toBe(0);
  return listed.stdout
    .trim()
    .split("\n")
    .slice(1)
    .map((path) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length));
}

/** runpodkit/sdk, /worker and /service load in the installed project, with nothing on stderr. */
function expectEntriesLoadWithoutPulumi(dir: string): void {
  for (const entry of ["runpodkit/sdk", "runpodkit/worker", "runpodkit/service"]) {
    const result = spawnSync(process.execPath, ["-e", `require(${JSON.stringify(entry)})`], {
      cwd: dir,
      encoding: "utf8",
    });
    expect({ entry, status: result.status, stderr: result.stderr }).toEqual({ entry, status: 0, stderr: "" });
  }
}

describe("@pulumi/pulumi as an optional peer dependency of the installed package", () => {
  let pkg: PackedPackage;
  let svc: ServiceFixture;
  let workDir = "";
  let cli: ChildProcess | undefined;

  beforeAll(async () => {
    pkg = await packProject();
    svc = await startServiceFixture();
    workDir = await mkdtemp(join(tmpdir(), "runpodkit-peer-pulumi-"));
  }, TEST_TIMEOUT);

  afterAll(async () => {
    cli?.kill();
    await svc?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  test("the guard's range is package.json's peer range, and its messages say what to install", () => {
    const manifest = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as {
      peerDependencies: Record<string, string>;
      peerDependenciesMeta: Record<string, { optional?: boolean }>;
      devDependencies: Record<string, string>;
    };
    expect(manifest.peerDependencies).toEqual({ "@pulumi/pulumi": SUPPORTED_PULUMI });
    expect(manifest.peerDependenciesMeta).toEqual({ "@pulumi/pulumi": { optional: true } });
    expect(manifest.devDependencies["@pulumi/pulumi"]).toBeDefined();
    expect(unsupportedPulumiMessage("3.139.0")).toBeUndefined();
    expect(unsupportedPulumiMessage("3.276.0")).toBeUndefined();
    expect(unsupportedPulumiMessage("3.138.0")).toBe(
      'runpodkit: the Pulumi resources (import "runpodkit") need @pulumi/pulumi ^3.139.0 (package.json "peerDependencies"); this project has 3.138.0: run `npm install @pulumi/pulumi@^3` in your Pulumi project.',
    );
    expect(unsupportedPulumiMessage("4.0.0")).toContain("this project has 4.0.0");
    expect(MISSING_PULUMI_MESSAGE).toContain("run `npm install @pulumi/pulumi` in your Pulumi project");
  });

  test(
    "a project with @pulumi/pulumi below the range: npm refuses to install it, and under pnpm (a warning) `runpodkit` says what to install, a TypeScript program too",
    async () => {
      await expect(installProgram(OLD, pkg)).rejects.toThrow(
        /ERESOLVE[\s\S]*peerOptional @pulumi\/pulumi@"\^3\.139\.0"/,
      );
      const { dir } = await installProgram(OLD, pkg, "pnpm");
      const resources = spawnSync(process.execPath, ["-e", 'require("runpodkit")'], {
        cwd: dir,
        encoding: "utf8",
      });
      expect({ status: resources.status, stderr: resources.stderr, stdout: resources.stdout }).toEqual({
        status: 1,
        stderr: `${unsupportedPulumiMessage("3.100.0")}\n`,
        stdout: "",
      });
      // A TypeScript program there: Pulumi 3.100 type-checks it with its own ts-node 7 (the project's
      // ts-node 10 notwithstanding), which does not follow pnpm's symlinks; the resources' types need
      // none of runpodkit's dependencies, so the check passes and the program stops on the same line.
      const stack = await LocalStack.open({
        programDir: dir,
        stackName: "old-pulumi",
        stateDir: join(workDir, "state-old"),
        passphrase: randomBytes(12).toString("hex"),
      });
      stack.setAllConfig(svc.stackConfig());
      await expect(stack.up()).rejects.toThrow("program exited with code 1");
      // The guard's one line, on the program's stderr; no type error before it.
      const printed = stack.logs.filter((entry) => entry.source === "program").map((entry) => entry.message);
      expect(printed).toEqual([unsupportedPulumiMessage("3.100.0")]);
      expect(await svc.rest.templates.list()).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  test(
    "an SDK-only npm project installs no Pulumi, `npm ls` is clean, its entries and types load, `runpodkit` says what to install",
    async () => {
      const { dir } = await installProgram(SDK_ONLY, pkg);
      const packages = productionPackages(dir);
      // runpodkit's own dependencies only: 189 packages with @pulumi/pulumi as a dependency.
      expect(packages.length).toBeLessThan(100);
      expect(packages.filter((name) => /^@pulumi\/|^@grpc\/|^protobufjs$/.test(name))).toEqual([]);
      expect(existsSync(join(dir, "node_modules", "@pulumi"))).toBe(false);
      const ls = spawnSync("npm", ["ls", "--all"], { cwd: dir, encoding: "utf8" });
      expect({ status: ls.status, stderr: ls.stderr }).toEqual({ status: 0, stderr: "" });
      // The one line npm prints for an optional peer left out, as it should be: no error, exit 0.
      expect(ls.stdout.split("\n").filter((line) => /UNMET|invalid|missing|extraneous/i.test(line))).toEqual([
        expect.stringMatching(/UNMET OPTIONAL DEPENDENCY @pulumi\/pulumi@\^3\.139\.0$/),
      ]);

      const tsc = spawnSync(process.execPath, [join("node_modules", "typescript", "bin", "tsc"), "-p", "."], {
        cwd: dir,
        encoding: "utf8",
      });
      expect({ status: tsc.status, errors: tsc.stdout.trim() }).toEqual({ status: 0, errors: "" });

      expectEntriesLoadWithoutPulumi(dir);
      const resources = spawnSync(process.execPath, ["-e", 'require("runpodkit")'], {
        cwd: dir,
        encoding: "utf8",
      });
      expect({ status: resources.status, stderr: resources.stderr, stdout: resources.stdout }).toEqual({
        status: 1,
        stderr: `${MISSING_PULUMI_MESSAGE}\n`,
        stdout: "",
      });
    },
    TEST_TIMEOUT,
  );

  test(
    "the CLI of the SDK-only project names its version and serves the local service",
    async () => {
      const { dir } = await installProgram(SDK_ONLY, pkg);
      const version = spawnSync(process.execPath, [join("node_modules", ".bin", "runpodkit"), "--version"], {
        cwd: dir,
        encoding: "utf8",
      });
      expect({ status: version.status, stdout: version.stdout, stderr: version.stderr }).toEqual({
        status: 0,
        stdout: `runpodkit ${pkg.version}\n`,
        stderr: "",
      });
      const key = `rpk_peer_${randomBytes(8).toString("hex")}`;
      const child = spawn(
        process.execPath,
        [join("node_modules", ".bin", "runpodkit"), "serve", "--port", "0", "--data", ":memory:"],
        { cwd: dir, env: { PATH: process.env.PATH ?? "", RUNPODKIT_API_KEYS: key } },
      );
      cli = child;
      const restUrl = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout?.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          const match = /ready: rest=(\S+)/.exec(out);
          if (match?.[1]) resolve(match[1]);
        });
        child.once("exit", (code) => reject(new Error(`runpodkit serve exited ${code}: ${out}`)));
      });
      const reply = await fetch(`${restUrl}/endpoints`, { headers: { authorization: `Bearer ${key}` } });
      expect({ status: reply.status, body: await reply.json() }).toEqual({ status: 200, body: [] });
      child.kill();
    },
    TEST_TIMEOUT,
  );

  test(
    "an SDK-only pnpm project installs no Pulumi and no build script to approve",
    async () => {
      const { dir } = await installProgram(SDK_ONLY, pkg, "pnpm");
      const store = readdirSync(join(dir, "node_modules", ".pnpm"));
      expect(store.filter((name) => /^@pulumi\+|^@grpc\+|^protobufjs@/.test(name))).toEqual([]);
      expect(store.filter((name) => name.startsWith("runpodkit@"))).toHaveLength(1);
      expectEntriesLoadWithoutPulumi(dir);
    },
    TEST_TIMEOUT,
  );

  test(
    "an SDK-only yarn Plug'n'Play project: the entries load, `runpodkit` says what to install (PnP's own resolution error)",
    async () => {
      const { dir } = await installProgram(SDK_ONLY, pkg, "yarn-berry-pnp");
      const load = (entry: string) =>
        spawnSync(process.execPath, [yarnBerryScript(), "node", "-e", `require(${JSON.stringify(entry)})`], {
          cwd: dir,
          encoding: "utf8",
        });
      for (const entry of ["runpodkit/sdk", "runpodkit/worker", "runpodkit/service"]) {
        const result = load(entry);
        expect({ entry, status: result.status, stderr: result.stderr }).toEqual({
          entry,
          status: 0,
          stderr: "",
        });
      }
      const resources = load("runpodkit");
      expect({ status: resources.status, stderr: resources.stderr }).toEqual({
        status: 1,
        stderr: `${MISSING_PULUMI_MESSAGE}\n`,
      });
    },
    TEST_TIMEOUT,
  );

  for (const manager of ["npm", "pnpm"] as PackageManager[]) {
    test(
      `a Pulumi project pinning @pulumi/pulumi at the range's floor (${manager}): runpodkit uses the program's one copy; deploy and destroy`,
      async () => {
        const { dir } = await installProgram(PINNED, pkg, manager);
        const programCopy = resolvedManifest(join(dir, "package.json"), "@pulumi/pulumi");
        const runpodkitCopy = resolvedManifest(
          join(dir, "node_modules", "runpodkit", "package.json"),
          "@pulumi/pulumi",
        );
        expect(runpodkitCopy).toBe(programCopy);
        expect((JSON.parse(readFileSync(programCopy, "utf8")) as { version: string }).version).toBe(
          "3.139.0",
        );
        if (manager === "npm") {
          expect(productionPackages(dir).filter((name) => name.endsWith("@pulumi/pulumi"))).toEqual([
            "@pulumi/pulumi",
          ]);
          const ls = spawnSync("npm", ["ls", "--all"], { cwd: dir, encoding: "utf8" });
          expect({ status: ls.status, stderr: ls.stderr }).toEqual({ status: 0, stderr: "" });
          // runpodkit's .d.ts check against the floor's types too, not only those it was built with.
          const tsc = spawnSync(
            process.execPath,
            [
              join("node_modules", "typescript", "bin", "tsc"),
              "-p",
              ".",
              "--noEmit",
              "--skipLibCheck",
              "false",
            ],
            { cwd: dir, encoding: "utf8" },
          );
          expect({ status: tsc.status, errors: tsc.stdout.trim() }).toEqual({ status: 0, errors: "" });
        } else {
          const copies = readdirSync(join(dir, "node_modules", ".pnpm")).filter((n) =>
            n.startsWith("@pulumi+pulumi@"),
          );
          expect(copies.map((name) => name.split("_")[0])).toEqual(["@pulumi+pulumi@3.139.0"]);
        }
        expect(dirname(programCopy)).toBe(realpathSync(join(dir, "node_modules", "@pulumi", "pulumi")));

        const stack = await LocalStack.open({
          programDir: dir,
          stackName: `pinned-${manager}`,
          stateDir: join(workDir, "state"),
          passphrase: randomBytes(12).toString("hex"),
        });
        stack.setAllConfig(svc.stackConfig());
        const up = await stack.up();
        // The stack, the template, the endpoint, the group and its child template.
        expect(up.changes).toEqual({ create: 5 });
        const endpointId = outputString(up.outputs, "endpointId");
        expect(await svc.rest.endpoints.get(endpointId)).toMatchObject({ workersMax: 2 });
        expect((await stack.destroy()).changes).toEqual({ delete: 5 });
        expect(await svc.rest.endpoints.list()).toEqual([]);
      },
      TEST_TIMEOUT,
    );
  }

  test(
    "pnpm: a TypeScript program without ts-node of its own passes Pulumi's type check and deploys",
    async () => {
      // The pinned program less its ts-node: Pulumi then type-checks with its own ts-node 7, which
      // does not follow pnpm's symlinks, so runpodkit's own dependencies (zod, undici) are out of its
      // reach. The resources' declarations import none of them: Endpoint keeps its outputs.
      const source = await programWithout(PINNED, workDir, "ts-node");
      const { dir } = await installProgram(source, pkg, "pnpm");
      expect(existsSync(join(dir, "node_modules", "ts-node"))).toBe(false);
      const stack = await LocalStack.open({
        programDir: dir,
        stackName: "pinned-without-ts-node",
        stateDir: join(workDir, "state-no-ts-node"),
        passphrase: randomBytes(12).toString("hex"),
      });
      stack.setAllConfig(svc.stackConfig());
      const up = await stack.up();
      expect(up.changes).toEqual({ create: 5 });
      const endpointId = outputString(up.outputs, "endpointId");
      expect(outputString(up.outputs, "endpointUrl")).toMatch(new RegExp(`/v2/${endpointId}$`));
      expect((await stack.destroy()).changes).toEqual({ delete: 5 });
      expect(await svc.rest.endpoints.list()).toEqual([]);
    },
    TEST_TIMEOUT,
  );
});
