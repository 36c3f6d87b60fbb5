/**
 * Property values as they cross Pulumi's wire (google.protobuf.Struct as plain JSON), and the special
 * encodings the engine must understand: secrets and unknowns (preview).
 */
import { isDeepStrictEqual } from "node:util";

export type PropertyValue =
  | null
  | boolean
  | number
  | string
  | PropertyValue[]
  | { [key: string]: PropertyValue };
export type PropertyMap = { [key: string]: PropertyValue };

/** Signature keys and values from @pulumi/pulumi runtime/rpc.ts. */
export const SIG_KEY = "4dabf18193072939515e22adb298388d";
export const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

export function isObject(value: PropertyValue | undefined): value is { [key: string]: PropertyValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function isSecret(value: PropertyValue | undefined): value is { [key: string]: PropertyValue } {
  return isObject(value) && value[SIG_KEY] === SECRET_SIG && "value" in value;
}

export function makeSecret(value: PropertyValue): PropertyValue {
  return isSecret(value) ? value : { [SIG_KEY]: SECRET_SIG, value };
}

export function containsSecret(value: PropertyValue): boolean {
  if (isSecret(value)) return true;
  if (Array.isArray(value)) return value.some(containsSecret);
  if (isObject(value)) return Object.values(value).some(containsSecret);
  return false;
}

export function containsUnknown(value: PropertyValue): boolean {
  if (value === UNKNOWN) return true;
  if (Array.isArray(value)) return value.some(containsUnknown);
  if (isObject(value)) return Object.values(value).some(containsUnknown);
  return false;
}

/** Removes secret wrappers (deeply): what a provider that does not accept secrets receives. */
export function revealValue(value: PropertyValue): PropertyValue {
  if (isSecret(value)) return revealValue(value.value ?? null);
  if (Array.isArray(value)) return value.map(revealValue);
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, revealValue(v)]));
  return value;
}

export function reveal(map: PropertyMap): PropertyMap {
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, revealValue(v)]));
}

/** Top-level keys whose value holds a secret anywhere inside. */
export function secretKeys(map: PropertyMap): Set<string> {
  return new Set(
    Object.entries(map)
      .filter(([, v]) => containsSecret(v))
      .map(([k]) => k),
  );
}

/** Marks the given top-level keys secret, as the engine does for same-key secret inputs and additionalSecretOutputs. */
export function markSecret(map: PropertyMap, keys: Iterable<string>): PropertyMap {
  const out: PropertyMap = { ...map };
  for (const key of keys) {
    const value = out[key];
    if (value !== undefined && !isSecret(value)) out[key] = makeSecret(value);
  }
  return out;
}

export function sameValues(a: PropertyValue, b: PropertyValue): boolean {
  return isDeepStrictEqual(a, b);
}
