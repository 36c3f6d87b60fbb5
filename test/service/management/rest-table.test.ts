import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REST_ROUTE_TABLE } from "../../../service/management/rest/index";
import { restRoutes } from "../../../service/management/rest/routes";
import { type TestService, withService } from "../../helpers/service";

/*
 * REST v1 registers its routes at start from a table of methods and URLs (rest/index.ts) and loads
 * the routes themselves (handlers, zod schemas) with the first request: the table must name every
 * route, in order, and nothing else, and each must answer as registered.
 */

let service: TestService;

beforeAll(async () => {
  service = await withService();
});
afterAll(() => service.close());

describe("REST route table", () => {
  it("is the routes' own methods and URLs, in order", () => {
    expect(REST_ROUTE_TABLE.map(([method, url]) => `${method} ${url}`)).toEqual(
      restRoutes.map(({ spec }) => `${spec.method} ${spec.url}`),
    );
    expect(REST_ROUTE_TABLE.length).toBe(35);
  });

  it("every route in it is registered: without a key it answers 401, not 404", async () => {
    const statuses = new Map<string, number>();
    for (const [method, url] of REST_ROUTE_TABLE) {
      const path = url.replace(/:\w+/g, "x");
      const reply = await fetch(`${service.restUrl}${path}`, { method });
      await reply.arrayBuffer();
      statuses.set(`${method} ${url}`, reply.status);
    }
    expect([...statuses.values()].every((status) => status === 401)).toBe(true);
    const unknown = await fetch(`${service.restUrl}/nothing-here`);
    await unknown.arrayBuffer();
    expect(unknown.status).toBe(404);
  });
});
