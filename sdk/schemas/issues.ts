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
    const message = isMissing(issue, input) ? "required" : issueMessage(issue);
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
  if (issue.path.length === 0) return false;
  let at: unknown = input;
  for (const step of issue.path) {
    if (at === null || typeof at !== "object") return false;
    at = (at as Record<PropertyKey, unknown>)[step];
  }
  return at === undefined;
}
