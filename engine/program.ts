/**
 * Runs a Pulumi program the way the Node.js language host does: @pulumi/pulumi's cmd/run from the
 * program's own node_modules, pointed at our monitor and engine, with stack config in the environment.
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { LogSink } from "./log";
import type { ProjectSettings } from "./project";

export interface ProgramOptions {
  /** The node binary that runs the program (the engine resolves it, see LocalStackOptions.node). */
  node: string;
  programDir: string;
  project: ProjectSettings;
  stack: string;
  monitorAddress: string;
  dryRun: boolean;
  config: Record<string, string>;
  secretKeys: string[];
  env: Record<string, string>;
  log: LogSink;
}

/** Resolves with the program's exit code. */
export function runProgram(opts: ProgramOptions): Promise<number> {
  const fromProgram = createRequire(join(opts.programDir, "package.json"));
  const entry = fromProgram.resolve("@pulumi/pulumi/cmd/run/index.js");
  const args = [
    entry,
    `--monitor=${opts.monitorAddress}`,
    `--engine=${opts.monitorAddress}`,
    `--organization=organization`,
    `--project=${opts.project.name}`,
    `--stack=${opts.stack}`,
    `--pwd=${opts.programDir}`,
    `--root-directory=${opts.programDir}`,
    ...(opts.dryRun ? ["--dry-run"] : []),
    opts.project.main,
  ];
  const child = spawn(opts.node, args, {
    cwd: opts.programDir,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...opts.env,
      PULUMI_CONFIG: JSON.stringify(opts.config),
      PULUMI_CONFIG_SECRET_KEYS: JSON.stringify(opts.secretKeys),
      PULUMI_NODEJS_TYPESCRIPT: String(opts.project.typescript),
      ...(opts.project.tsconfig ? { PULUMI_NODEJS_TSCONFIG_PATH: opts.project.tsconfig } : {}),
    },
  });
  createInterface({ input: child.stdout! }).on("line", (message) =>
    opts.log({ source: "program", severity: "info", message }),
  );
  createInterface({ input: child.stderr! }).on("line", (message) =>
    opts.log({ source: "program", severity: "warning", message }),
  );
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}
