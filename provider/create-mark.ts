import { ENV_LIMITS, envBytes } from "../sdk/schemas";
import type { CheckFailure } from "./check";

/**
 * The env key a create of a generated name sets to a fresh mark (Endpoint, Pod, Template), so that
 * after a lost answer the resource it made is told from one of the same name made elsewhere. Never
 * managed nor reported: it stays on the resource as a key set elsewhere would.
 */
export const CREATE_MARK = "RUNPODKIT_CREATE_MARK";

/** A mark is a UUID, 36 characters (implement.ts marked() makes it with randomUUID). */
const MARK_LENGTH = 36;

/** What the mark adds to an env as ENV_LIMITS.totalBytes counts it (`NAME=value` and its end). */
export const CREATE_MARK_BYTES = CREATE_MARK.length + MARK_LENGTH + 2;

/**
 * `env` with the create's mark, or undefined when it does not fit: a program env within
 * CREATE_MARK_BYTES of ENV_LIMITS.totalBytes is one the docs promise the service takes, so it is
 * created as written and the create goes without a mark (a lost answer then takes nothing over and
 * names what it found), rather than refused for a key the program never set.
 */
export function withCreateMark(
  env: Record<string, string>,
  mark: string,
): Record<string, string> | undefined {
  if (CREATE_MARK in env) return undefined;
  const marked = { ...env, [CREATE_MARK]: mark };
  return envBytes(Object.entries(marked)) > ENV_LIMITS.totalBytes ? undefined : marked;
}

/**
 * The env an update sends: a mark kept from the create (the program does not manage it) is left out
 * once the program's env grows too large for both, as at create. The mark only serves the create.
 */
export function fittingMark(env: Record<string, string>, programEnv: Record<string, string>) {
  if (
    !(CREATE_MARK in env) ||
    CREATE_MARK in programEnv ||
    envBytes(Object.entries(env)) <= ENV_LIMITS.totalBytes
  )
    return env;
  const { [CREATE_MARK]: _mark, ...rest } = env;
  return rest;
}

/**
 * check's failure for a program env that sets CREATE_MARK: runpodkit sets it on a create of a
 * generated name and leaves it out of the outputs, so a program value would be hidden, and a value
 * copied between resources would make a lost create take over a resource that is not its own.
 */
export function reservedMarkFailures(env: unknown): CheckFailure[] {
  if (env === null || typeof env !== "object" || Array.isArray(env)) return [];
  if (!Object.hasOwn(env, CREATE_MARK)) return [];
  const property = `env.${CREATE_MARK}`;
  return [
    {
      property,
      reason: `${property}: is reserved for runpodkit, which sets it to a random value when it creates a resource of a generated name (to find its own after a lost answer); rename the key`,
    },
  ];
}
