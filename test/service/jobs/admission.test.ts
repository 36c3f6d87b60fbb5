import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { type Harness, KEY, startHarness } from "./harness";
import { ProtocolWorker } from "./protocol-worker";

/**
 * Issue 10, finding 4: the key and the rate limit are checked before a body is read. Each body here is
 * 9.9 MB that is not JSON: had it been parsed, the answer would be 400, not 401 or 429.
 */
const NOT_JSON = `{"input": ${"x".repeat(9_900_000)}`;

describe("authentication and rate limits before the body", () => {
  let h: Harness;
  let ep: EndpointRecord;

  beforeEach(async () => {
    h = await startHarness({
      config: {
        rateLimits: {
          enabled: true,
          requestsPerWorker: 0,
          limits: { run: { requests: 1, windowMs: 10_000, concurrent: null } },
        },
      },
    });
    ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
  });
  afterEach(async () => h.close());

  it("/run with a bad key: 401, the body unread", async () => {
    const reply = await h.call("POST", `/v2/${ep.id}/run`, { raw: NOT_JSON, key: "rpk_not_a_key" });
    expect(reply.status).toBe(401);
    expect(reply.body).toMatchObject({ code: "UNAUTHORIZED" });
  });

  it("/run over the rate limit: 429 with Retry-After, the body unread", async () => {
    expect((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: {} } })).status).toBe(200);
    const reply = await h.call("POST", `/v2/${ep.id}/run`, { raw: NOT_JSON });
    expect(reply.status).toBe(429);
    // A limit of 1 per 10 s on a sliding window: the one request weighs on the next window until its end.
    expect(reply.headers["retry-after"]).toBe("20");
    expect(reply.body).toMatchObject({ code: "RATE_LIMITED" });
  });

  it("an unknown endpoint: 404 before the body", async () => {
    const reply = await h.call("POST", "/v2/no-such-endpoint/runsync", { raw: NOT_JSON });
    expect(reply.status).toBe(404);
  });

  it("REST, GraphQL and worker routes: 401 with a bad key, the body unread", async () => {
    const rest = await h.call("POST", "/v1/templates", { raw: NOT_JSON, key: "Bearer rpk_not_a_key" });
    expect(rest.status).toBe(401);
    const gql = await h.call("POST", "/graphql?api_key=rpk_not_a_key", { raw: NOT_JSON, key: null });
    expect(gql.status).toBe(401);
    const worker = new ProtocolWorker(h, ep.id, "w-admission", "rpk_not_a_key");
    expect((await worker.done("job-1", NOT_JSON)).status).toBe(401);
    // The same bodies with the right key are read, and refused as what they are.
    expect((await h.call("POST", "/v1/templates", { raw: "{", key: `Bearer ${KEY}` })).status).toBe(400);
  });
});
