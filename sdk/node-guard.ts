/**
 * Runs first in every entry point of the package (the root, ./sdk, ./service, ./worker, the CLI, the provider
 * modules Pulumi's provider host loads): on a Node.js older than the package supports, it prints ONE
 * line naming the required version and exits, before any dependency that needs a newer Node (undici
 * 8 needs `zlib.createZstdDecompress`, Node >= 22.19) fails with a cryptic error. The range is
 * package.json `engines.node` (test/e2e/node-floor.test.ts keeps the two equal and runs an old Node).
 */
import { writeSync } from "node:fs";
// Only the one function (19 of semver's 47 modules): every entry point loads this file.
import satisfies from "semver/functions/satisfies";

/** The Node.js versions the package supports: package.json `engines.node`. */
export const SUPPORTED_NODE = ">=22.19.0";

/** The one line printed on an unsupported Node, or undefined when `version` is supported. */
export function unsupportedNodeMessage(version: string): string | undefined {
  if (satisfies(version, SUPPORTED_NODE, { includePrerelease: true })) return undefined;
  return `runpodkit requires Node.js ${SUPPORTED_NODE} (package.json "engines"); this is Node.js v${version}. Install a supported Node.js and run again.`;
}

const message = unsupportedNodeMessage(process.versions.node);
if (message !== undefined) {
  // A thrown error would print its stack and the source line; the user needs only this line.
  writeSync(2, `${message}\n`);
  process.exit(1);
}
