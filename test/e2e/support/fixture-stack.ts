/**
 * A fixture program (test/e2e/fixtures/<name>) installed from the packed package, as users get it,
 * with a local service and a stack in a fresh directory whose config points the program at that
 * service, plus `config` of the test's own.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ConfigMap, LocalStack } from "../../../engine/engine";
import { installProgram, packProject } from "../../../engine/package";
import { type ServiceFixture, startServiceFixture } from "./service";

export interface FixtureStack {
  svc: ServiceFixture;
  stack: LocalStack;
  /** The stack's directory: its state is under `state/`. */
  workDir: string;
  close(): Promise<void>;
}

export async function openFixtureStack(fixtureDir: string, config: ConfigMap = {}): Promise<FixtureStack> {
  const program = await installProgram(fixtureDir, await packProject());
  const workDir = await mkdtemp(join(tmpdir(), "runpodkit-fixture-"));
  const svc = await startServiceFixture();
  const stack = await LocalStack.open({
    programDir: program.dir,
    stackName: "dev",
    stateDir: join(workDir, "state"),
    passphrase: randomBytes(12).toString("hex"),
  });
  stack.setAllConfig({ ...svc.stackConfig(), ...config });
  return {
    svc,
    stack,
    workDir,
    close: async () => {
      await svc.close();
      await rm(workDir, { recursive: true, force: true });
    },
  };
}
