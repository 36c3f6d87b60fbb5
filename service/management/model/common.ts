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
