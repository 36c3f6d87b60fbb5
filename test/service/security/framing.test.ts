import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestService, withService } from "../../helpers/service";

/*
 * The pages a person uses with a key in hand (the console; the REST docs, whose "Authorize" and
 * "Try it out" send requests with it) may not be framed by another site under a decoy (clickjacking).
 */
let service: TestService;
beforeAll(async () => {
  service = await withService();
});
afterAll(() => service?.close());

describe("pages that take a key refuse to be framed", () => {
  it.each(["/console/", "/v1/docs", "/v1/docs/", "/v1/docs/static/swagger-initializer.js"])(
    "%s",
    async (path) => {
      const reply = await fetch(`${service.queueUrl}${path}`);
      expect(reply.status).toBe(200);
      expect(reply.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(reply.headers.get("x-content-type-options")).toBe("nosniff");
      expect(reply.headers.get("referrer-policy")).toBe("no-referrer");
      await reply.arrayBuffer();
    },
  );

  it("the docs also say so to browsers that predate frame-ancestors", async () => {
    const reply = await fetch(`${service.restUrl}/docs/`);
    expect(reply.headers.get("x-frame-options")).toBe("DENY");
    await reply.arrayBuffer();
  });
});
