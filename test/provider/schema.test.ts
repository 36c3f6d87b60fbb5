import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import type { z } from "zod";
import { inputFields } from "../../provider/check";
import { DEFINITIONS, resourceToken, SCHEMA_PATH, schemaText } from "../../provider/schema-gen";

interface PulumiProperty {
  type?: string;
  $ref?: string;
  items?: PulumiProperty;
  secret?: boolean;
  willReplaceOnChanges?: boolean;
}
interface PulumiResource {
  inputProperties: Record<string, PulumiProperty>;
  requiredInputs: string[];
  properties: Record<string, PulumiProperty>;
}
const committed = JSON.parse(readFileSync(SCHEMA_PATH, "utf8")) as {
  name: string;
  resources: Record<string, PulumiResource>;
  types: Record<string, { enum: { value: string }[] }>;
  config: { variables: Record<string, { secret?: boolean }> };
};

/** The Pulumi type a zod field should have, read from zod's own definition (not from the generator). */
function expectedType(field: z.ZodType): { type?: string; enum?: string[] } {
  let node = field as z.ZodType & { _zod: { def: Record<string, unknown> } };
  while (["optional", "nullable", "default"].includes(String(node._zod.def.type))) {
    node = node._zod.def.innerType as typeof node;
  }
  const def = node._zod.def;
  switch (def.type) {
    case "string":
      return { type: "string" };
    case "boolean":
      return { type: "boolean" };
    case "number":
      return { type: (node as unknown as z.ZodNumber).isInt ? "integer" : "number" };
    case "array":
      return { type: "array" };
    case "record":
      return { type: "object" };
    case "enum":
      return { enum: Object.values(def.entries as Record<string, string>) };
    default:
      throw new Error(`unmapped zod type ${String(def.type)}`);
  }
}

describe("schema.json", () => {
  test("is exactly what the generator makes from the zod schemas (run `npx tsx provider/schema-gen.ts`)", () => {
    expect(readFileSync(SCHEMA_PATH, "utf8")).toBe(schemaText());
  });

  test("names the package runpodkit and keeps the API key secret", () => {
    expect(committed.name).toBe("runpodkit");
    expect(committed.config.variables.apiKey?.secret).toBe(true);
    expect(committed.config.variables.restUrl?.secret).toBeUndefined();
  });

  for (const definition of DEFINITIONS) {
    const { spec } = definition;
    describe(spec.type, () => {
      const resource = committed.resources[resourceToken(spec.type)]!;

      test("every zod input is an input property with the same type and required-ness", () => {
        expect(resource).toBeDefined();
        expect(Object.keys(resource.inputProperties).sort()).toEqual(inputFields(spec).sort());
        const required = inputFields(spec).filter((name) => !spec.schema.shape[name]!.isOptional());
        expect(resource.requiredInputs.sort()).toEqual(required.sort());
        for (const name of inputFields(spec)) {
          const expected = expectedType(spec.schema.shape[name] as z.ZodType);
          const actual = resource.inputProperties[name]!;
          if (expected.enum) {
            const token = actual.$ref?.replace("#/types/", "") ?? "";
            expect(
              committed.types[token]?.enum.map((e) => e.value),
              name,
            ).toEqual(expected.enum);
          } else {
            expect(actual.type, name).toBe(expected.type);
          }
        }
      });

      test("secrets and replace-on-change fields are marked", () => {
        for (const name of inputFields(spec)) {
          const prop = resource.inputProperties[name]!;
          expect(prop.secret === true, `${name} secret`).toBe(spec.secrets?.includes(name) ?? false);
          expect(prop.willReplaceOnChanges === true, `${name} replaces`).toBe(
            spec.replaceOnChange.includes(name),
          );
        }
      });

      test("outputs are every input plus the computed fields", () => {
        const computed = spec.computed ? Object.keys(spec.computed.shape) : [];
        expect(Object.keys(resource.properties).sort()).toEqual([...inputFields(spec), ...computed].sort());
      });
    });
  }
});
