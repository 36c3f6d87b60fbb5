/**
 * During preview the engine sends values it does not know yet (outputs of resources not created) as
 * this sentinel string, anywhere in the tree. check and diff must tolerate it.
 */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

export function isUnknown(value: unknown): boolean {
  return value === UNKNOWN;
}

/** True when the value is, or contains at any depth, the unknown sentinel. */
export function containsUnknown(value: unknown): boolean {
  if (value === UNKNOWN) return true;
  if (Array.isArray(value)) return value.some(containsUnknown);
  if (value !== null && typeof value === "object") return Object.values(value).some(containsUnknown);
  return false;
}

/** True when any prefix of `path` into `root` lands on the sentinel (so the value below it is unknown). */
export function pathHitsUnknown(root: unknown, path: readonly PropertyKey[]): boolean {
  let current: unknown = root;
  if (current === UNKNOWN) return true;
  for (const key of path) {
    if (current === null || typeof current !== "object") return false;
    current = (current as Record<PropertyKey, unknown>)[key];
    if (current === UNKNOWN) return true;
  }
  return false;
}
