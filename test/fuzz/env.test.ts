import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

/**
 * Template env at the edges of what a process can be started with: long names, values around Linux's
 * 128 KiB per `NAME=value` string (in one- and three-byte characters), several large ones together.
 * Whatever REST or GraphQL accepts, a process starts with (a template's and an endpoint's env
 * together, as a worker gets them); whatever it refuses is a 400 naming `env`.
 */
let service: FuzzService;
const seed = fuzzSeed("env");
let saved = 0;

beforeAll(async () => {
  service = await startFuzzService();
});
afterAll(async () => service.h.close());

const name = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,15}$/) },
  { weight: 1, arbitrary: fc.integer({ min: 900, max: 1_100 }).map((n) => `N${"a".repeat(n)}`) },
  { weight: 1, arbitrary: fc.integer({ min: 300, max: 360 }).map((n) => `E${"€".repeat(n)}`) },
);

const value = fc.oneof(
  { weight: 2, arbitrary: fc.string({ maxLength: 20 }).map((s) => s.replace(/\0/g, "")) },
  { weight: 2, arbitrary: fc.integer({ min: 100_000, max: 140_000 }).map((n) => "v".repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 40_000, max: 48_000 }).map((n) => "€".repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 125 * 1_024, max: 127 * 1_024 }).map((n) => "b".repeat(n)) },
);

const env = fc.dictionary(name, value, { minKeys: 1, maxKeys: 4 });

/** Saves a template with `env` over REST or GraphQL; the env as stored, or the refusal. */
async function saveTemplate(
  wire: "rest" | "graphql",
  vars: Record<string, string>,
): Promise<{ env: Record<string, string> } | { status: number; code: string; field: string }> {
  const templateName = `env-${++saved}`;
  const headers = { authorization: KEY, "content-type": "application/json" };
  const req: FuzzRequest =
    wire === "rest"
      ? {
          method: "POST",
          path: "/v1/templates",
          headers,
          body: JSON.stringify({ name: templateName, imageName: "x", isServerless: true, env: vars }),
        }
      : {
          method: "POST",
          path: "/graphql",
          headers,
          body: JSON.stringify({
            query: "mutation($i: SaveTemplateInput!) { saveTemplate(input: $i) { env { key value } } }",
            variables: {
              i: {
                name: templateName,
                imageName: "x",
                isServerless: true,
                containerDiskInGb: 5,
                volumeInGb: 0,
                dockerArgs: "",
                env: Object.entries(vars).map(([key, v]) => ({ key, value: v })),
              },
            },
          }),
        };
  const reply = await send(service, req);
  await expectServed(service, req, reply);
  const body = JSON.parse(reply.text);
  if (wire === "rest") {
    if (reply.status === 200) return { env: body.env };
    return { status: reply.status, code: body.code, field: body.field };
  }
  const error = body.errors?.[0];
  if (!error) {
    const list = body.data.saveTemplate.env as { key: string; value: string }[];
    return { env: Object.fromEntries(list.map((e) => [e.key, e.value])) };
  }
  return { status: 400, code: error.extensions.code, field: error.extensions.field };
}

/** Starts a process with the env, as the pool starts a worker: its error (E2BIG), or null. */
function startsWith(vars: Record<string, string>): string | null {
  const result = spawnSync(process.execPath, ["-e", ""], {
    env: { PATH: process.env.PATH ?? "", ...vars },
    stdio: "ignore",
  });
  return result.error ? result.error.message : null;
}

describe("fuzz: template env at the edges of a process environment", () => {
  it("what the API accepts starts a process; what it refuses names env", { timeout: 120_000 }, async () => {
    let accepted = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("rest" as const, "graphql" as const),
        env,
        env,
        async (wire, templateEnv, endpointEnv) => {
          const saved = await Promise.all([saveTemplate(wire, templateEnv), saveTemplate(wire, endpointEnv)]);
          for (const result of saved) {
            if ("env" in result) {
              accepted++;
              expect(startsWith(result.env)).toBeNull();
            } else {
              refused++;
              expect(result.code, JSON.stringify(result)).toBe("VALIDATION");
              expect(result.field, JSON.stringify(result)).toMatch(/^env(\.|$)/);
            }
          }
          const [first, second] = saved;
          if (first && second && "env" in first && "env" in second) {
            // A worker gets both (its template's and its endpoint's), under other names here so
            // none replaces another.
            const both = {
              ...first.env,
              ...Object.fromEntries(Object.entries(second.env).map(([k, v]) => [`${k}_2`, v])),
            };
            expect(startsWith(both)).toBeNull();
          }
        },
      ),
      fuzzParameters(seed, 40),
    );
    // Both sides of the bound were reached.
    expect(accepted).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });

  it("an env variable named __proto__ is refused on both wires", async () => {
    const graphql = await saveTemplate(
      "graphql",
      JSON.parse('{"__proto__":"x","OK":"1"}') as Record<string, string>,
    );
    expect(graphql).toEqual({ status: 400, code: "VALIDATION", field: "env.0.key" });
    const rest = await saveTemplate("rest", JSON.parse('{"__proto__":"x"}') as Record<string, string>);
    expect(rest).toEqual({ status: 400, code: "VALIDATION", field: "body" });
  });
});
