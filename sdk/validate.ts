import type { z } from "zod";
import { ProtocolError, ValidationError } from "./errors";
import { describeIssues } from "./schemas/common";

/**
 * The dotted path of the first failing field ("gpuTypeIds.0"), for `error.field`. A key the schema
 * does not take is reported on its object (path [] at the top), so the key itself is appended: a
 * misspelt `gpuTypeIDs` is `field: "gpuTypeIDs"`, not undefined.
 */
function firstField(error: z.ZodError): string | undefined {
  const issue = error.issues[0];
  if (issue === undefined) return undefined;
  const path: PropertyKey[] = [...issue.path];
  if (issue.code === "unrecognized_keys" && issue.keys[0] !== undefined) path.push(issue.keys[0]);
  return path.length > 0 ? path.map(String).join(".") : undefined;
}

/** Validates a request before anything is sent: a ValidationError naming the field, no HTTP call. */
export function validateInput<S extends z.ZodType>(
  schema: S,
  input: unknown,
  operation: string,
): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new ValidationError({
    operation,
    field: firstField(result.error),
    message: `${operation}: invalid input: ${describeIssues(result.error, input)}`,
  });
}

/** Parses a reply with its record schema (extra fields are tolerated and dropped). */
export function parseReply<S extends z.ZodType>(schema: S, value: unknown, operation: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new ProtocolError({
    operation,
    field: firstField(result.error),
    message: `${operation}: unexpected reply: ${describeIssues(result.error, value)}`,
  });
}

/**
 * A path segment from a caller's id: refused when empty (it would address the collection) or a dot
 * segment, "." or ".." (encodeURIComponent keeps dots, and URL resolution or a proxy's normalising
 * would send the call, with its key, to another path).
 */
export function idSegment(id: unknown, operation: string, field = "id"): string {
  if (typeof id !== "string" || id.trim() === "") {
    throw new ValidationError({
      operation,
      field,
      message: `${operation}: ${field} must be a non-empty string`,
    });
  }
  if (id === "." || id === "..") {
    throw new ValidationError({
      operation,
      field,
      message: `${operation}: ${field} must not be "${id}" (a dot path segment)`,
    });
  }
  return `/${encodeURIComponent(id)}`;
}
