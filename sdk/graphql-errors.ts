import { ClientError } from "graphql-request";
import {
  errorForServiceCode,
  errorForStatus,
  GraphQLError,
  type GraphQLErrorItem,
  ProtocolError,
  parseRetryAfter,
  RunpodkitError,
} from "./errors";

/**
 * A GraphQL failure as a typed, redacted SDK error: by the service's `extensions.code`, else by HTTP
 * status, else a GraphQLError with the errors array. graphql-request's own ClientError is never kept:
 * its message and fields hold the URL (with the key) and the variables (with passwords). `repeatable`:
 * whether the operation is safe to send again (a query), for the error's `retryable`.
 */
export function graphqlErrorOf(
  operation: string,
  error: unknown,
  secrets: readonly string[],
  repeatable = true,
): RunpodkitError {
  if (error instanceof RunpodkitError) return error;
  if (!(error instanceof ClientError)) {
    return new ProtocolError({
      operation,
      message: `${operation}: ${error instanceof Error ? error.message : String(error)}`,
      secrets,
    });
  }
  const items: GraphQLErrorItem[] = (error.response.errors ?? []).map((e) => ({
    message: e.message,
    ...(e.path ? { path: e.path } : {}),
    ...(e.extensions ? { extensions: e.extensions } : {}),
  }));
  const status = error.response.status;
  const first = items[0];
  const serviceCode = typeof first?.extensions?.code === "string" ? first.extensions.code : undefined;
  const field = typeof first?.extensions?.field === "string" ? first.extensions.field : undefined;
  const text = items.length > 0 ? items.map((e) => e.message).join("; ") : bodyMessage(error.response.body);
  const details = {
    operation,
    message: `${operation}: ${text}${status >= 400 ? ` (HTTP ${status})` : ""}`,
    field,
    retryAfterMs: parseRetryAfter(error.response.headers?.get("retry-after") ?? undefined),
    repeatable,
    secrets,
  };
  if (serviceCode) {
    const byCode = errorForServiceCode(serviceCode, { ...details, status });
    if (byCode) return byCode;
  }
  if (status >= 400) return errorForStatus(status, { ...details, serviceCode });
  return new GraphQLError({ ...details, status, serviceCode, graphqlErrors: items });
}

function bodyMessage(body: unknown): string {
  if (typeof body !== "string" || body === "") return "no message";
  try {
    const parsed = JSON.parse(body) as { message?: unknown };
    if (typeof parsed.message === "string") return parsed.message;
  } catch {
    // not JSON: the text itself
  }
  return body.slice(0, 300);
}
