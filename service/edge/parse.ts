import type { z } from "zod";
import { describeIssues } from "../../sdk/schemas/issues";
import { ServiceError } from "../errors";
import { shownKey } from "./body";

/**
 * Validates a value that crossed the edge (a body, a query, a GraphQL input) with its wire schema.
 * A failure is a VALIDATION error naming the first failing field (`where` names the input when the
 * whole value is wrong) and its issues in the message (describeIssues: the first 10, then how many more).
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const field = issueField(result.error.issues[0]) ?? where;
  const message =
    value === undefined && where === "body"
      ? "body: a JSON object is required"
      : describeIssues(result.error, value);
  throw new ServiceError("VALIDATION", message, { field });
}

/**
 * The dotted path of an issue's field, or null for the whole value. zod reports a key the schema does
 * not take on its object (path [] at the top), so the key is appended: a misspelt `gpuTypeIDs` is
 * `field: "gpuTypeIDs"` (as the SDK's own refusals name it), not the whole body. Keys are cut as a
 * repeated key's are: the field names a place, and a key may be as long as the body.
 */
function issueField(issue: z.core.$ZodIssue | undefined): string | null {
  if (issue === undefined) return null;
  const path = issue.path.map(String);
  if (issue.code === "unrecognized_keys" && issue.keys[0] !== undefined) path.push(shownKey(issue.keys[0]));
  return path.length > 0 ? path.join(".") : null;
}

/**
 * The most items one list of a management input (a REST body, a GraphQL input) may hold. No field
 * takes more than a few hundred; zod words a problem for each bad item, and 100,000 of them (a 600 KB
 * body) cost the event loop half a second or more before the refusal.
 */
export const MANAGEMENT_LIST_ITEMS_MAX = 10_000;

/** The first list in `value` longer than `max` items (its path, "" for the value itself), or null. */
export function listTooLong(value: unknown, max: number, path = ""): { path: string; length: number } | null {
  if (value === null || typeof value !== "object") return null;
  if (Array.isArray(value) && value.length > max) return { path, length: value.length };
  for (const [key, member] of Object.entries(value)) {
    const found = listTooLong(member, max, path ? `${path}.${key}` : key);
    if (found) return found;
  }
  return null;
}

/**
 * parseInput for a management input: a list longer than MANAGEMENT_LIST_ITEMS_MAX is refused first,
 * naming it, before its items are validated one by one.
 */
export function parseManagementInput<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: string,
): z.infer<S> {
  const long = listTooLong(value, MANAGEMENT_LIST_ITEMS_MAX);
  if (long) {
    const field = long.path || where;
    throw new ServiceError(
      "VALIDATION",
      `${field}: ${long.length} items; a list holds at most ${MANAGEMENT_LIST_ITEMS_MAX}`,
      { field },
    );
  }
  return parseInput(schema, value, where);
}

/**
 * Validates a query string's parameters (parseInput). A parameter given more than once
 * (`?wait=1&wait=2`) arrives as an array: where one value is expected, it is refused saying so, not
 * with what the array became on its way to the type ("expected number, received NaN").
 */
export function parseQuery<S extends z.ZodType>(schema: S, query: unknown, where: string): z.infer<S> {
  const result = schema.safeParse(query);
  if (result.success) return result.data;
  const params = (query ?? {}) as Record<string, unknown>;
  for (const issue of result.error.issues) {
    const key = issue.path.length >= 1 ? String(issue.path[0]) : null;
    const given = key === null ? undefined : params[key];
    // Repeated where one value is taken: its first value alone passes, a list of it does not. (A
    // repeatable filter takes a list: an unknown value in it is named as such.)
    if (
      key !== null &&
      Array.isArray(given) &&
      acceptedAt(schema, params, key, given[0]) &&
      !acceptedAt(schema, params, key, [given[0], given[0]])
    ) {
      throw new ServiceError(
        "VALIDATION",
        `${key}: given ${given.length} times (?${key}=...&${key}=...); give it once`,
        { field: key },
      );
    }
  }
  return parseInput(schema, query, where);
}

/** Whether the query has no issue at `key` when `key` is given as `value`. */
function acceptedAt(
  schema: z.ZodType,
  params: Record<string, unknown>,
  key: string,
  value: unknown,
): boolean {
  const tried = schema.safeParse({ ...params, [key]: value });
  return tried.success || !tried.error.issues.some((issue) => String(issue.path[0]) === key);
}
