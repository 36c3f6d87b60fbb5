import fc from "fast-check";
import JSON5 from "json5";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JSON5_MAX_CHARS, lenientJson, memberTooDeep, repeatedKey } from "../../service/edge/body";
import { KEY } from "../service/jobs/harness";
import {
  expectServed,
  type FuzzRequest,
  type FuzzService,
  fuzzParameters,
  fuzzSeed,
  send,
  startFuzzService,
} from "./support";

/*
 * The scans of a body's text before it is parsed (service/edge/body.ts): the depth bound (every body,
 * worker bodies read as JSON5) and the refusal of a key given twice in one object (management bodies).
 * Texts are written here from a tree, with keys repeated at random depths, keys and strings escaped at
 * random (`\u0041` for "A", quotes, backslashes, braces), random whitespace and, for JSON5, comments
 * holding quotes and brackets. The verdicts are checked against the tree (which key repeats first, in
 * what object) and against what a parser reads (JSON.parse, JSON5.parse).
 */
const seed = fuzzSeed("body");

type Node =
  | { kind: "object"; entries: [string, Node][] }
  | { kind: "array"; items: Node[] }
  | { kind: "leaf"; value: null | boolean | number | string };

/** Few distinct keys, so objects often repeat one; some only an escape tells apart from another. */
const keyOf = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom("a", "A", "b", 'k"', "k\\", "{", "}]", ":", "é", "\u2028", "", "a b"),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 3 }) },
);

const leafOf = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom('"', "\\", "{", "}", "[", "]", '{"a":1,"a":2}', "'", "//", "/*", "a"),
  fc.string({ maxLength: 6 }),
);

const tree: fc.Arbitrary<Node> = fc.letrec<{ node: Node }>((tie) => ({
  node: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leafOf.map((value): Node => ({ kind: "leaf", value })),
    fc.array(tie("node"), { maxLength: 4 }).map((items): Node => ({ kind: "array", items })),
    fc
      .array(fc.tuple(keyOf, tie("node")), { maxLength: 4 })
      .map((entries): Node => ({ kind: "object", entries })),
  ),
})).node;

/** A small PRNG (mulberry32): the text's choices of escapes and whitespace, replayable from the case. */
function prng(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const JSON_SPACE = ["", " ", "\n", "\t", "\r\n", "  \n "];
/** JSON5 comments that would open a string or a level if a scan read them as JSON. */
const JSON5_SPACE = [
  ...JSON_SPACE,
  "/* it's [ */",
  '// a "quote" {[\n',
  "/*'*/",
  "// [[[\u2028",
  "/**/",
  "//'\r",
];

/** A string literal of `value`: each character as it is or escaped (`\u0041`, `\"`, `\/`...) at random. */
function quote(value: string, pick: () => number): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.charCodeAt(0);
    const escaped = pick() < 0.3;
    if (ch === '"' || ch === "\\") out += escaped && ch.length === 1 ? unicode(code) : `\\${ch}`;
    else if (code < 0x20) out += unicode(code);
    else if (ch === "/" && escaped) out += "\\/";
    else if (escaped && ch.length === 1) out += unicode(code);
    else out += ch;
  }
  return `${out}"`;
}

const unicode = (code: number) => `\\u${code.toString(16).padStart(4, "0")}`;

interface Written {
  text: string;
  /** The top-level keys as written (escapes and all), in order, with their value's depth. */
  top: { raw: string; depth: number }[];
}

/** The text of a tree: strict JSON, or JSON5 with comments among the whitespace. */
function write(node: Node, style: number, json5: boolean): Written {
  const pick = prng(style);
  const spaces = json5 ? JSON5_SPACE : JSON_SPACE;
  const ws = () => spaces[Math.floor(pick() * spaces.length)] as string;
  const top: Written["top"] = [];
  const go = (n: Node, level: number): string => {
    if (n.kind === "leaf")
      return typeof n.value === "string" ? quote(n.value, pick) : JSON.stringify(n.value);
    if (n.kind === "array")
      return `[${ws()}${n.items.map((item) => go(item, level + 1)).join(`${ws()},${ws()}`)}${ws()}]`;
    const members = n.entries.map(([key, value]) => {
      const raw = quote(key, pick);
      const member = `${raw}${ws()}:${ws()}${go(value, level + 1)}`;
      if (level === 0) top.push({ raw: raw.slice(1, -1), depth: depthOf(value) });
      return member;
    });
    return `{${ws()}${members.join(`${ws()},${ws()}`)}${ws()}}`;
  };
  const text = `${ws()}${go(node, 0)}${ws()}`;
  return { text, top };
}

/** Levels of objects and arrays in a tree (a leaf: 0). */
function depthOf(node: Node): number {
  if (node.kind === "leaf") return 0;
  const children = node.kind === "array" ? node.items : node.entries.map(([, value]) => value);
  return 1 + Math.max(0, ...children.map(depthOf));
}

/** The tree with each object's keys once (the first of each), so a parser loses nothing of it. */
function unique(node: Node): Node {
  if (node.kind === "leaf") return node;
  if (node.kind === "array") return { kind: "array", items: node.items.map(unique) };
  const seen = new Set<string>();
  const entries = node.entries.filter(([key]) => !seen.has(key) && seen.add(key) !== undefined);
  return { kind: "object", entries: entries.map(([key, value]): [string, Node] => [key, unique(value)]) };
}

/** Levels of objects and arrays in a parsed value. */
function depthOfValue(value: unknown): number {
  if (value === null || typeof value !== "object") return 0;
  return 1 + Math.max(0, ...Object.values(value).map(depthOfValue));
}

/** The first key a tree gives twice in one object, in text order, with its object's path; null if none. */
function firstRepeat(node: Node, path = ""): { path: string; key: string } | null {
  if (node.kind === "leaf") return null;
  const at = (step: string | number) => (path === "" ? String(step) : `${path}.${step}`);
  if (node.kind === "array") {
    for (const [index, item] of node.items.entries()) {
      const found = firstRepeat(item, at(index));
      if (found) return found;
    }
    return null;
  }
  const seen = new Set<string>();
  for (const [key, value] of node.entries) {
    if (seen.has(key)) return { path, key };
    seen.add(key);
    const found = firstRepeat(value, at(key));
    if (found) return found;
  }
  return null;
}

describe("fuzz: the scans of a body's text", () => {
  it("repeatedKey finds the key a JSON text first gives twice, in its object, whatever the escapes", () => {
    fc.assert(
      fc.property(tree, fc.integer(), (node, style) => {
        const { text } = write(node, style, false);
        // The text is JSON, and reads back as the tree does.
        expect(() => JSON.parse(text), text).not.toThrow();
        expect(repeatedKey(text), text).toEqual(firstRepeat(node));
      }),
      fuzzParameters(seed, 3_000),
    );
  });

  it("memberTooDeep agrees with the depth a JSON5 parser reads, comments and all", () => {
    const limit = 2;
    fc.assert(
      fc.property(tree.map(unique), fc.integer(), (node, style) => {
        const { text, top } = write(node, style, true);
        const depth = depthOfValue(JSON5.parse(text));
        expect(depth, text).toBe(depthOf(node));
        const expected =
          depth <= limit + 1
            ? null
            : node.kind === "object"
              ? (top.find((member) => member.depth > limit)?.raw ?? null)
              : "body";
        expect(memberTooDeep(text, limit), text).toBe(expected);
      }),
      fuzzParameters(seed, 3_000),
    );
  });
});

/*
 * Over HTTP: a management body (REST, GraphQL) giving a key twice is refused with 400 naming it, and
 * stores nothing; a worker's JSON5 body too deep is refused whatever its comments hide.
 */
let service: FuzzService;
beforeAll(async () => {
  service = await startFuzzService({ workerBodyLimit: 1024 * 1024 });
});
afterAll(async () => service.h.close());

const HEADERS = { authorization: KEY, "content-type": "application/json" };

/** The names of the account's templates. */
async function templateNames(): Promise<string[]> {
  const reply = await send(service, {
    method: "GET",
    path: "/v1/templates",
    headers: { authorization: KEY },
  });
  expect(reply.status).toBe(200);
  return (JSON.parse(reply.text) as { name: string }[]).map((t) => t.name);
}

describe("fuzz: keys given twice in a management body", () => {
  let made = 0;
  it("REST and GraphQL answer 400 naming the key and its object, and store nothing", {
    timeout: 60_000,
  }, async () => {
    const envKey = fc.constantFrom("A", "TOKEN", "k\\", 'q"', "{", "é");
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("rest" as const, "graphql" as const),
        fc.constantFrom("top" as const, "env" as const),
        envKey,
        fc.integer(),
        async (wire, where, key, style) => {
          const pick = prng(style);
          const name = `dup-${++made}`;
          // The key twice, each time written its own way (escaped or not); the values differ.
          const twice = (k: string) => `${quote(k, pick)}: "1", ${quote(k, pick)} : "2"`;
          const env =
            wire === "rest" ? `{${twice(key)}}` : `[{"key": ${JSON.stringify(key)}, ${twice("value")}}]`;
          const fields =
            where === "top"
              ? `"name": "${name}", "imageName": "x", "isServerless": true, ${twice(wire === "rest" ? "imageName" : "dockerArgs")}`
              : `"name": "${name}", "imageName": "x", "isServerless": true, "env": ${env}`;
          const graphqlInput = `{${fields}, "containerDiskInGb": 5, "volumeInGb": 0${where === "top" ? "" : ', "dockerArgs": ""'}}`;
          const req: FuzzRequest =
            wire === "rest"
              ? { method: "POST", path: "/v1/templates", headers: HEADERS, body: `{${fields}}` }
              : {
                  method: "POST",
                  path: "/graphql",
                  headers: HEADERS,
                  body: `{"query": "mutation($i: SaveTemplateInput!) { saveTemplate(input: $i) { id } }", "variables": {"i": ${graphqlInput}}}`,
                };
          const reply = await send(service, req);
          await expectServed(service, req, reply);
          expect(reply.status, reply.text).toBe(400);
          const repeated =
            where === "top"
              ? wire === "rest"
                ? "imageName"
                : "dockerArgs"
              : wire === "rest"
                ? key
                : "value";
          const object =
            wire === "rest"
              ? where === "top"
                ? ""
                : "env"
              : where === "top"
                ? "variables.i"
                : "variables.i.env.0";
          const body = JSON.parse(reply.text) as {
            field?: string;
            message?: string;
            errors?: { message?: string; extensions?: { field?: string } }[];
          };
          const field = body.field ?? body.errors?.[0]?.extensions?.field;
          expect(field, reply.text).toBe(object === "" ? repeated : `${object}.${repeated}`);
          expect(body.message ?? body.errors?.[0]?.message, reply.text).toContain(
            `the key ${JSON.stringify(repeated)} is given twice`,
          );
          expect(await templateNames()).not.toContain(name);
        },
      ),
      fuzzParameters(seed, 60),
    );
  });
});

describe("refusals of a key given twice", () => {
  it("name the place of a key as long as the body by its first characters, not whole", async () => {
    const long = "x".repeat(400_000);
    const req: FuzzRequest = {
      method: "POST",
      path: "/v1/templates",
      headers: HEADERS,
      body: `{"name":"long","imageName":"x","env":{"${long}":{"a":1,"a":2}}}`,
    };
    const reply = await send(service, req);
    await expectServed(service, req, reply);
    expect(reply.status).toBe(400);
    expect(reply.text.length).toBeLessThan(1_000);
    expect(JSON.parse(reply.text)).toMatchObject({ code: "VALIDATION", field: `env.${"x".repeat(100)}….a` });
  });
});

describe("fuzz: worker bodies with Python's NaN and Infinity", () => {
  /** A value as Python's json.dumps may write it: a bare non-finite token, or any JSON value. */
  type Written = { text: string; value: unknown };
  const nonFinite = fc
    .constantFrom("NaN", "Infinity", "-Infinity")
    .map((text): Written => ({ text, value: null }));
  const tricky = fc.constantFrom("NaN", "-Infinity", 'a "NaN" b', "\\NaN\\", 'Infinity"');
  const plain = fc
    .oneof(fc.jsonValue({ maxDepth: 2 }), tricky)
    // The value as it reads back (fc's -0 is written 0).
    .map((value): Written => ({ text: JSON.stringify(value), value: JSON.parse(JSON.stringify(value)) }));
  const written: fc.Arbitrary<Written> = fc.letrec<{ node: Written }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small" },
      nonFinite,
      plain,
      fc.array(tie("node"), { maxLength: 4 }).map((items) => ({
        text: `[${items.map((item) => item.text).join(", ")}]`,
        value: items.map((item) => item.value),
      })),
      fc.dictionary(fc.string({ maxLength: 6 }), tie("node"), { maxKeys: 4 }).map((members) => ({
        text: `{${Object.entries(members)
          .map(([key, item]) => `${JSON.stringify(key)}: ${item.text}`)
          .join(", ")}}`,
        value: Object.fromEntries(Object.entries(members).map(([key, item]) => [key, item.value])),
      })),
    ),
  })).node;

  it("read as null outside strings, strings untouched, small and large texts alike (the large without JSON5)", () => {
    fc.assert(
      fc.property(written, ({ text, value }) => {
        expect(lenientJson(text), text).toEqual(value);
        const large = `{"pad": "${"p".repeat(JSON5_MAX_CHARS)}", "v": ${text}}`;
        expect(lenientJson(large), text).toEqual({ pad: "p".repeat(JSON5_MAX_CHARS), v: value });
      }),
      fuzzParameters(seed, 1_000),
    );
  });

  it("JSON5's own syntax only in a text of at most JSON5_MAX_CHARS; a larger one is refused saying so", () => {
    expect(lenientJson(`{'a': NaN, /* c */ "b": [1,],}`)).toEqual({ a: Number.NaN, b: [1] });
    const large = `{"pad": "${"p".repeat(JSON5_MAX_CHARS)}", /* c */ "b": 1}`;
    expect(() => lenientJson(large)).toThrow(
      /a body over 64 KiB must be JSON, with NaN and Infinity allowed; JSON5's comments, single quotes and trailing commas only in smaller ones/,
    );
  });

  it("a large body's refusal names what is wrong apart from NaN and Infinity, never the tokens it allows", () => {
    const large = `{"pad": "${"p".repeat(JSON5_MAX_CHARS)}", "a": NaN, "b": [1,]}`;
    let message = "";
    try {
      lenientJson(large);
    } catch (error) {
      message = (error as Error).message;
    }
    // The trailing comma, not the NaN the same message says is allowed.
    expect(message).toMatch(
      /^Unexpected token '\]', .*"b": \[1,\]}" is not valid JSON \(read with NaN and Infinity as null\)/,
    );
    expect(message).not.toContain("'N'");
  });

  it("a string left open over many escaped quotes is read in one pass, not once from each quote", () => {
    // Each \" of an unclosed string began another unclosed string for the rewrite's regex, which
    // rescanned to the end from there: quadratic (a 160 KB body held the service for ~40 s).
    const open = `{"a": NaN, "b": "${'\\"'.repeat(80_000)}`;
    expect(() => lenientJson(open)).toThrow(/a body over 64 KiB must be JSON/);
    const closed = `${open}"}`;
    expect(lenientJson(closed)).toEqual({ a: null, b: '"'.repeat(80_000) });
  }, 10_000);
});

describe("worker bodies read as JSON5", () => {
  it("a result nested too deep behind a comment holding a quote is refused, and the job fails naming why", async () => {
    const ep = service.endpoint.id;
    const run = await send(service, {
      method: "POST",
      path: `/v2/${ep}/run`,
      headers: HEADERS,
      body: JSON.stringify({ input: { n: 1 } }),
    });
    const id = (JSON.parse(run.text) as { id: string }).id;
    const taken = await send(service, {
      method: "GET",
      path: `/v2/${ep}/job-take-batch/w-json5?batch_size=1&job_in_progress=0`,
      headers: { authorization: KEY },
    });
    expect(taken.text).toContain(id);
    const n = 20_000;
    const done = await send(service, {
      method: "POST",
      path: `/v2/${ep}/job-done/w-json5/${id}?isStream=false`,
      headers: HEADERS,
      body: `{"output": // it's\n ${"[".repeat(n)}${"]".repeat(n)} // '\n}`,
    });
    expect(done.status, done.text).toBe(400);
    expect(JSON.parse(done.text)).toMatchObject({ code: "VALIDATION", field: "output" });
    const status = await send(service, {
      method: "GET",
      path: `/v2/${ep}/status/${id}`,
      headers: { authorization: KEY },
    });
    expect(status.status, status.text).toBe(200);
    expect(JSON.parse(status.text)).toMatchObject({
      id,
      status: "FAILED",
      error: "the job's result was refused: output nested deeper than 64 levels (job-done answered 400)",
    });
  });
  it("a job-done whose string is left open over many escaped quotes is refused at once, its job failed", async () => {
    const ep = service.endpoint.id;
    const run = await send(service, {
      method: "POST",
      path: `/v2/${ep}/run`,
      headers: HEADERS,
      body: JSON.stringify({ input: { n: 2 } }),
    });
    const id = (JSON.parse(run.text) as { id: string }).id;
    const taken = await send(service, {
      method: "GET",
      path: `/v2/${ep}/job-take-batch/w-open?batch_size=1&job_in_progress=0`,
      headers: { authorization: KEY },
    });
    expect(taken.text).toContain(id);
    // A result cut short in a string of JSON text (Python's NaN before it): the rewrite read it quadratically.
    const done = await send(service, {
      method: "POST",
      path: `/v2/${ep}/job-done/w-open/${id}?isStream=false`,
      headers: HEADERS,
      body: `{"output": {"score": NaN, "json": "${'\\"'.repeat(80_000)}`,
    });
    expect(done.status, done.text).toBe(400);
    expect(JSON.parse(done.text)).toMatchObject({ code: "VALIDATION", field: "body" });
    const status = await send(service, {
      method: "GET",
      path: `/v2/${ep}/status/${id}`,
      headers: { authorization: KEY },
    });
    expect(JSON.parse(status.text)).toMatchObject({ id, status: "FAILED" });
    expect((JSON.parse(status.text) as { error: string }).error).toMatch(
      /^the job's result was refused: body: not JSON: .+a body over 64 KiB must be JSON/,
    );
  }, 10_000);
});
