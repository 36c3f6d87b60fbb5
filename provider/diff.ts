import { isDeepStrictEqual } from "node:util";
import { z } from "zod";
import { containsUnknown, pathHitsUnknown } from "./unknowns";

/** What one resource tells the diff helper about itself. */
export interface DiffSpec {
  /** Every input property the diff compares (bookkeeping keys and adoptId are left out on purpose). */
  readonly fields: readonly string[];
  /** Properties the service cannot change in place: a change replaces the resource. */
  readonly replaceOnChange: readonly string[];
}

export interface FieldDiff {
  changes: boolean;
  /** The properties that differ, in the order of `fields`. */
  changed: string[];
  replaces: string[];
}

/**
 * Compares normalised old inputs (the input part of the old outputs, with defaults applied) with
 * normalised new inputs. A value still unknown during preview counts as a change, so the plan shows
 * a possible update or replacement rather than claiming nothing will happen. (In the engine's
 * dependent-replacement pass the input fed by a replaced resource arrives unknown: an in-place field
 * answers "update", so only a field that really replaces makes the engine delete this resource first.)
 */
export function diffFields(
  olds: Readonly<Record<string, unknown>>,
  news: Readonly<Record<string, unknown>>,
  spec: DiffSpec,
): FieldDiff {
  const changed = spec.fields.filter(
    (field) => containsUnknown(news[field]) || !isDeepStrictEqual(olds[field] ?? null, news[field] ?? null),
  );
  const replaces = changed.filter((field) => spec.replaceOnChange.includes(field));
  return { changes: changed.length > 0, changed, replaces };
}

/** The replaceOnChanges option as the Resource classes record it: bounded, like every input. */
const ReplaceOnChanges = z.array(z.string().min(1).max(1000)).max(200);

/**
 * The segments of a Pulumi property path (`env.TOKEN`, `env["TOKEN"]`, `ports[0]`, `*`, `env.*`), or
 * undefined when it is not one (Pulumi's engine refuses such a path itself).
 */
export function propertyPathSegments(path: string): Array<string | number> | undefined {
  const segments: Array<string | number> = [];
  const part = /^(?:(\.)?([^.[\]"]+)|\[(\d+)\]|\[(\*)\]|\["((?:[^"\\]|\\.)*)"\])/;
  let rest = path;
  while (rest !== "") {
    const match = part.exec(rest);
    if (match === null) return undefined;
    const [, dot, name, index, star, quoted] = match;
    // A name takes a dot before it, except the first.
    if (name !== undefined && (dot !== undefined) !== segments.length > 0) return undefined;
    if (name !== undefined) segments.push(name);
    else if (index !== undefined) segments.push(Number(index));
    else if (star !== undefined) segments.push("*");
    else segments.push(String(quoted).replace(/\\(.)/g, "$1"));
    rest = rest.slice(match[0].length);
  }
  return segments.length > 0 ? segments : undefined;
}

function valueAt(value: unknown, segments: ReadonlyArray<string | number>): unknown {
  let at = value;
  for (const segment of segments) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<string | number, unknown>)[segment];
  }
  return at;
}

/**
 * The properties of `fields` the replaceOnChanges option `option` (as recorded) makes replace: each
 * path whose value differs between the normalised old and new inputs names its top-level property.
 * A `*` segment stands for every key or element, so the value is compared from its container up.
 */
export function replacesOnChanges(
  option: unknown,
  olds: Readonly<Record<string, unknown>>,
  news: Readonly<Record<string, unknown>>,
  fields: readonly string[],
): string[] {
  const paths = ReplaceOnChanges.safeParse(option);
  if (!paths.success) return [];
  const out = new Set<string>();
  for (const path of paths.data) {
    const segments = propertyPathSegments(path);
    if (segments === undefined) continue;
    const star = segments.indexOf("*");
    const compared = star === -1 ? segments : segments.slice(0, star);
    const candidates = compared.length === 0 ? fields : fields.filter((field) => field === compared[0]);
    for (const field of candidates) {
      const at = compared.length === 0 ? [field] : compared;
      const before = valueAt(olds, at);
      const after = valueAt(news, at);
      const unknown = pathHitsUnknown(news, at) || containsUnknown(after);
      if (unknown || !isDeepStrictEqual(before ?? null, after ?? null)) out.add(field);
    }
  }
  return fields.filter((field) => out.has(field));
}
