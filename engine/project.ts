/**
 * Reads a program's Pulumi.yaml: the project name, the entry point and the runtime options the Node.js
 * language host honours. YAML is parsed with js-yaml, the parser @pulumi/pulumi itself depends on.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { z } from "zod";
import { EngineError } from "./errors";

const yaml = createRequire(require.resolve("@pulumi/pulumi/package.json"))("js-yaml") as {
  load(text: string): unknown;
};

const runtimeOptions = z.looseObject({ typescript: z.boolean().optional(), tsconfig: z.string().optional() });
const projectSchema = z.looseObject({
  name: z.string().min(1),
  runtime: z.union([
    z.literal("nodejs"),
    z.looseObject({ name: z.literal("nodejs"), options: runtimeOptions.optional() }),
  ]),
  main: z.string().optional(),
});

export interface ProjectSettings {
  name: string;
  /** The program argument of cmd/run: "." unless Pulumi.yaml names a main. */
  main: string;
  typescript: boolean;
  tsconfig?: string;
}

export async function readProject(programDir: string): Promise<ProjectSettings> {
  const path = join(programDir, "Pulumi.yaml");
  const parsed = projectSchema.safeParse(yaml.load(await readFile(path, "utf8")));
  if (!parsed.success) {
    throw new EngineError("PROJECT_INVALID", "project.read", `${path}: ${parsed.error.message}`);
  }
  const options = typeof parsed.data.runtime === "string" ? undefined : parsed.data.runtime.options;
  return {
    name: parsed.data.name,
    main: parsed.data.main ?? ".",
    typescript: options?.typescript ?? true,
    ...(options?.tsconfig ? { tsconfig: options.tsconfig } : {}),
  };
}
