import { randomBytes } from "node:crypto";

/**
 * Pulumi auto-naming for dynamic resources. The dynamic provider's check receives neither the URN nor
 * the resource name, so each Resource class passes its logical name as the internal input
 * `__logicalName`; check records whether the name was generated in `__autoNamed`.
 */
export const LOGICAL_NAME = "__logicalName";
export const AUTO_NAMED = "__autoNamed";
/** Inputs the provider adds for its own bookkeeping; never sent to the service, never validated. */
export const INTERNAL_KEYS: readonly string[] = ["__provider", LOGICAL_NAME, AUTO_NAMED];

export type Suffix = () => string;

/** Seven lowercase hex characters, the suffix Pulumi's own providers use. */
export const randomSuffix: Suffix = () => randomBytes(4).toString("hex").slice(0, 7);

export interface ResolvedName {
  name: string;
  autoNamed: boolean;
}

/**
 * The name a resource gets: an explicit name as given; otherwise the name generated on an earlier
 * check (kept so diff and update see a stable name); otherwise `<logical name>-<suffix>`. On a
 * replacement the engine re-runs check without olds, so a replacement gets a fresh name.
 * Returns undefined when no name can be formed (no explicit name and no logical name).
 */
export function resolveName(
  olds: Record<string, unknown> | undefined,
  news: Record<string, unknown>,
  suffix: Suffix = randomSuffix,
): ResolvedName | undefined {
  const explicit = news.name;
  if (explicit !== undefined && explicit !== null) return { name: String(explicit), autoNamed: false };
  if (olds?.[AUTO_NAMED] === true && typeof olds.name === "string" && olds.name !== "") {
    return { name: olds.name, autoNamed: true };
  }
  const logical = news[LOGICAL_NAME];
  if (typeof logical !== "string" || logical === "") return undefined;
  return { name: `${logical}-${suffix()}`, autoNamed: true };
}
