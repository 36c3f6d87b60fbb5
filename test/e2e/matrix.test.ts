/**
 * The compatibility matrix (issue 8): the package packed once, installed into a copy of the quickstart
 * by each supported package manager (npm, pnpm, yarn classic, yarn berry with the node-modules linker)
 * from the npm registry, then deployed and destroyed through the test engine against the local service;
 * and the npm install on the lowest supported Node (the npm `node` package first on PATH, so the
 * program and Pulumi's provider host run on it). docs/installation-configuration.md "Supported Node versions and package
 * managers" states what this proves.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { lstat, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LocalStack } from "../../engine/engine";
import {
  installNode,
  installProgram,
  type PackageManager,
  type PackedPackage,
  PROJECT_ROOT,
  packProject,
  programWithout,
} from "../../engine/package";
import { LOWEST_NODE } from "./support/node-versions";
import { outputString } from "./support/scenario";
import { type ServiceFixture, startServiceFixture } from "./support/service";

interface Row {
  manager: PackageManager;
  /** Run on the lowest supported Node instead of the `node` on PATH. */
  lowestNode?: boolean;
  /** How the manager lays out node_modules/runpodkit. */
  layout: "folder" | "symlink";
  /**
   * The program without its ts-node devDependency: Pulumi then type-checks it with its own ts-node 7,
   * which does not follow pnpm's symlinks (runpodkit's declarations need none of its dependencies).
   */
  withoutTsNode?: boolean;
}

const ROWS: Row[] = [
  { manager: "npm", layout: "folder" },
  { manager: "pnpm", layout: "symlink", withoutTsNode: true },
  { manager: "yarn-classic", layout: "folder" },
  { manager: "yarn-berry", layout: "folder" },
  { manager: "npm", lowestNode: true, layout: "folder" },
];
const EXAMPLE = join(PROJECT_ROOT, "examples", "quickstart");
/** A first install downloads the program's ~300 packages; a deployment type-checks the program. */
const ROW_TIMEOUT = 300_000;

describe("compatibility matrix: the packed quickstart installed, deployed and destroyed", () => {
  let pkg: PackedPackage;
  let svc: ServiceFixture;
  let lowest = "";
  let workDir = "";

  beforeAll(async () => {
    pkg = await packProject();
    lowest = await installNode(LOWEST_NODE);
    svc = await startServiceFixture();
    workDir = await mkdtemp(join(tmpdir(), "runpodkit-matrix-"));
  }, ROW_TIMEOUT);

  afterAll(async () => {
    await svc?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  for (const row of ROWS) {
    const node = row.lowestNode ? `Node ${LOWEST_NODE}` : "the node on PATH";
    test(
      `${row.manager} on ${node}${row.withoutTsNode ? ", the program without ts-node of its own" : ""}`,
      async () => {
        const example = row.withoutTsNode ? await programWithout(EXAMPLE, workDir, "ts-node") : EXAMPLE;
        const program = await installProgram(example, pkg, row.manager);
        expect(existsSync(join(program.dir, "node_modules", "ts-node"))).toBe(!row.withoutTsNode);
        const installed = await lstat(join(program.dir, "node_modules", "runpodkit"));
        expect(installed.isSymbolicLink() ? "symlink" : "folder").toBe(row.layout);

        const stack = await LocalStack.open({
          programDir: program.dir,
          stackName: `${row.manager}${row.lowestNode ? "-lowest" : ""}`,
          stateDir: join(workDir, "state"),
          passphrase: randomBytes(12).toString("hex"),
          ...(row.lowestNode
            ? { env: { PATH: [dirname(lowest), process.env.PATH ?? ""].join(delimiter) } }
            : {}),
        });
        if (row.lowestNode) expect(stack.node()).toBe(lowest);
        stack.setAllConfig(svc.stackConfig());

        const up = await stack.up();
        expect(up.changes).toEqual({ create: 3 });
        const endpointId = outputString(up.outputs, "endpointId");
        const templateId = outputString(up.outputs, "templateId");
        expect(await svc.rest.endpoints.get(endpointId)).toMatchObject({ templateId, workersMax: 2 });
        expect(await svc.rest.templates.get(templateId)).toMatchObject({ imageName: "runpodkit/echo:1.0" });
        // The provider host loaded the installed package by package path.
        expect(await stack.exportState()).toContain("runpodkit/dist/provider/endpoint-provider");

        expect((await stack.destroy()).changes).toEqual({ delete: 3 });
        expect(await svc.rest.endpoints.list()).toEqual([]);
        expect(await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).toEqual([]);
      },
      ROW_TIMEOUT,
    );
  }
});
