import type { z } from "zod";

// Without zod's schemas (a type only): the service's edge reads it at start. common.ts re-exports it.
/** Formats a zod error as "field: problem; field: problem", naming every field that failed. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map(String).join(".");
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join("; ");
}
