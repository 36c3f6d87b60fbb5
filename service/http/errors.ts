import type { ErrorCode } from "../domain/errors";

/** The one mapping from error codes to HTTP statuses, used by REST and the job API. */
export const STATUS_OF: Record<ErrorCode, number> = {
  NOT_FOUND: 404,
  VALIDATION: 400,
  CONFLICT: 400,
  IN_USE: 400,
  PRECONDITION: 400,
  UNAUTHORIZED: 401,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  UNSUPPORTED: 400,
  NOT_IMPLEMENTED: 501,
};
