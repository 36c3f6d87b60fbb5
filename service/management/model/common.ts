import { dockerStartCmdOf } from "../../../sdk/schemas/docker-args";
import type { DockerArgs } from "./records";

/** Drops keys whose value is undefined, so spreading a partial change never erases a field. */
export function definedOnly<T extends object>(changes: T): Partial<T> {
  const out: Partial<T> = {};
  for (const [key, value] of Object.entries(changes)) {
    if (value !== undefined) (out as Record<string, unknown>)[key] = value;
  }
  return out;
}

/** Order-insensitive equality of two env maps. */
export function sameEnv(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/** A template's or pod's start command in its two spellings (records.ts DockerArgs). */
export interface StartCommand {
  dockerStartCmd: string[];
  dockerArgs: DockerArgs;
}

/**
 * The start command after a change, its two spellings kept in step: a dockerArgs string (GraphQL) is
 * kept as written and dockerStartCmd becomes its argv (dockerStartCmdOf: `/bin/sh -c <string>` when it
 * needs a shell); a dockerStartCmd alone (REST) replaces the string (null: GraphQL then shows the argv
 * formatted) unless it is the argv already stored, which changes nothing.
 */
export function startCommand(
  current: StartCommand,
  change: { dockerArgs?: DockerArgs | undefined; dockerStartCmd?: string[] | undefined },
): StartCommand {
  if (typeof change.dockerArgs === "string") {
    return { dockerArgs: change.dockerArgs, dockerStartCmd: dockerStartCmdOf(change.dockerArgs) };
  }
  const argv = change.dockerStartCmd;
  if (argv === undefined || sameArgv(argv, current.dockerStartCmd)) {
    return { dockerArgs: current.dockerArgs, dockerStartCmd: current.dockerStartCmd };
  }
  return { dockerArgs: null, dockerStartCmd: argv };
}

export function sameArgv(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((arg, i) => arg === b[i]);
}
