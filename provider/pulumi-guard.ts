/**
 * Runs in the package's root entry (`runpodkit`, the Pulumi resources) before anything loads
 * `@pulumi/pulumi`, an optional peer dependency: a project that uses only `runpodkit/sdk`,
 * `runpodkit/worker`, `runpodkit/service` or the CLI does not install it. Importing the resources
 * without it prints ONE line saying what to install and exits, as the Node.js guard does, instead of
 * Node's MODULE_NOT_FOUND stack. The provider modules Pulumi's provider host loads do not need it.
 */
import { writeSync } from "node:fs";

/** The one line printed when `@pulumi/pulumi` cannot be resolved from this package. */
export const MISSING_PULUMI_MESSAGE =
  'runpodkit: the Pulumi resources (import "runpodkit") need @pulumi/pulumi, which is not installed: run `npm install @pulumi/pulumi` in your Pulumi project (or use "runpodkit/sdk", "runpodkit/worker" and "runpodkit/service", which do not need it).';

/** Whether `@pulumi/pulumi` resolves from this package (the program's copy: a peer, never our own). */
export function pulumiResolvable(): boolean {
  try {
    require.resolve("@pulumi/pulumi");
    return true;
  } catch (error) {
    // Only a missing module is this guard's business; anything else surfaces as Node reports it.
    if ((error as NodeJS.ErrnoException).code === "MODULE_NOT_FOUND") return false;
    throw error;
  }
}

if (!pulumiResolvable()) {
  // A thrown error would print its stack and the source line; the user needs only this line.
  writeSync(2, `${MISSING_PULUMI_MESSAGE}\n`);
  process.exit(1);
}
