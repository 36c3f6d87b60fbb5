import { redact } from "../sdk/errors";

/** Stable codes of the provider's own errors; service errors keep the SDK's code. */
export type ProviderErrorCode =
  | "CONFIG" // no API key, or a bad URL in config
  | "VALIDATION" // inputs the service would reject (normally caught by check first)
  | "NOT_FOUND" // adoptId names nothing
  | "TIMEOUT" // a refusal outlasted its configured bound
  | "SERVICE"; // the service answered with an error (code of the SDK error in `serviceCode`)

export class ProviderError extends Error {
  readonly code: ProviderErrorCode;
  /** What was being done, e.g. "create endpoint my-endpoint". */
  readonly operation: string;
  readonly field: string | undefined;
  /** The SDK error code when the service refused, e.g. "NOT_FOUND", "CONFLICT". */
  readonly serviceCode: string | undefined;

  constructor(
    code: ProviderErrorCode,
    message: string,
    options: { operation: string; field?: string; serviceCode?: string; cause?: unknown },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ProviderError";
    this.code = code;
    this.operation = options.operation;
    this.field = options.field;
    this.serviceCode = options.serviceCode;
  }
}

/** The `code` of any coded error (ours or the SDK's), or undefined. */
export function codeOf(error: unknown): string | undefined {
  if (error !== null && typeof error === "object" && "code" in error) {
    const code = (error as { code: unknown }).code;
    if (typeof code === "string") return code;
  }
  return undefined;
}

/** The SDK's redaction (api_key values, Bearer tokens, each known secret), reused at this boundary. */
export { redact };

/**
 * Wraps any failure of a service call as a ProviderError that names the operation, keeps the service's
 * code and field, and carries no credential in its message.
 */
export function toProviderError(
  error: unknown,
  operation: string,
  secrets: readonly string[],
): ProviderError {
  if (error instanceof ProviderError) {
    if (error.message === redact(error.message, secrets)) return error;
    return new ProviderError(error.code, redact(error.message, secrets), {
      operation: error.operation,
      ...(error.field === undefined ? {} : { field: error.field }),
      ...(error.serviceCode === undefined ? {} : { serviceCode: error.serviceCode }),
    });
  }
  const message = redact(error instanceof Error ? error.message : String(error), secrets);
  const serviceCode = codeOf(error);
  const field = fieldOf(error);
  return new ProviderError(
    serviceCode === "NOT_FOUND" ? "NOT_FOUND" : "SERVICE",
    `${operation}: ${message}`,
    {
      operation,
      ...(field === undefined ? {} : { field }),
      ...(serviceCode === undefined ? {} : { serviceCode }),
    },
  );
}

function fieldOf(error: unknown): string | undefined {
  if (error !== null && typeof error === "object" && "field" in error) {
    const field = (error as { field: unknown }).field;
    if (typeof field === "string") return field;
  }
  return undefined;
}

/**
 * A refusal of a delete that may pass once other resources let go (in use, attached, workers still
 * running). By code: CONFLICT. A REST error body carries only a message (as the real service's), so
 * the SDK can tell a 400 on DELETE only as VALIDATION; a DELETE by id has nothing else to validate, so
 * a 400 from the service (it has a status, unlike the SDK's own checks) counts as a refusal too.
 */
export function isDeleteRefusal(error: unknown): boolean {
  const code = codeOf(error);
  if (code === "CONFLICT") return true;
  const status = (error as { status?: unknown } | null)?.status;
  return code === "VALIDATION" && status === 400;
}
