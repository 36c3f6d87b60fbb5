import { isDeepStrictEqual } from "node:util";
import { AUTO_NAMED } from "./naming";
import { containsUnknown } from "./unknowns";

/** What one resource tells the diff helper about itself. */
export interface DiffSpec {
  /** Every input property the diff compares (internal keys and adoptId are left out on purpose). */
  readonly fields: readonly string[];
  /** Properties the service cannot change in place: a change replaces the resource. */
  readonly replaceOnChange: readonly string[];
  /**
   * The service requires the name to be unique in the account. A replacement of an explicitly named
   * resource must delete the old one first; an auto-named one gets a fresh name and is created first.
   */
  readonly uniqueName: boolean;
}

export interface FieldDiff {
  changes: boolean;
  /** The properties that differ, in the order of `fields`. */
  changed: string[];
  replaces: string[];
  deleteBeforeReplace: boolean;
}

/**
 * Compares normalised old inputs (the input part of the old outputs, with defaults applied) with
 * normalised new inputs. A value still unknown during preview counts as a change, so the plan shows
 * a possible update or replacement rather than claiming nothing will happen.
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
  return {
    changes: changed.length > 0,
    changed,
    replaces,
    deleteBeforeReplace: replaces.length > 0 && spec.uniqueName && news[AUTO_NAMED] !== true,
  };
}
