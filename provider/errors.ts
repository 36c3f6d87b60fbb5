import { NEVER_SENT_CODES } from "../sdk/dispatch-reply";
import { redact } from "../sdk/errors";

/** Stable codes of the provider's own errors; service errors keep the SDK's code. */
export type ProviderErrorCode =
  | "CONFIG" // no API key, or a bad URL in config
  | "VALIDATION" // inputs the service would reject (normally caught by check first)
  | "NOT_FOUND" // adoptId names nothing
  | "TIMEOUT" // a refusal outlasted its configured bound
  | "IN_USE" // a delete refused because other resources still use this one, and they are staying
  | "NAME_TAKEN" // a unique name is held by another resource
  | "VERSION" // the state was written by a newer runpodkit than the one running
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
 * Said with a refusal of the key: where the provider took it from (config.ts CONFIG_KEYS.apiKey) and
 * the usual cause, a key of one service sent to another (a real key to the local service, or the
 * reverse).
 */
export const KEY_REFUSED =
  "the service does not know this API key: check that the secret config runpodkit:apiKey (else the environment variable RUNPOD_API_KEY) holds a key of the service the runpodkit:restUrl, graphqlUrl and queueUrl settings point at";

/** Said when no service answered at all: most often the local service is not running. */
export const NOTHING_ANSWERED =
  "no service answered there: check that it runs (the local one: npm run serve, or runpodkit serve) and that the runpodkit:restUrl, graphqlUrl and queueUrl settings point at it";

/** Said when a connection that was made broke before the answer came: the service was reached. */
export const CONNECTION_BROKE =
  "the connection broke before the answer came: the service was reached, so the network or a proxy between dropped it; runpodkit sends again only what is safe to send again, within the resource's customTimeouts";

/** What to check, by the SDK's code of a refusal, for the ones a user's settings cause. */
const HINTS = new Map([
  ["UNAUTHORIZED", KEY_REFUSED],
  ["CONNECTION", NOTHING_ANSWERED],
]);

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
  const said = isBrokenConnection(error)
    ? CONNECTION_BROKE
    : serviceCode === undefined
      ? undefined
      : HINTS.get(serviceCode);
  const hint = said === undefined ? "" : ` (${said})`;
  return new ProviderError(
    serviceCode === "NOT_FOUND" ? "NOT_FOUND" : "SERVICE",
    `${operation}: ${message}${hint}`,
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

/** The code the service put in its reply (REST body `code`, GraphQL `extensions.code`), if any. */
function serviceCodeOf(error: unknown): string | undefined {
  if (error !== null && typeof error === "object" && "serviceCode" in error) {
    const code = (error as { serviceCode: unknown }).serviceCode;
    if (typeof code === "string") return code;
  }
  return undefined;
}

function statusOf(error: unknown): number | undefined {
  if (error !== null && typeof error === "object" && "status" in error) {
    const status = (error as { status: unknown }).status;
    if (typeof status === "number") return status;
  }
  return undefined;
}

/**
 * What a service that sends no code (the real REST API answers only `{"message"}`) says when a delete
 * is refused because something still uses the resource or workers still run. Used only when the reply
 * carries no code: a coded reply is judged by its code alone.
 */
const IN_USE_TEXT =
  /\b(in use|is used by|are using|being used|still (?:used|attached|running|has|have)|attached to)\b/i;
/** The same for a unique name that is taken. */
const NAME_TAKEN_TEXT = /\b(already exists|already taken|name is taken|must be unique|duplicate)\b/i;

/** A reply that carries no service code: only then is its message text consulted. */
function uncodedRefusal(error: unknown, pattern: RegExp): boolean {
  const code = codeOf(error);
  const status = statusOf(error);
  const uncoded = (code === "VALIDATION" && status === 400) || code === "GRAPHQL";
  return uncoded && error instanceof Error && pattern.test(error.message);
}

/**
 * The one refusal of a delete worth waiting out: the resource is still in use (IN_USE: a template
 * used by an endpoint, a volume attached, registry credentials used by a template) or the endpoint
 * still has workers (PRECONDITION). Every other error (a bad id, a bad key, a 5xx after the SDK's own
 * retries) is final and fails the delete at once.
 */
export function isDeleteRefusal(error: unknown): boolean {
  const serviceCode = serviceCodeOf(error);
  if (serviceCode !== undefined) return serviceCode === "IN_USE" || serviceCode === "PRECONDITION";
  return uncodedRefusal(error, IN_USE_TEXT);
}

/** A create refused because the (unique) name is taken. */
export function isNameTaken(error: unknown): boolean {
  const serviceCode = serviceCodeOf(error);
  if (serviceCode !== undefined) return serviceCode === "CONFLICT";
  return uncodedRefusal(error, NAME_TAKEN_TEXT);
}

/** The SDK's code of a failure: its own `code`, or the one a ProviderError kept as `serviceCode`. */
function sdkCodeOf(error: unknown): string | undefined {
  return error instanceof ProviderError ? error.serviceCode : codeOf(error);
}

/**
 * The service was busy rather than refusing the request: 429 (refused before anything was done),
 * a 5xx but 501 (overloaded, a gateway timing out) or the call's own timeout. Worth another attempt
 * within the operation's bound. A connection that could not be made is not: nothing answers there,
 * and waiting would only delay the error that says so (the SDK already retried it where it may).
 */
export function isBusy(error: unknown): boolean {
  const code = sdkCodeOf(error);
  if (code === "RATE_LIMITED" || code === "TIMEOUT") return true;
  return code === "SERVER_ERROR" && statusOf(error) !== 501;
}

/**
 * A connection that was made and then broke (reset, closed before the answer): the service was
 * reached, so a request that is safe to send again (an update, a delete, a read) is worth another
 * attempt within the operation's bound. One refused or never made is not (see isBusy).
 */
export function isBrokenConnection(error: unknown): boolean {
  const socketCode = connectionCodeOf(error);
  return socketCode !== undefined && !NEVER_SENT_CODES.includes(socketCode);
}

/** A connection never made (refused, or not made in time): no request reached the service. */
function neverSent(error: unknown): boolean {
  const socketCode = connectionCodeOf(error);
  return socketCode !== undefined && NEVER_SENT_CODES.includes(socketCode);
}

/** The socket's own code (ECONNRESET, UND_ERR_SOCKET, ECONNREFUSED) under the SDK's CONNECTION error. */
function connectionCodeOf(error: unknown): string | undefined {
  if (sdkCodeOf(error) !== "CONNECTION") return undefined;
  for (let e = (error as { cause?: unknown }).cause, depth = 0; depth < 4; depth++) {
    const code = codeOf(e);
    if (code === undefined) return undefined;
    if (code !== "CONNECTION") return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * A failure after which a create may have been carried out all the same: the request was sent but no
 * answer says whether the service acted on it (a 5xx, the call's timeout, a connection that broke,
 * not one that was refused).
 * A 429 is sent before anything is done, so it is not one.
 */
export function mayHaveActed(error: unknown): boolean {
  const code = sdkCodeOf(error);
  // Refused: nothing was sent, so nothing to look for (and no service there to ask).
  if (code === "CONNECTION") return !neverSent(error);
  if (code === "TIMEOUT") return true;
  return code === "SERVER_ERROR" && statusOf(error) !== 501;
}

/** The wait a 429 or 503 asked for (`Retry-After`), in ms, when the SDK kept it. */
export function retryAfterOf(error: unknown): number | undefined {
  for (let e: unknown = error, depth = 0; e !== null && typeof e === "object" && depth < 4; depth++) {
    const ms = (e as { retryAfterMs?: unknown }).retryAfterMs;
    if (typeof ms === "number" && Number.isFinite(ms) && ms >= 0) return ms;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
