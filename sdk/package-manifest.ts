/**
 * This package's own package.json, found by walking up from a file of it: the same code runs from
 * the TypeScript sources of a checkout (`<root>/sdk`) and from the installed build (`<root>/dist/sdk`).
 * Shared by the provider (the version it records in the state, the package path Pulumi's provider
 * host loads) and the CLI (`runpodkit --version`).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";

export const PACKAGE_NAME = "runpodkit";

const Manifest = z.looseObject({ name: z.string().optional(), version: z.string().optional() });

/** Walks up from `start` to this package's package.json: its folder and version. */
export function packageManifest(start: string): { root: string; version: string } {
  for (let dir = start; ; dir = dirname(dir)) {
    const path = join(dir, "package.json");
    if (existsSync(path)) {
      const manifest = Manifest.safeParse(JSON.parse(readFileSync(path, "utf8")));
      if (manifest.success && manifest.data.name === PACKAGE_NAME) {
        return { root: dir, version: manifest.data.version ?? "0.0.0" };
      }
    }
    if (dirname(dir) === dir) throw new Error(`${start} is not inside the ${PACKAGE_NAME} package`);
  }
}

let running: string | undefined;

/** The version of the runpodkit package this code belongs to (read once from its package.json). */
export function packageVersion(): string {
  running ??= packageManifest(__dirname).version;
  return running;
}
