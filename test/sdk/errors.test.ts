import { describe, expect, it } from "vitest";
import {
  ConnectionError,
  errorForStatus,
  NotFoundError,
  parseRetryAfter,
  RateLimitedError,
  redact,
  ServerError,
  ValidationError,
} from "../../sdk/errors";
import { everyStringOf } from "./scripted-server";

const KEY = "rpa_ERRORSKEY_abcdef012345";

describe("redact", () => {
  it("masks api_key in URLs, bearer tokens and every occurrence of a secret", () => {
    const text = `GET https://api.runpod.io/graphql?x=1&api_key=${KEY}&y=2 authorization: Bearer ${KEY}; raw ${KEY}`;
    const out = redact(text, [KEY]);
    expect(out).toBe(
      "GET https://api.runpod.io/graphql?x=1&api_key=***&y=2 authorization: Bearer ***; raw ***",
    );
  });

  it("masks api_key even without knowing the secret", () => {
    expect(redact("https://h/graphql?api_key=abc123")).toBe("https://h/graphql?api_key=***");
  });

  it("leaves short 'secrets' alone rather than blanking ordinary words", () => {
    expect(redact("a b c", ["a"])).toBe("a b c");
  });
});

describe("RunpodkitError", () => {
  it("redacts the message, the stack and a detached copy of the cause", () => {
    const cause = Object.assign(new Error(`connect failed for ?api_key=${KEY}`), { code: "ECONNRESET" });
    const error = new ConnectionError({
      operation: "graphql.listEndpoints",
      message: `graphql.listEndpoints: ${KEY} unreachable`,
      cause,
      secrets: [KEY],
    });
    expect(error.code).toBe("CONNECTION");
    expect(error.name).toBe("ConnectionError");
    expect(error.cause).not.toBe(cause);
    expect((error.cause as { code?: string }).code).toBe("ECONNRESET");
    expect(everyStringOf(error)).not.toContain(KEY);
  });

  it("serializes its stable fields to JSON", () => {
    const error = new NotFoundError({ operation: "rest.templates.get", message: "gone", field: "id" });
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      name: "NotFoundError",
      code: "NOT_FOUND",
      operation: "rest.templates.get",
      message: "gone",
      status: 404,
      field: "id",
      retryable: false,
    });
  });
});

describe("errorForStatus", () => {
  it("prefers the service's code to the status", () => {
    const error = errorForStatus(400, { operation: "op", message: "m", serviceCode: "NOT_FOUND" });
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.status).toBe(400);
  });

  it("falls back to the status for unknown codes", () => {
    expect(errorForStatus(502, { operation: "op", message: "m", serviceCode: "ODD" })).toBeInstanceOf(
      ServerError,
    );
    expect(errorForStatus(422, { operation: "op", message: "m" })).toBeInstanceOf(ValidationError);
    expect(errorForStatus(429, { operation: "op", message: "m", retryAfterMs: 5 })).toBeInstanceOf(
      RateLimitedError,
    );
  });
});

describe("parseRetryAfter", () => {
  it("reads seconds and HTTP dates", () => {
    expect(parseRetryAfter("2")).toBe(2000);
    expect(parseRetryAfter("0.5")).toBe(500);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:10 GMT", Date.parse("2026-01-01T00:00:00Z"))).toBe(10_000);
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter("soon")).toBeUndefined();
  });
});

describe("what an error keeps from a reply", () => {
  it("bounds a reply's field and code to 300 characters (a reply may carry megabytes in them)", () => {
    const error = errorForStatus(400, {
      operation: "rest.templates.create",
      message: "no",
      field: "f".repeat(100_000),
      serviceCode: "C".repeat(100_000),
      secrets: [KEY],
    });
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.field).toBe(`${"f".repeat(300)}…`);
    expect(error.serviceCode).toBe(`${"C".repeat(300)}…`);
    // A short one is kept as sent.
    expect(errorForStatus(400, { operation: "x", message: "no", field: "name" }).field).toBe("name");
  });
});
