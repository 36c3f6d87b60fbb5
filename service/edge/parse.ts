import type { z } from "zod";
import { describeIssues } from "../../sdk/schemas/issues";
import { ServiceError } from "../errors";

/**
 * Validates a value that crossed the edge (a body, a query, a GraphQL input) with its wire schema.
 * A failure is a VALIDATION error naming the first failing field (`where` names the input when the
 * whole value is wrong) and every issue in the message.
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  const field = first && first.path.length > 0 ? first.path.map(String).join(".") : where;
  const message =
    value === undefined && where === "body"
      ? "body: a JSON object is required"
      : describeIssues(result.error, value);
  throw new ServiceError("VALIDATION", message, { field });
}
