/**
 * `pulumi up` at the repository root: the root Pulumi.yaml runs examples/quickstart (its `main`), which
 * imports `runpodkit` from the root's node_modules. In the checkout that is the package linked to
 * itself (`npm ci`) and built (`npm run build`); here, so that no test writes the shared dist/, the
 * root's layout (its Pulumi.yaml and tsconfig.json, examples/quickstart, its Pulumi dependencies) is
 * copied and the packed package installed into its node_modules. Then preview, up and destroy run
 * against the local service through the test engine (and through the Automation API when a `pulumi`
 * CLI is on PATH).
 */
import { randomBytes } from "node:crypto";
import { cp, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { z } from "zod";
import { installProgram, PROJECT_ROOT, packProject } from "../../engine/package";
import { readProject } from "../../engine/project";
import { automationSkipReason, createDriver, type StackDriver } from "./support/drivers";
import { DRIVER_KINDS, outputString } from "./support/scenario";
import { type ServiceFixture, startServiceFixture } from "./support/service";

const Manifest = z.object({
  dependencies: z.record(z.string(), z.string()),
  devDependencies: z.record(z.string(), z.string()),
});

/** A copy of what the root program runs from: everything but the package's own sources. */
async function stageRootLayout(): Promise<string> {
  const manifest = Manifest.parse(JSON.parse(await readFile(join(PROJECT_ROOT, "package.json"), "utf8")));
  // A fixed folder name inside a fresh temp dir: the install cache is keyed by name and content.
  const stage = join(await mkdtemp(join(tmpdir(), "runpodkit-root-")), "root-program");
  await cp(join(PROJECT_ROOT, "examples", "quickstart"), join(stage, "examples", "quickstart"), {
    recursive: true,
    filter: (src) => !src.includes("node_modules"),
  });
  for (const file of ["Pulumi.yaml", "tsconfig.json"]) await cp(join(PROJECT_ROOT, file), join(stage, file));
  const pick = (from: Record<string, string>, names: string[]) =>
    Object.fromEntries(names.map((name) => [name, from[name] ?? "*"]));
  const layout = {
    name: "runpodkit-root-layout",
    private: true,
    // A devDependency of the checkout (a peer of the package), as the root program's own dependency.
    dependencies: pick(manifest.devDependencies, ["@pulumi/pulumi"]),
    devDependencies: pick(manifest.devDependencies, ["@types/node", "ts-node", "typescript"]),
  };
  await writeFile(join(stage, "package.json"), `${JSON.stringify(layout, null, 2)}\n`);
  return stage;
}

describe("the root Pulumi.yaml", () => {
  test("runs examples/quickstart as its program", async () => {
    const project = await readProject(PROJECT_ROOT);
    expect(project).toMatchObject({ name: "runpodkit", main: "examples/quickstart/", typescript: true });
  });

  test("finds the package at the root's node_modules/runpodkit: this checkout, linked by npm ci", async () => {
    expect(await realpath(join(PROJECT_ROOT, "node_modules", "runpodkit"))).toBe(
      await realpath(PROJECT_ROOT),
    );
  });
});

for (const kind of DRIVER_KINDS) {
  const skipReason = kind === "automation" ? automationSkipReason() : undefined;
  const title = `pulumi up at the root via the ${kind === "engine" ? "test engine" : "Automation API"}`;
  describe.skipIf(skipReason !== undefined)(skipReason ? `${title} (skipped: ${skipReason})` : title, () => {
    let svc: ServiceFixture;
    let driver: StackDriver;
    let workDir = "";
    let stage = "";

    beforeAll(async () => {
      stage = await stageRootLayout();
      const program = await installProgram(stage, await packProject());
      workDir = await mkdtemp(join(tmpdir(), "runpodkit-root-stack-"));
      svc = await startServiceFixture();
      driver = await createDriver(kind, {
        programDir: program.dir,
        stackName: "dev",
        workDir,
        passphrase: randomBytes(12).toString("hex"),
      });
      await driver.setAllConfig(svc.stackConfig());
    }, 300_000);

    afterAll(async () => {
      await svc?.close();
      for (const dir of [workDir, stage]) if (dir) await rm(dir, { recursive: true, force: true });
    });

    test("preview plans the quickstart's template and endpoint, and creates nothing", async () => {
      expect(await driver.preview()).toEqual({ create: 3 });
      expect(await svc.rest.endpoints.list()).toEqual([]);
    }, 180_000);

    test("up deploys them to the local service; destroy removes them", async () => {
      const { outputs, changes } = await driver.up();
      expect(changes).toEqual({ create: 3 });
      const endpointId = outputString(outputs, "endpointId");
      expect(outputString(outputs, "endpointUrl")).toBe(`${svc.service.queueUrl}/v2/${endpointId}`);
      const endpoint = await svc.rest.endpoints.get(endpointId);
      expect(endpoint).toMatchObject({ templateId: outputString(outputs, "templateId"), workersMax: 2 });
      expect((await svc.rest.templates.get(endpoint.templateId)).imageName).toBe("runpodkit/echo:1.0");

      expect(await driver.destroy()).toEqual({ delete: 3 });
      expect(await svc.rest.endpoints.list()).toEqual([]);
      expect(await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).toEqual([]);
    }, 180_000);
  });
}
