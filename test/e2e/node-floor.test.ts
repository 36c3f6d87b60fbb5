/**
 * The Node.js floor (issue 8): package.json `engines.node` is the range the package's runtime
 * dependencies admit (undici 8 needs >= 22.19), and on an older Node every entry point of the packed,
 * installed package fails with one line naming the required version, before undici is loaded. On the
 * lowest supported Node the same entries load.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import semver from "semver";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import which from "which";
import { LocalStack } from "../../engine/engine";
import { installNode, installProgram, PROJECT_ROOT, packProject } from "../../engine/package";
import { SUPPORTED_NODE, unsupportedNodeMessage } from "../../sdk/node-guard";
import { LOWEST_NODE } from "./support/node-versions";

/** Installed from npm when the machine has no Node older than the floor outside node_modules. */
const BELOW_FLOOR = "22.18.0";
const SETUP_TIMEOUT = 300_000;
/** Each test starts Node a dozen times, or a Pulumi program, on a machine that may be busy. */
const TEST_TIMEOUT = 180_000;

const manifest = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as {
  engines: { node: string };
};

/** Each entry a user reaches: the package's exports, the provider modules the provider host loads. */
const ENTRIES = [
  "runpodkit",
  "runpodkit/sdk",
  "runpodkit/service",
  "runpodkit/worker",
  "runpodkit/dist/provider/template-provider",
  "runpodkit/dist/provider/endpoint-provider",
  "runpodkit/dist/provider/network-volume-provider",
  "runpodkit/dist/provider/container-registry-auth-provider",
  "runpodkit/dist/provider/secret-provider",
  "runpodkit/dist/provider/pod-provider",
];

function nodeVersion(binary: string): string {
  return spawnSync(binary, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout.trim();
}

/** The first `node` on PATH outside any node_modules (npm scripts put Node 24 first) that is too old. */
function systemNodeBelowFloor(): string | undefined {
  const path = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((dir) => !dir.split(/[\\/]/).includes("node_modules"))
    .join(delimiter);
  const found = which.sync("node", { path, all: true, nothrow: true }) ?? [];
  return found.find((binary) => !semver.satisfies(nodeVersion(binary), SUPPORTED_NODE));
}

/** Node 22 warns once per process that node:sqlite (the service's store) is experimental; Node 24 does not. */
function withoutSqliteWarning(stderr: string): string {
  return stderr
    .split("\n")
    .filter((line) => !/ExperimentalWarning: SQLite is an experimental feature|--trace-warnings/.test(line))
    .join("\n");
}

/** The undici version runpodkit itself resolves (the program may hold another copy for other packages). */
function undiciOfRunpodkit(programDir: string): string {
  const fromRunpodkit = createRequire(join(programDir, "node_modules", "runpodkit", "package.json"));
  const path = fromRunpodkit.resolve("undici/package.json");
  return (JSON.parse(readFileSync(path, "utf8")) as { version: string }).version;
}

describe("the Node.js floor", () => {
  let programDir = "";
  let oldNode = "";
  let lowestNode = "";
  let scratch = "";

  beforeAll(async () => {
    const pkg = await packProject();
    programDir = (await installProgram(join(PROJECT_ROOT, "examples", "quickstart"), pkg)).dir;
    oldNode = systemNodeBelowFloor() ?? (await installNode(BELOW_FLOOR));
    lowestNode = await installNode(LOWEST_NODE);
    scratch = await mkdtemp(join(tmpdir(), "runpodkit-node-floor-"));
  }, SETUP_TIMEOUT);

  afterAll(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  const run = (node: string, args: string[]) =>
    spawnSync(node, args, { cwd: programDir, encoding: "utf8", env: { PATH: process.env.PATH ?? "" } });

  test(
    "package.json engines.node is the guard's range, admitted by every installed runtime package",
    () => {
      expect(manifest.engines.node).toBe(SUPPORTED_NODE);
      expect(semver.minVersion(SUPPORTED_NODE)?.version).toBe(LOWEST_NODE);
      // Every package of the installed program's production tree, nested copies included.
      const listed = spawnSync("npm", ["ls", "--all", "--parseable", "--omit=dev"], {
        cwd: programDir,
        encoding: "utf8",
      });
      const dirs = listed.stdout.trim().split("\n").slice(1);
      expect(dirs.length).toBeGreaterThan(100);
      const engines = new Map<string, string>();
      for (const dir of dirs) {
        const dep = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
          name: string;
          version: string;
          engines?: { node?: string };
        };
        const range = dep.engines?.node;
        if (range && semver.validRange(range)) engines.set(`${dep.name}@${dep.version}`, range);
      }
      const narrower = [...engines].filter(([, range]) => !semver.subset(SUPPORTED_NODE, range));
      expect(narrower).toEqual([]);
      // The floor is not lower than needed: a dependency of runpodkit requires exactly it (undici 8).
      const floors = [...engines.values()].map((range) => semver.minVersion(range)?.version ?? "0.0.0");
      expect(floors.sort(semver.compare).at(-1)).toBe(LOWEST_NODE);
      expect(engines.get(`undici@${undiciOfRunpodkit(programDir)}`)).toBe(SUPPORTED_NODE);
    },
    TEST_TIMEOUT,
  );

  test(
    "the guard's message names the required and the running version",
    () => {
      expect(unsupportedNodeMessage("20.20.2")).toBe(
        `runpodkit requires Node.js ${SUPPORTED_NODE} (package.json "engines"); this is Node.js v20.20.2. Install a supported Node.js and run again.`,
      );
      expect(unsupportedNodeMessage("22.18.0")).toContain(SUPPORTED_NODE);
      expect(unsupportedNodeMessage(LOWEST_NODE)).toBeUndefined();
      expect(unsupportedNodeMessage("24.21.0")).toBeUndefined();
    },
    TEST_TIMEOUT,
  );

  test(
    "on an older Node each entry and the CLI fail with that one line",
    () => {
      const version = nodeVersion(oldNode);
      expect(semver.satisfies(version, SUPPORTED_NODE)).toBe(false);
      const line = `${unsupportedNodeMessage(version)}\n`;
      for (const entry of ENTRIES) {
        const result = run(oldNode, ["-e", `require(${JSON.stringify(entry)})`]);
        expect({ entry, status: result.status, stderr: result.stderr, stdout: result.stdout }).toEqual({
          entry,
          status: 1,
          stderr: line,
          stdout: "",
        });
      }
      const cli = run(oldNode, [join("node_modules", ".bin", "runpodkit"), "--help"]);
      expect({ status: cli.status, stderr: cli.stderr, stdout: cli.stdout }).toEqual({
        status: 1,
        stderr: line,
        stdout: "",
      });
    },
    TEST_TIMEOUT,
  );

  test(
    "a Pulumi program importing runpodkit on an older Node stops with that line and nothing else",
    async () => {
      const stack = await LocalStack.open({
        programDir,
        stackName: "old-node",
        stateDir: join(scratch, "state"),
        passphrase: "unused",
        node: oldNode,
      });
      const line = unsupportedNodeMessage(nodeVersion(oldNode));
      await expect(stack.preview()).rejects.toMatchObject({ code: "PROGRAM_FAILED" });
      expect(stack.logs.map((entry) => entry.message)).toEqual([line]);
      expect(stack.providerCalls).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  test(
    "on the lowest supported Node every entry loads and the CLI answers",
    () => {
      expect(nodeVersion(lowestNode)).toBe(LOWEST_NODE);
      for (const entry of ENTRIES) {
        const result = run(lowestNode, ["-e", `require(${JSON.stringify(entry)})`]);
        expect({ entry, status: result.status, stderr: withoutSqliteWarning(result.stderr) }).toEqual({
          entry,
          status: 0,
          stderr: "",
        });
      }
      const bin = join("node_modules", ".bin", "runpodkit");
      const cli = run(lowestNode, [bin, "--help"]);
      expect(cli.status).toBe(0);
      expect(cli.stdout).toMatch(/^usage: RUNPODKIT_API_KEYS=\S+ runpodkit \[serve\] \[--port <p>\]/);
      // Only serve opens a store: the other commands do not load node:sqlite, so Node 22 prints no
      // "ExperimentalWarning: SQLite" for them (it did, for --help and each `runpodkit logs`).
      expect(cli.stderr).toBe("");
      const version = run(lowestNode, [bin, "--version"]);
      expect({ status: version.status, stdout: version.stdout, stderr: version.stderr }).toEqual({
        status: 0,
        stdout: `runpodkit ${(JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as { version: string }).version}\n`,
        stderr: "",
      });
      const logs = spawnSync(lowestNode, [bin, "logs", "abc", "--url", "http://127.0.0.1:9/v2"], {
        cwd: programDir,
        encoding: "utf8",
        env: { PATH: process.env.PATH ?? "", RUNPOD_API_KEY: "k" },
      });
      expect(logs.status).toBe(1);
      expect(logs.stderr).toMatch(
        /^runpodkit: logs: cannot reach the service at http:\/\/127\.0\.0\.1:9\/v2: /,
      );
      expect(logs.stderr).not.toContain("ExperimentalWarning");
    },
    TEST_TIMEOUT,
  );
});
