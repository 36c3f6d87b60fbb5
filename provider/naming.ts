import { createHash } from "node:crypto";
import { AUTO_NAMED, LOGICAL_NAME, PARENT, SCOPE } from "./bookkeeping";
import { containsUnknown, UNKNOWN } from "./unknowns";

/** Names the service accepts are at most this long. */
const MAX_NAME = 191;
/** How many further generations create tries when a generated name is taken (see nextGenerations). */
export const MAX_GENERATION = 8;

/** What a generated name is derived from, besides the logical name. */
export interface NameBasis {
  /** The resource type, e.g. "Template". */
  type: string;
  /**
   * The values of the fields whose change replaces the resource, defaults applied. A replacement
   * therefore gets a different name than the resource it replaces, so both can exist while the
   * engine creates the new one before deleting the old.
   */
  replaceKey: readonly unknown[];
}

export interface ResolvedName {
  name: string;
  autoNamed: boolean;
}

/**
 * `<logical name>-<7 hex>`: a digest of the stack (`__scope`), the parent's URN when the program gave
 * one (`__parent`: two components' children of one logical name get two names), the type, the logical
 * name, the replace key and a generation. The same program in the same stack gets the same name in preview and
 * in up (so a saved plan applies), and the name never depends on time or chance.
 */
export function generatedName(
  props: Readonly<Record<string, unknown>>,
  basis: NameBasis,
  generation = 0,
): string | undefined {
  const logical = props[LOGICAL_NAME];
  if (typeof logical !== "string" || logical === "") return undefined;
  if (containsUnknown(basis.replaceKey)) return UNKNOWN;
  const scope = typeof props[SCOPE] === "string" ? props[SCOPE] : "";
  const parent = props[PARENT];
  if (parent === UNKNOWN) return UNKNOWN;
  // Without a parent, the digest is the one it always was: names of existing resources do not move.
  const where = typeof parent === "string" && parent !== "" ? [scope, parent] : [scope];
  const digest = createHash("sha256")
    .update(JSON.stringify([...where, basis.type, logical, basis.replaceKey, generation]))
    .digest("hex")
    .slice(0, 7);
  // Not inside a surrogate pair (a half is unprintable, refused); names cut elsewhere stay as they were.
  const kept = logical.slice(0, MAX_NAME - 8).replace(/[\uD800-\uDBFF]$/, "");
  return `${kept}-${digest}`;
}

/** The names generations 1..MAX_GENERATION would give: create tries them when a name is taken. */
export function nextGenerations(props: Readonly<Record<string, unknown>>, basis: NameBasis): string[] {
  const names: string[] = [];
  for (let generation = 1; generation <= MAX_GENERATION; generation++) {
    const name = generatedName(props, basis, generation);
    if (name !== undefined && name !== UNKNOWN) names.push(name);
  }
  return names;
}

/** True when `name` is one this resource's generated names (any generation) would be. */
export function isGeneratedName(
  name: unknown,
  props: Readonly<Record<string, unknown>>,
  basis: NameBasis,
): boolean {
  return (
    typeof name === "string" &&
    (name === generatedName(props, basis) || nextGenerations(props, basis).includes(name))
  );
}

/**
 * The name a resource gets: an explicit name as given; otherwise the name generated on an earlier
 * check (the engine passes the old inputs as `olds`, so an update keeps its name); otherwise a
 * generated one. A replacement is re-checked without olds and gets the name of its new replace key.
 * Returns undefined when no name can be formed (no explicit name and no logical name).
 */
export function resolveName(
  olds: Readonly<Record<string, unknown>> | undefined,
  news: Readonly<Record<string, unknown>>,
  basis: NameBasis,
): ResolvedName | undefined {
  const explicit = news.name;
  if (explicit !== undefined && explicit !== null) return { name: String(explicit), autoNamed: false };
  if (olds?.[AUTO_NAMED] === true && typeof olds.name === "string" && olds.name !== "") {
    return { name: olds.name, autoNamed: true };
  }
  const name = generatedName(news, basis);
  return name === undefined ? undefined : { name, autoNamed: true };
}
