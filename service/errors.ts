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
  | "HOST_NOT_ALLOWED" // the Host header names none of the service's names (DNS rebinding: edge/hosts.ts)
  | "UNAVAILABLE"; // the service cannot take this now (memory budget, the store refusing writes): retry later

export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  /** For RATE_LIMITED and UNAVAILABLE: when the client may try again. */
  readonly retryAfterMs: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { field?: string; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ServiceError";
    this.code = code;
    this.field = options.field;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** Longer than any id the service hands out: REST refuses such a path segment. */
export const MAX_ID_CHARS = 100;

/**
 * An id (or a quoted name, with a `max` past the longest name) as a message shows it: one longer is
 * cut, so a reply never echoes a hostile megabyte back (GraphQL arguments and body fields are bounded
 * only by the body).
 */
export const shownId = (id: string, max: number = MAX_ID_CHARS): string =>
  id.length <= max ? id : `${id.slice(0, 40)}… (${id.length} characters; no id is that long)`;

export const notFound = (what: string, id: string, max: number = MAX_ID_CHARS, field?: string) =>
  new ServiceError("NOT_FOUND", `${what} ${shownId(id, max)} not found`, { field });

/**
 * A management resource's own id that is not there. The field is `id`: each wire renames it to the
 * path parameter or argument that carried the id (`asField`), as the job API's 404s name theirs.
 */
export const resourceNotFound = (what: string, id: string) => notFound(what, id, MAX_ID_CHARS, "id");

/**
 * Runs `call`; a resource's own id not found (`resourceNotFound`) is named as `field`, the path
 * parameter or GraphQL argument the id came in.
 */
export function asField<T>(field: string, call: () => T): T {
  try {
    return call();
  } catch (error) {
    if (
      error instanceof ServiceError &&
      error.code === "NOT_FOUND" &&
      error.field === "id" &&
      field !== "id"
    ) {
      throw new ServiceError("NOT_FOUND", error.message, { field });
    }
    throw error;
  }
}

/**
 * An endpoint of the job API's path that is not there (the field is the path's endpointId); none
 * given (`/v2//run`) is a 400 saying one is required, as an empty job id is (jobIdRequired).
 */
export const endpointNotFound = (endpointId: string) =>
  endpointId === ""
    ? new ServiceError(
        "VALIDATION",
        "endpointId: an endpoint id is required; the path is /v2/{endpointId}/...",
        {
          field: "endpointId",
        },
      )
    : notFound("endpoint", endpointId, MAX_ID_CHARS, "endpointId");

/**
 * A job of the job API that is not there, naming the job and the endpoint it was looked up on (the
 * field is the path's jobId), and why a job once answered can be gone.
 */
export const jobNotFound = (jobId: string, endpointId: string) =>
  jobId === ""
    ? jobIdRequired()
    : new ServiceError(
        "NOT_FOUND",
        `job ${shownId(jobId)} not found on endpoint ${shownId(endpointId)}: check the job id and the endpoint id (a job's result is kept 30 minutes after /run, 1 minute after /runsync; past its ttl a job is deleted)`,
        { field: "jobId" },
      );

/**
 * A job a worker names that its endpoint does not have, naming `jobId` as the client routes' 404 does;
 * an empty id (a path ending `/job-done/w1/`) is jobIdRequired, as on the client's routes.
 */
export const workerJobNotFound = (jobId: string) =>
  jobId === "" ? jobIdRequired() : notFound("job", jobId, MAX_ID_CHARS, "jobId");

/**
 * A job route's path with no job id (`/status/`): a 400 saying so, not a 404 for "job  not found".
 * Decided where a lookup fails, so a found job costs no check.
 */
export const jobIdRequired = () =>
  new ServiceError("VALIDATION", "jobId: a job id is required; the path ends where the job id goes", {
    field: "jobId",
  });
export const invalid = (field: string, message: string) =>
  new ServiceError("VALIDATION", `${field}: ${message}`, { field });
