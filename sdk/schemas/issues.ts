import type { z } from "zod";

// Without zod's schemas (a type only): the service's edge reads it at start. common.ts re-exports it.
/** The most issues one message names: a list of 100,000 bad items is not answered with 100,000 problems. */
export const DESCRIBED_ISSUES_MAX = 10;
/** The most characters one issue is named with (a custom message may quote the value it refuses). */
export const DESCRIBED_ISSUE_CHARS_MAX = 1_000;

/**
 * Formats a zod error as "field: problem; field: problem", naming the fields that failed (the first
 * DESCRIBED_ISSUES_MAX, then how many more). Given the value that was parsed, a field left out reads
 * "field: required" (zod's own words are "Invalid input: expected string, received undefined").
 */
export function describeIssues(error: z.ZodError, input?: unknown): string {
  const { issues } = error;
  const named = issues.slice(0, DESCRIBED_ISSUES_MAX).map((issue) => {
    const path = issue.path.map(String).join(".");
    const message = isMissing(issue, input)
      ? "required"
      : isNullGiven(issue, input)
        ? `is null, which it does not take: give ${wanted(issue)}, or leave it out where it may be left out (an update keeps the current value)`
        : issueMessage(issue);
    const described = path ? `${path}: ${message}` : message;
    return described.length <= DESCRIBED_ISSUE_CHARS_MAX
      ? described
      : `${described.slice(0, DESCRIBED_ISSUE_CHARS_MAX)}… (${described.length} characters)`;
  });
  const more = issues.length - named.length;
  if (more > 0) named.push(`and ${more} more problem${more === 1 ? "" : "s"}`);
  return named.join("; ");
}

/**
 * An issue's words. A record key's problem is in the issues under zod's "Invalid key in record"; a
 * union's ("Invalid input") in its branches: the first branch that got the right type says what was
 * wrong with the value (a repeatable query parameter, `one | one[]`, given one unknown value: the
 * values it takes).
 */
export function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === "invalid_key" && issue.issues.length > 0) {
    return `key ${issue.issues.map((inner) => inner.message).join(", ")}`;
  }
  if (issue.code === "invalid_union" && issue.message === "Invalid input") {
    const branch = issue.errors.find(
      (issues) => issues.length > 0 && issues.every((inner) => inner.code !== "invalid_type"),
    );
    if (branch) {
      return branch
        .map((inner) =>
          inner.path.length > 0
            ? `${inner.path.map(String).join(".")}: ${issueMessage(inner)}`
            : issueMessage(inner),
        )
        .join("; ");
    }
  }
  return issue.message;
}

/**
 * Whether an issue is a field left out of `input` (the value that was parsed). zod reports a missing
 * enum or literal as "Invalid option" (invalid_value), not as a wrong type.
 */
export function isMissing(issue: z.core.$ZodIssue, input: unknown): boolean {
  if (issue.code !== "invalid_type" && issue.code !== "invalid_value") return false;
  return issue.path.length > 0 && valueAt(input, issue.path) === undefined;
}

/** Whether an issue is a field given as null that takes no null (a PATCH's `"name": null`). */
function isNullGiven(issue: z.core.$ZodIssue, input: unknown): boolean {
  if (issue.code !== "invalid_type" && issue.code !== "invalid_value") return false;
  return issue.path.length > 0 && valueAt(input, issue.path) === null;
}

/** What a field of a type or value issue takes: "a string", "one of QUEUE_DELAY, REQUEST_COUNT". */
function wanted(issue: z.core.$ZodIssue): string {
  if (issue.code === "invalid_type")
    return `${/^[aeiou]/.test(issue.expected) ? "an" : "a"} ${issue.expected}`;
  if (issue.code === "invalid_value") return `one of ${issue.values.map(String).join(", ")}`;
  return "a value";
}

/** The value at `path` in `input`; undefined when the path leads nowhere. */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let at: unknown = input;
  for (const step of path) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<PropertyKey, unknown>)[step];
  }
  return at;
}
