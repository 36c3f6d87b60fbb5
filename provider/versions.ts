import semver from "semver";
import { WRITTEN_BY } from "./bookkeeping";
import type { Props } from "./check";
import { packageVersion } from "./dynamic";
import { ProviderError } from "./errors";

/**
 * Versioned state. Every output set records the runpodkit version that wrote it (`__runpodkitVersion`).
 * Read and delete run whatever runpodkit the program folder has installed (the serialized provider
 * loads it by package path), so a newer package must read what any older one wrote: state without the
 * key was written before versions were recorded (0.1.0 or earlier) and is read as such. The other way
 * round is refused: code cannot know a format invented after it was written.
 */
export function writtenBy(props: Props): string | undefined {
  const version = props[WRITTEN_BY];
  return typeof version === "string" && semver.valid(version) ? version : undefined;
}

/** Refuses to act on outputs written by a newer runpodkit than the one running. */
export function refuseNewerState(props: Props, operation: string, running = packageVersion()): void {
  const version = writtenBy(props);
  if (version === undefined || !semver.gt(version, running)) return;
  throw new ProviderError(
    "VERSION",
    `${operation}: this resource was last written by runpodkit ${version}, but the program folder has runpodkit ${running}, which cannot safely read or delete state from a newer version. Install runpodkit ${version} or later in the program folder (npm install runpodkit@^${version}) and run the command again.`,
    { operation, field: WRITTEN_BY },
  );
}
