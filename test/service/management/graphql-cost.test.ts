import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { buildSchema, type FieldNode, type OperationDefinitionNode, parse, validate } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENDPOINT_DOCUMENTS, OPERATIONS } from "../../../sdk/graphql-documents";
import { costErrors, costLimitRule, GRAPHQL_COST_LIMITS } from "../../../service/management/graphql/cost";
import { typeDefs } from "../../../service/management/graphql/schema";
import { type Harness, KEY, startHarness } from "../jobs/harness";

const schema = buildSchema(typeDefs);

/** Limits a quarter of the service's: a document inside these is well inside the service's. */
const QUARTER = {
  ...GRAPHQL_COST_LIMITS,
  maxDepth: Math.floor(GRAPHQL_COST_LIMITS.maxDepth / 4),
  maxAliases: Math.floor(GRAPHQL_COST_LIMITS.maxAliases / 4),
  maxCost: Math.floor(GRAPHQL_COST_LIMITS.maxCost / 4),
};

/** Every GraphQL document the clients send: the SDK's, and the documents the tests send as a client would. */
function clientDocuments(): { name: string; source: string }[] {
  const documents: { name: string; source: string }[] = [];
  for (const [name, op] of Object.entries(OPERATIONS)) {
    if (typeof op.document === "string") documents.push({ name: `sdk ${name}`, source: op.document });
  }
  for (const [selection, docs] of Object.entries(ENDPOINT_DOCUMENTS)) {
    for (const [name, source] of Object.entries(docs))
      documents.push({ name: `sdk ${selection} ${name}`, source });
  }
  for (const dir of ["test/service/management", "test/sdk"]) {
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
      const text = readFileSync(join(dir, file), "utf8");
      for (const match of text.matchAll(/`((?:query|mutation)\b[^`$]*|\{\s*myself[^`$]*)`/g)) {
        const source = match[1] as string;
        try {
          // Documents the schema itself refuses are about other rules, not cost.
          if (validate(schema, parse(source)).length === 0) documents.push({ name: `${file}`, source });
        } catch {
          // not a GraphQL document
        }
      }
    }
  }
  return documents;
}

describe("GraphQL cost limits", () => {
  it("every client document stays within a quarter of each limit", () => {
    const documents = clientDocuments();
    expect(documents.length).toBeGreaterThan(20);
    for (const { name, source } of documents) {
      const errors = validate(schema, parse(source), [costLimitRule(QUARTER)]);
      expect({ name, errors: errors.map((e) => e.message) }).toEqual({ name, errors: [] });
    }
  });

  it("each bound refuses on its own, naming itself", () => {
    const refusal = (source: string) =>
      validate(schema, parse(source), [costLimitRule()]).map((error) => error.message);
    // Fragments are counted where they are spread; a cycle (graphql-js's own rule refuses it) ends.
    const chain = Array.from({ length: 12 }, (_, i) => {
      const next = i < 11 ? `...f${i + 1}` : "";
      return `fragment f${i} on User { endpoints { id } ${next} }`;
    });
    expect(refusal(`query { myself { ...f0 } } ${chain.join(" ")}`)).toEqual([]);
    expect(
      refusal("query { myself { ...a } } fragment a on User { ...b } fragment b on User { ...a }"),
    ).toEqual([]);
    const aliases = `{ ${Array.from({ length: GRAPHQL_COST_LIMITS.maxAliases + 1 }, (_, i) => `a${i}: myself { id }`).join(" ")} }`;
    expect(refusal(aliases)).toEqual([
      `Query refused: the document has more than ${GRAPHQL_COST_LIMITS.maxAliases} aliased fields (the limit)`,
    ]);
    // Lists under lists: each field counts listFactor times per list above it (here 321 a copy).
    const fanOut = `{ ${"myself { endpoints { env { key value } pods { id } } } ".repeat(20)} }`;
    expect(refusal(fanOut)[0]).toMatch(
      /^Query refused: the document's estimated cost is above 5000 \(the limit/,
    );
  });

  it("depth is bounded through fragments and inline fragments", () => {
    // The schema nests at most 3 levels of objects; spreads on the same type make it deeper.
    const spreads = Array.from(
      { length: GRAPHQL_COST_LIMITS.maxDepth + 1 },
      () => "... on Query { myself { id } }",
    );
    const flat = `{ ${spreads.join(" ")} }`;
    expect(validate(schema, parse(flat), [costLimitRule()])).toEqual([]);
    const tight = { ...GRAPHQL_COST_LIMITS, maxDepth: 2 };
    const errors = validate(schema, parse("{ myself { endpoints { env { key } } } }"), [
      costLimitRule(tight),
    ]);
    expect(errors.map((e) => e.message)).toEqual([
      "Query refused: the document nests fields more than 2 levels deep (the limit)",
    ]);
  });
});

describe("GraphQL cost limits, measured on the document", () => {
  it("a document past a bound is read only up to it (not visited whole, as validate() would)", () => {
    // 49,000 fields: within the parser's tokens, ten times the cost limit.
    const document = parse(`{ myself { ${"id ".repeat(49_000)}} }`, {
      maxTokens: GRAPHQL_COST_LIMITS.maxTokens,
    });
    const operation = document.definitions[0] as OperationDefinitionNode;
    const myself = operation.selectionSet.selections[0] as FieldNode;
    const selections = myself.selectionSet?.selections as FieldNode[];
    let read = 0;
    const counted = new Proxy(selections, {
      get(target, key, receiver) {
        if (typeof key === "string" && /^\d+$/.test(key)) read = Math.max(read, Number(key) + 1);
        return Reflect.get(target, key, receiver);
      },
    });
    (myself.selectionSet as { selections: readonly FieldNode[] }).selections = counted;
    expect(costErrors(schema, document).map((e) => e.message)).toEqual([
      `Query refused: the document's estimated cost is above ${GRAPHQL_COST_LIMITS.maxCost} (the limit; each field counts 1, times ${GRAPHQL_COST_LIMITS.listFactor} under each list field)`,
    ]);
    // myself counts 1, each id 1: the bound is passed at the 5,000th id.
    expect(read).toBe(GRAPHQL_COST_LIMITS.maxCost);
    // The rule form, inside validate(), reaches the same verdict.
    expect(validate(schema, parse("{ myself { id } }"), [costLimitRule()])).toEqual([]);
    expect(costErrors(schema, parse("{ myself { id } }"))).toEqual([]);
  });
});

describe("GraphQL cost limits over HTTP", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
    for (let i = 0; i < 20; i++) h.endpoint("runpodkit/echo", { workersMax: 0 });
  });
  afterAll(async () => h.close());

  const graphql = (query: string) =>
    h.call("POST", "/graphql", { body: { query }, key: `Bearer ${KEY}` }) as Promise<{
      status: number;
      body: { data: unknown; errors?: { message: string; extensions: { code: string } }[] };
    }>;

  it("1,000 aliases of myself { endpoints { ... } } are refused whole, nothing runs", async () => {
    const selection = "myself { endpoints { id name templateId env { key value } pods { id } } }";
    const query = `query { ${Array.from({ length: 1_000 }, (_, i) => `e${i}: ${selection}`).join(" ")} }`;
    const reply = await graphql(query);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      data: null,
      errors: [
        {
          // The first bound passed while counting: here the cost (each copy costs 321).
          message: expect.stringMatching(
            /^Query refused: the document's estimated cost is above 5000 \(the limit/,
          ),
          extensions: { code: "GRAPHQL_VALIDATION" },
        },
      ],
    });
    // The same selection once is served.
    const one = await graphql(`query { ${selection} }`);
    expect((one.body.data as { myself: { endpoints: unknown[] } }).myself.endpoints).toHaveLength(20);
  });

  it("a document nested past what the parser can hold, or with too many tokens, is refused", async () => {
    const deep = await graphql(`{ myself ${"{ endpoints ".repeat(5_000)}${"}".repeat(5_000)} }`);
    expect(deep.body.errors?.[0]?.message).toMatch(
      /^Query refused: the document is nested too deep|Syntax Error/,
    );
    const long = await graphql(`{ ${"myself { id } ".repeat(GRAPHQL_COST_LIMITS.maxTokens / 4)} }`);
    expect(long.body.errors?.[0]?.message).toMatch(/Document contains more th.. 50000 tokens/);
    expect((await graphql("{ myself { id } }")).body.data).toMatchObject({
      myself: { id: expect.any(String) },
    });
  });
});
