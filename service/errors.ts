/**
 * Errors of the service's rules, by code. The domain throws these; each wire (REST, GraphQL, jobs)
 * maps the code to its status and body in one place (service/http/errors.ts). Never match on message.
 */
export type ErrorCode =
  | "NOT_FOUND" // no such resource in this account (also other accounts' resources: ids don't leak)
  | "METHOD_NOT_ALLOWED" // the path exists, not with this method (the reply's Allow header lists them)
  | "VALIDATION" // bad input; `field` names it
  | "CONFLICT" // unique name taken
  | "IN_USE" // referenced by another resource (template used by an endpoint, attached volume)
  | "PRECONDITION" // state forbids the operation (endpoint delete with workers > 0, retry of a non-failed job)
  | "UNAUTHORIZED"
  | "PAYLOAD_TOO_LARGE"
  | "RATE_LIMITED"
  | "UNSUPPORTED" // e.g. queue operations on a load-balancing endpoint
  | "NOT_IMPLEMENTED"
  | "UNAVAILABLE"; // the service cannot take this now (memory budget, the store refusing writes): retry later

export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  /** For RATE_LIMITED and UNAVAILABLE: when the client may try again. */
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode, message: string, options: { field?: string; retryAfterMs?: number } = {}) {
    super(message);
    this.name = "ServiceError";
    this.code = code;
    this.field = options.field;
    this.retryAfterMs = options.retryAfterMs;
  }
}

export const notFound = (what: string, id: string) =>
  new ServiceError("NOT_FOUND", `${what} ${id} not found`);
export const invalid = (field: string, message: string) =>
  new ServiceError("VALIDATION", `${field}: ${message}`, { field });
