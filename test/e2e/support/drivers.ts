/**
 * One interface over the two ways a scenario deploys a program: the Automation API (the real Pulumi
 * CLI, file backend, passphrase secrets) when a `pulumi` CLI is on PATH, and the test engine otherwise.
 * Both expose the same operations and the same shapes (OpMap-like counts, OutputMap).
 */
import { spawnSync } from "node:child_process";
import { cp, mkdir, symlink } from "node:fs/promises";
import { join } from "node:path";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import {
  type ConfigMap,
  type ConfigValue,
  LocalStack,
  type OpCounts,
  type OutputMap,
} from "../../../engine/engine";

export type DriverKind = "engine" | "automation";

export interface StackDriver {
  readonly kind: DriverKind;
  /** Sets these keys (scenarios set all config once, then change single keys). */
  setAllConfig(config: ConfigMap): Promise<void>;
  setConfig(key: string, value: ConfigValue): Promise<void>;
  preview(): Promise<OpCounts>;
  up(): Promise<{ outputs: OutputMap; changes: OpCounts }>;
  refresh(): Promise<OpCounts>;
  destroy(): Promise<OpCounts>;
  /** Everything the deployments printed so far. */
  logText(): string;
  /** The stack's state as exported, secrets encrypted ("" before the first update). */
  exportState(): Promise<string>;
  /**
   * Provider create/update/delete calls so far, when the driver can see them (the engine can; the
   * CLI does not report them, its change summary stands in).
   */
  providerWrites(): number | undefined;
}

export interface DriverOptions {
  programDir: string;
  stackName: string;
  /** Holds the backend (state) of this driver. */
  workDir: string;
  passphrase: string;
  /** Extra environment of the program and the provider host (the engine only; e.g. a PATH). */
  env?: Record<string, string>;
}

/** Why the Automation API path cannot run here, or undefined when it can. */
export function automationSkipReason(): string | undefined {
  const probe = spawnSync("pulumi", ["version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) {
    return "no `pulumi` CLI on PATH (the Automation API always runs the CLI); the engine path covers these steps";
  }
  return undefined;
}

export async function createDriver(kind: DriverKind, options: DriverOptions): Promise<StackDriver> {
  return kind === "engine" ? engineDriver(options) : automationDriver(options);
}

async function engineDriver(options: DriverOptions): Promise<StackDriver> {
  const stack = await LocalStack.open({
    programDir: options.programDir,
    stackName: options.stackName,
    stateDir: join(options.workDir, "state"),
    passphrase: options.passphrase,
    ...(options.env ? { env: options.env } : {}),
  });
  const writes = () =>
    stack.providerCalls.filter((c) => ["create", "update", "delete"].includes(c.op)).length;
  return {
    kind: "engine",
    setAllConfig: async (config) => stack.setAllConfig(config),
    setConfig: async (key, value) => stack.setConfig(key, value),
    preview: async () => (await stack.preview()).changes,
    up: async () => {
      const { outputs, changes } = await stack.up();
      return { outputs, changes };
    },
    refresh: async () => (await stack.refresh()).changes,
    destroy: async () => (await stack.destroy()).changes,
    logText: () => stack.logText(),
    exportState: () => stack.exportState(),
    providerWrites: writes,
  };
}

async function automationDriver(options: DriverOptions): Promise<StackDriver> {
  const backend = join(options.workDir, "backend");
  const home = join(options.workDir, "pulumi-home");
  await mkdir(backend, { recursive: true });
  await mkdir(home, { recursive: true });
  // The CLI writes Pulumi.<stack>.yaml (config, encryption salt) beside the program: give it a private
  // copy of the shared install, its node_modules linked (they hold @pulumi/pulumi's provider host, #5578).
  const workDir = join(options.workDir, "program");
  await cp(options.programDir, workDir, {
    recursive: true,
    filter: (src) => src !== join(options.programDir, "node_modules"),
  });
  await symlink(join(options.programDir, "node_modules"), join(workDir, "node_modules"), "dir");
  const stack = await LocalWorkspace.createOrSelectStack(
    { stackName: options.stackName, workDir },
    {
      pulumiHome: home,
      envVars: {
        PULUMI_BACKEND_URL: `file://${backend}`,
        PULUMI_CONFIG_PASSPHRASE: options.passphrase,
        PULUMI_SKIP_UPDATE_CHECK: "true",
      },
    },
  );
  let log = "";
  const record = (result: { stdout: string; stderr: string }) => {
    log += `${result.stdout}\n${result.stderr}\n`;
  };
  const counts = (map: Record<string, number> | undefined): OpCounts => ({ ...(map ?? {}) }) as OpCounts;
  return {
    kind: "automation",
    setAllConfig: (config) => stack.setAllConfig(config),
    setConfig: (key, value) => stack.setConfig(key, value),
    preview: async () => {
      const result = await stack.preview();
      record(result);
      return counts(result.changeSummary);
    },
    up: async () => {
      const result = await stack.up();
      record(result);
      return { outputs: result.outputs, changes: counts(result.summary.resourceChanges) };
    },
    refresh: async () => {
      const result = await stack.refresh();
      record(result);
      return counts(result.summary.resourceChanges);
    },
    destroy: async () => {
      const result = await stack.destroy();
      record(result);
      return counts(result.summary.resourceChanges);
    },
    logText: () => log,
    exportState: async () => JSON.stringify(await stack.exportStack()),
    providerWrites: () => undefined,
  };
}
