import { buildClientSchema, getIntrospectionQuery, type IntrospectionQuery, printSchema } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestService, withService } from "../helpers/service";

/*
 * The two documents that describe the management wire, read from a running service as a client reads
 * them and compared with the copies under __snapshots__/. A change to either is a change of the public
 * contract: update the snapshot on purpose (vitest -u) and say so in the CHANGELOG.
 */

let service: TestService;

beforeAll(async () => {
  service = await withService();
});
afterAll(() => service.close());

describe("wire documents", () => {
  it("GET /v1/openapi.json is the recorded document", async () => {
    const reply = await fetch(`${service.restUrl}/openapi.json`);
    expect(reply.status).toBe(200);
    const document = (await reply.json()) as Record<string, unknown>;
    expect(Object.keys(document.paths as object).length).toBeGreaterThan(20);
    await expect(`${JSON.stringify(document, null, 2)}\n`).toMatchFileSnapshot(
      "__snapshots__/openapi.json.snap",
    );
  });

  it("the GraphQL schema, read by introspection, is the recorded SDL", async () => {
    const reply = await fetch(`${service.graphqlUrl}?api_key=${service.apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: getIntrospectionQuery({ descriptions: true }) }),
    });
    expect(reply.status).toBe(200);
    const { data, errors } = (await reply.json()) as { data: IntrospectionQuery; errors?: unknown };
    expect(errors).toBeUndefined();
    const sdl = printSchema(buildClientSchema(data));
    expect(sdl).toContain("saveEndpoint(input: EndpointInput!): Endpoint");
    await expect(`${sdl}\n`).toMatchFileSnapshot("__snapshots__/schema.graphql.snap");
  });
});
