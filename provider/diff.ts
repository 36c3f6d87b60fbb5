import { isDeepStrictEqual } from "node:util";
import { containsUnknown } from "./unknowns";

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
