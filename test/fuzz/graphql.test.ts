import fc from "fast-check";
import {
  buildClientSchema,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
  getIntrospectionQuery,
  getNamedType,
  type IntrospectionQuery,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
} from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY, OTHER_KEY } from "../service/jobs/harness";
import {
  contentType,
  expectServed,
  type FuzzRequest,
  type FuzzService,
  fuzzParameters,
  fuzzSeed,
  hostileString,
  hostileText,
  hostileValue,
  send,
  startFuzzService,
} from "./support";

/**
 * GraphQL under random and hostile documents generated from the schema the service reports by
 * introspection: every query and mutation field with variables of its argument types (hostile values
 * mixed in), random selections, and documents meant to cost: aliases, depth, fragments, junk. Zero
 * 5xx, and the service answers its health check after every request.
 */
let service: FuzzService;
let schema: GraphQLSchema;
const seed = fuzzSeed("graphql");

beforeAll(async () => {
  service = await startFuzzService();
  const reply = await send(service, {
    method: "POST",
    path: `/graphql?api_key=${KEY}`,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query: getIntrospectionQuery() }),
  });
  expect(reply.status).toBe(200);
  schema = buildClientSchema((JSON.parse(reply.text) as { data: IntrospectionQuery }).data);
});
afterAll(async () => service.h.close());

/** Values of an input type, sometimes replaced by a hostile value (or null where null is refused). */
function inputValues(type: GraphQLInputType, depth = 0): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 6, arbitrary: exactInput(type, depth) }, { weight: 1, arbitrary: hostileValue });
}

function exactInput(type: GraphQLInputType, depth: number): fc.Arbitrary<unknown> {
  if (isNonNullType(type)) return exactInput(type.ofType, depth);
  if (isListType(type)) return fc.array(inputValues(type.ofType, depth + 1), { maxLength: 3 });
  if (isEnumType(type)) return fc.constantFrom(...type.getValues().map((v) => v.name));
  if (isInputObjectType(type)) {
    if (depth > 3) return fc.constant({});
    const fields = Object.fromEntries(
      Object.values(type.getFields()).map((f) => [f.name, inputValues(f.type, depth + 1)]),
    );
    const required = Object.values(type.getFields())
      .filter((f) => isNonNullType(f.type))
      .map((f) => f.name);
    return fc.record(fields, { requiredKeys: required });
  }
  if (isScalarType(type)) {
    if (type.name === "Int") return fc.oneof(fc.integer({ min: -10, max: 200 }), fc.constant(2 ** 31));
    if (type.name === "Float") return fc.double({ noNaN: true, noDefaultInfinity: true });
    if (type.name === "Boolean") return fc.boolean();
    return fc.oneof(fc.string({ maxLength: 20 }), hostileString);
  }
  return hostileValue;
}

/** A selection of `type`'s fields, `depth` levels at most. */
function selectionOf(type: GraphQLNamedType, depth: number): fc.Arbitrary<string> {
  if (!isObjectType(type)) return fc.constant("");
  const fields = Object.values(type.getFields()).filter((f) => f.args.every((a) => !isNonNullType(a.type)));
  if (fields.length === 0) return fc.constant("{ __typename }");
  const fieldArb = fc.constantFrom(...fields).chain((field) => {
    const child = getNamedType(field.type);
    if (isObjectType(child)) {
      return depth <= 0
        ? fc.constant("__typename")
        : selectionOf(child, depth - 1).map((s) => `${field.name} ${s}`);
    }
    return fc.constant(field.name);
  });
  return fc.array(fieldArb, { minLength: 1, maxLength: 5 }).map((parts) => `{ ${parts.join(" ")} }`);
}

/** An operation on one root field: its arguments as variables, a random selection of its result. */
function operationOf(kind: "query" | "mutation", root: GraphQLObjectType): fc.Arbitrary<FuzzBody> {
  return fc
    .constantFrom(...Object.values(root.getFields()))
    .chain((field: GraphQLField<unknown, unknown>) => {
      const definitions = field.args.map((a) => `$${a.name}: ${a.type.toString()}`).join(", ");
      const uses = field.args.map((a) => `${a.name}: $${a.name}`).join(", ");
      const variables = fc.record(Object.fromEntries(field.args.map((a) => [a.name, inputValues(a.type)])), {
        requiredKeys: [],
      });
      const named = getNamedType(field.type);
      return fc
        .tuple(variables, isObjectType(named) ? selectionOf(named, 3) : fc.constant(""))
        .map(([vars, selection]) => ({
          query: `${kind} Fuzz${definitions ? `(${definitions})` : ""} { ${field.name}${uses ? `(${uses})` : ""} ${selection} }`,
          variables: vars,
        }));
    });
}

interface FuzzBody {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
}

/** Documents meant to cost or to confuse: many aliases, deep selections, fragment cycles, junk. */
const costly: fc.Arbitrary<FuzzBody> = fc.oneof(
  fc.integer({ min: 10, max: 3_000 }).map((n) => ({
    query: `{ ${Array.from({ length: n }, (_, i) => `a${i}: myself { endpoints { id env { key } } }`).join(" ")} }`,
  })),
  fc
    .integer({ min: 5, max: 8_000 })
    .map((n) => ({ query: `{ myself ${"{ endpoints ".repeat(n)}${"}".repeat(n)} }` })),
  fc
    .integer({ min: 5, max: 8_000 })
    .map((n) => ({ query: `{ myself { endpoint(id: ${"[".repeat(n)}"x"${"]".repeat(n)}) { id } } }` })),
  fc.constant({ query: "query { myself { ...a } } fragment a on User { ...b } fragment b on User { ...a }" }),
  fc.constant({
    query: "{ __schema { types { fields { type { ofType { ofType { ofType { name } } } } } } } }",
  }),
  fc.record(
    { query: hostileString, variables: hostileValue, operationName: hostileValue },
    { requiredKeys: [] },
  ),
);

const bodies = (): fc.Arbitrary<string | undefined> => {
  const query = schema.getQueryType();
  const mutation = schema.getMutationType();
  const ops: fc.Arbitrary<FuzzBody>[] = [];
  if (query) ops.push(operationOf("query", query));
  if (mutation) ops.push(operationOf("mutation", mutation));
  return fc.oneof(
    { weight: 6, arbitrary: fc.oneof(...ops).map((b) => JSON.stringify(b)) },
    { weight: 2, arbitrary: costly.map((b) => JSON.stringify(b)) },
    { weight: 1, arbitrary: hostileText },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
};

describe("fuzz: GraphQL from its introspected schema", () => {
  it("every root field and costly documents: zero 5xx, always answering", { timeout: 120_000 }, async () => {
    const key = fc.oneof(
      { weight: 8, arbitrary: fc.constant(`?api_key=${KEY}`) },
      { weight: 1, arbitrary: fc.constantFrom(`?api_key=${OTHER_KEY}`, "?api_key=wrong", "", "?api_key=") },
    );
    const requests = fc.record({ key, body: bodies(), type: contentType }).map(({ key: q, body, type }) => {
      const req: FuzzRequest = { method: "POST", path: `/graphql${q}`, headers: {} };
      if (body !== undefined) {
        req.body = body;
        (req.headers as Record<string, string>)["content-type"] = type;
      }
      return req;
    });
    let executed = 0;
    await fc.assert(
      fc.asyncProperty(requests, async (req) => {
        const reply = await send(service, req);
        if (reply.status === 200 && reply.text.includes('"data":{')) executed++;
        await expectServed(service, req, reply);
      }),
      fuzzParameters(seed, 700),
    );
    // The generated documents reach the resolvers, not only the refusals.
    expect(executed).toBeGreaterThan(20);
  });
});
