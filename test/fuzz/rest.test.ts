import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY } from "../service/jobs/harness";
import {
  bodyOf,
  contentType,
  credential,
  expectServed,
  type FuzzRequest,
  type FuzzService,
  fuzzParameters,
  fuzzSeed,
  hostileValue,
  queryOf,
  segment,
  send,
  startFuzzService,
} from "./support";

/**
 * REST v1 under random and hostile requests generated from the service's own OpenAPI document
 * (GET /v1/openapi.json): every operation, its path parameters (real ids, foreign, made-up), its query
 * parameters, bodies of its schema with hostile values mixed in, and every wrong body. Zero 5xx (but
 * the 501s an operation documents), and the service answers its health check after every request.
 */
let service: FuzzService;
const operations: Operation[] = [];
const ids: string[] = [];
const seed = fuzzSeed("rest");

interface Operation {
  method: string;
  path: string;
  query: string[];
  body: JsonSchema | undefined;
  allowed501: boolean;
}

type JsonSchema = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  minimum?: number;
  maximum?: number;
  format?: string;
};

/** Values of a JSON schema, each one sometimes replaced by a hostile value. */
function valuesOf(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
  const exact = exactValuesOf(schema, depth);
  return fc.oneof({ weight: 5, arbitrary: exact }, { weight: 1, arbitrary: hostileValue });
}

function exactValuesOf(schema: JsonSchema, depth: number): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.const !== undefined) return fc.constant(schema.const);
  const union = schema.anyOf ?? schema.oneOf;
  if (union && union.length > 0) return fc.oneof(...union.map((s) => valuesOf(s, depth + 1)));
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length > 1) return fc.oneof(...types.map((type) => exactValuesOf({ ...schema, type }, depth)));
  switch (types[0]) {
    case "object": {
      if (depth > 4 || !schema.properties)
        return fc.dictionary(fc.string({ maxLength: 8 }), hostileValue, { maxKeys: 3 });
      const fields = Object.fromEntries(
        Object.entries(schema.properties).map(([name, s]) => [name, valuesOf(s, depth + 1)]),
      );
      return fc.record(fields, { requiredKeys: (schema.required ?? []).filter((k) => k in fields) });
    }
    case "array":
      return fc.array(schema.items ? valuesOf(schema.items, depth + 1) : hostileValue, { maxLength: 3 });
    case "string":
      return schema.format === "uri" ? fc.webUrl() : fc.string({ maxLength: 24 });
    case "integer":
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 });
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    default:
      return hostileValue;
  }
}

beforeAll(async () => {
  service = await startFuzzService();
  ids.push(service.endpoint.id, service.endpoint.templateId, service.otherEndpoint.id);
  const doc = await send(service, { method: "GET", path: "/v1/openapi.json" });
  expect(doc.status).toBe(200);
  const paths = (JSON.parse(doc.text) as { paths: Record<string, Record<string, Record<string, unknown>>> })
    .paths;
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const parameters = (op.parameters ?? []) as { name: string; in: string }[];
      const content = (op.requestBody as { content?: Record<string, { schema: JsonSchema }> } | undefined)
        ?.content;
      operations.push({
        method: method.toUpperCase(),
        path: `/v1${path}`,
        query: parameters.filter((p) => p.in === "query").map((p) => p.name),
        body: content?.["application/json"]?.schema,
        allowed501: "501" in ((op.responses ?? {}) as object),
      });
    }
  }
});
afterAll(async () => service.h.close());

function requestOf(op: Operation): fc.Arbitrary<FuzzRequest> {
  const params = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);
  return fc
    .record({
      segments: fc.array(
        segment(() => ids),
        { minLength: params.length, maxLength: params.length },
      ),
      query: queryOf(op.query),
      key: credential,
      type: contentType,
      body:
        op.body || op.method !== "GET"
          ? bodyOf(op.body ? valuesOf(op.body) : undefined)
          : fc.constant(undefined),
    })
    .map(({ segments, query, key, type, body }) => {
      let i = 0;
      const path = op.path.replace(/\{\w+\}/g, () => segments[i++] ?? "x");
      const headers: Record<string, string> = {};
      if (key !== null) headers.authorization = key.startsWith("rpk_") ? `Bearer ${key}` : key;
      if (body !== undefined) headers["content-type"] = type;
      const req: FuzzRequest = { method: op.method, path: `${path}${query}`, headers };
      if (body !== undefined) req.body = body;
      return req;
    });
}

describe("fuzz: REST v1 from its OpenAPI document", () => {
  it("every operation: zero 5xx, always answering", { timeout: 120_000 }, async () => {
    expect(operations.length).toBeGreaterThan(20);
    const arbitrary = fc.constantFrom(...operations).chain((op) => requestOf(op).map((req) => ({ op, req })));
    let succeeded = 0;
    await fc.assert(
      fc.asyncProperty(arbitrary, async ({ op, req }) => {
        const reply = await send(service, req);
        if (reply.status < 300) succeeded++;
        if (reply.status === 200 && ids.length < 300 && reply.text.startsWith("{")) {
          const id = (JSON.parse(reply.text) as { id?: unknown }).id;
          if (typeof id === "string") ids.push(id);
        }
        await expectServed(service, req, reply, op.allowed501);
      }),
      fuzzParameters(seed, 1_200),
    );
    // The generated requests reach the rules, not only the refusals.
    expect(succeeded).toBeGreaterThan(20);
    // The fuzzed account still works as a client expects.
    const list = await send(service, {
      method: "GET",
      path: "/v1/endpoints",
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(list.status).toBe(200);
  });

  it("bodyless operations sent with content-type application/json and no body: as without it", async () => {
    const bodyless = operations.filter((op) => op.method !== "GET" && op.body === undefined);
    expect(bodyless.map((op) => `${op.method} ${op.path}`)).toContain("DELETE /v1/templates/{templateId}");
    for (const op of bodyless) {
      const path = op.path.replace(/\{\w+\}/g, "unknown-id");
      const plain = await send(service, {
        method: op.method,
        path,
        headers: { authorization: `Bearer ${KEY}` },
      });
      const typed = await send(service, {
        method: op.method,
        path,
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      });
      expect({ status: typed.status, text: typed.text }, `${op.method} ${op.path}`).toEqual({
        status: plain.status,
        text: plain.text,
      });
    }
    // And on a real resource: deleted.
    const created = await send(service, {
      method: "POST",
      path: "/v1/templates",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "bodyless-delete", imageName: "x" }),
    });
    const id = (JSON.parse(created.text) as { id: string }).id;
    const deleted = await send(service, {
      method: "DELETE",
      path: `/v1/templates/${id}`,
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    });
    expect(deleted.status).toBe(204);
    // A route that needs a body still says so, naming it.
    const empty = await send(service, {
      method: "POST",
      path: "/v1/templates",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    });
    expect(empty.status).toBe(400);
    expect(JSON.parse(empty.text)).toEqual({
      message: "body: a JSON object is required",
      code: "VALIDATION",
      field: "body",
    });
  });

  it("a repeatable filter given an unknown value says which values it takes", async () => {
    const params: [string, string, string][] = [
      ["/v1/pods", "gpuTypeId", "NVIDIA A40"],
      ["/v1/pods", "dataCenterId", "EU-RO-1"],
      ["/v1/pods", "cpuFlavorId", "cpu3c"],
      ["/v1/billing/endpoints", "dataCenterId", "EU-RO-1"],
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...params),
        fc.stringMatching(/^[a-z]{1,12}$/),
        fc.boolean(),
        async ([path, key, known], unknown, repeated) => {
          const query = repeated
            ? `${key}=${encodeURIComponent(known)}&${key}=${unknown}`
            : `${key}=${unknown}`;
          const reply = await send(service, {
            method: "GET",
            path: `${path}?${query}`,
            headers: { authorization: `Bearer ${KEY}` },
          });
          expect(reply.status, reply.text).toBe(400);
          const body = JSON.parse(reply.text) as { message: string; field: string };
          expect(body.field).toBe(key);
          expect(body.message).not.toContain("Invalid input");
          // The second value (index 1) is the unknown one when repeated.
          expect(body.message).toMatch(new RegExp(`^${key}(\\.1)?: (1: )?Invalid option: expected one of`));
          expect(body.message).toContain(JSON.stringify(known));
        },
      ),
      fuzzParameters(seed, 40),
    );
  });
});
