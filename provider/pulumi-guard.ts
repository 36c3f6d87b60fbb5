/**
 * Runs in the package's root entry (`runpodkit`, the Pulumi resources) before anything loads
 * `@pulumi/pulumi`, an optional peer dependency: a project that uses only `runpodkit/sdk`,
 * `runpodkit/worker`, `runpodkit/service` or the CLI does not install it. Importing the resources
 * without it, or with a version outside the peer range (pnpm and yarn install one with a warning only;
 * npm refuses it), prints ONE line saying what to install and exits, as the Node.js guard does,
 * instead of Node's MODULE_NOT_FOUND stack or a failure deep inside Pulumi. The provider modules
 * Pulumi's provider host loads do not need it. A TypeScript program is type-checked before any of
 * this runs: under pnpm, a Pulumi below the range stops there first (README, its ts-node 7).
 */
import { existsSync, readFileSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import satisfies from "semver/functions/satisfies";
import { z } from "zod";

/** package.json `peerDependencies["@pulumi/pulumi"]`: the first release with dynamic providers' `configure`. */
export const SUPPORTED_PULUMI = "^3.139.0";

/** The one line printed when `@pulumi/pulumi` cannot be resolved from this package. */
export const MISSING_PULUMI_MESSAGE =
  'runpodkit: the Pulumi resources (import "runpodkit") need @pulumi/pulumi, which is not installed: run `npm install @pulumi/pulumi` in your Pulumi project (or use "runpodkit/sdk", "runpodkit/worker" and "runpodkit/service", which do not need it).';

/** The one line printed when the project's `@pulumi/pulumi` is `version`, outside the range; else undefined. */
export function unsupportedPulumiMessage(version: string): string | undefined {
  if (satisfies(version, SUPPORTED_PULUMI, { includePrerelease: true })) return undefined;
  return `runpodkit: the Pulumi resources (import "runpodkit") need @pulumi/pulumi ${SUPPORTED_PULUMI} (package.json "peerDependencies"); this project has ${version}: run \`npm install @pulumi/pulumi@^3\` in your Pulumi project.`;
}

const Manifest = z.looseObject({ name: z.string().optional(), version: z.string() });

/**
 * The `@pulumi/pulumi` this package resolves (the project's copy: a peer, never our own) and its
 * version (undefined when its package.json is not found: nothing to check), or undefined when there
 * is none. Found from its main module, whatever its `exports` allow.
 */
export function resolvedPulumi(): { version: string | undefined } | undefined {
  let main: string;
  try {
    main = require.resolve("@pulumi/pulumi");
  } catch (error) {
    // Only a missing module is this guard's business; anything else surfaces as Node reports it.
    if ((error as NodeJS.ErrnoException).code === "MODULE_NOT_FOUND") return undefined;
    throw error;
  }
  for (let dir = dirname(main); dirname(dir) !== dir; dir = dirname(dir)) {
    const path = join(dir, "package.json");
    if (!existsSync(path)) continue;
    const manifest = Manifest.safeParse(JSON.parse(readFileSync(path, "utf8")));
    if (manifest.success && manifest.data.name === "@pulumi/pulumi")
      return { version: manifest.data.version };
  }
  return { version: undefined };
}

const found = resolvedPulumi();
const message =
  found === undefined
    ? MISSING_PULUMI_MESSAGE
    : found.version === undefined
      ? undefined
      : unsupportedPulumiMessage(found.version);
if (message !== undefined) {
  // A thrown error would print its stack and the source line; the user needs only this line.
  writeSync(2, `${message}\n`);
  process.exit(1);
}
