/** Errors of the test engine: a stable code, the operation, and the resource or field concerned. */
export class EngineError extends Error {
  constructor(
    readonly code: string,
    readonly operation: string,
    message: string,
    readonly urn?: string,
    readonly field?: string,
  ) {
    super(urn ? `${operation} ${urn}: ${message}` : `${operation}: ${message}`);
    this.name = "EngineError";
  }
}
