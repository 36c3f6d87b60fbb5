/**
 * Runs one scenario (an ordered list of steps on one stack) against one example program: the package
 * packed and installed into a copy of the program once per file, the local service started in-process,
 * and the stack driven through the Automation API when the CLI exists, else through the test engine.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, test } from "vitest";
import type { ConfigMap, OutputMap } from "../../../engine/engine";
import { installNode, installProgram, PROJECT_ROOT, packProject } from "../../../engine/package";
import { automationSkipReason, createDriver, type DriverKind, type StackDriver } from "./drivers";
import { type ServiceFixture, startServiceFixture } from "./service";

export interface ScenarioContext {
  driver: StackDriver;
  svc: ServiceFixture;
  /** Outputs of the latest up. */
  outputs: OutputMap;
  /** Values a step hands to later steps (ids before a replacement, ...). */
  memo: Record<string, string>;
  /**
   * Another stack of the same installed program, driven the same way, with its own state and no config
   * yet: a second environment (prod beside dev) in the same account.
   */
  openStack(stackName: string): Promise<StackDriver>;
}

export interface ScenarioStep {
  name: string;
  run(ctx: ScenarioContext): Promise<void>;
}

export interface Scenario {
  /** Folder name under examples/. */
  example: string;
  /** Stack config beside the runpodkit:* keys that point at the service. */
  config(svc: ServiceFixture): ConfigMap;
  steps: ScenarioStep[];
}

export const DRIVER_KINDS: DriverKind[] = ["automation", "engine"];
/** One step runs a program once or twice; each run type-checks the program with ts-node. */
const STEP_TIMEOUT = 180_000;
const SETUP_TIMEOUT = 300_000;

export interface ScenarioOptions {
  /**
   * Run the program and the provider host on this Node.js version (the npm `node` package, first on
   * their PATH) instead of the `node` on PATH. The test engine only.
   */
  node?: string;
}

export function describeScenario(kind: DriverKind, scenario: Scenario, options: ScenarioOptions = {}): void {
  const skipReason = kind === "automation" ? automationSkipReason() : undefined;
  const on = options.node ? ` on Node ${options.node}` : "";
  const title = `${scenario.example} via the ${kind === "engine" ? "test engine" : "Automation API"}${on}`;
  describe.skipIf(skipReason !== undefined)(skipReason ? `${title} (skipped: ${skipReason})` : title, () => {
    const ctx = {} as ScenarioContext;
    let workDir = "";

    beforeAll(async () => {
      const pkg = await packProject();
      const program = await installProgram(join(PROJECT_ROOT, "examples", scenario.example), pkg);
      workDir = await mkdtemp(join(tmpdir(), `runpodkit-${scenario.example}-`));
      const node = options.node ? await installNode(options.node) : undefined;
      ctx.svc = await startServiceFixture();
      const env = node ? { env: { PATH: [dirname(node), process.env.PATH ?? ""].join(delimiter) } } : {};
      const passphrase = randomBytes(12).toString("hex");
      ctx.driver = await createDriver(kind, {
        programDir: program.dir,
        stackName: "dev",
        workDir,
        passphrase,
        ...env,
      });
      ctx.openStack = async (stackName) =>
        createDriver(kind, {
          programDir: program.dir,
          stackName,
          workDir: await mkdtemp(join(workDir, `${stackName}-`)),
          passphrase,
          ...env,
        });
      ctx.outputs = {};
      ctx.memo = {};
      await ctx.driver.setAllConfig({ ...ctx.svc.stackConfig(), ...scenario.config(ctx.svc) });
    }, SETUP_TIMEOUT);

    afterAll(async () => {
      await ctx.svc?.close();
      if (workDir) await rm(workDir, { recursive: true, force: true });
    });

    for (const step of scenario.steps) {
      test(step.name, () => step.run(ctx), STEP_TIMEOUT);
    }
  });
}

/** The string value of an output; fails loudly when it is missing. */
export function outputString(outputs: OutputMap, key: string): string {
  const value = outputs[key]?.value;
  if (typeof value !== "string" || value === "") throw new Error(`stack output ${key} is missing`);
  return value;
}
