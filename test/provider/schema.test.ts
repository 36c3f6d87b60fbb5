import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { z } from "zod";
import { inputFields, type Props } from "../../provider/check";
import { createContainerRegistryAuthProvider } from "../../provider/container-registry-auth";
import { createEndpointProvider } from "../../provider/endpoint";
import { createNetworkVolumeProvider } from "../../provider/network-volume";
import { createPodProvider } from "../../provider/pod";
import { DEFINITIONS, resourceToken, SCHEMA_PATH, schemaText } from "../../provider/schema-gen";
import { createSecretProvider } from "../../provider/secret";
import { createTemplateProvider } from "../../provider/template";
import { checkAndCreate, type Harness, startHarness } from "./support";

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
  /** Outputs always populated: a generated SDK types them non-null. */
  required: string[];
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

/**
 * Whether a field's output (after defaults) can be null or absent, read from zod's own definition:
 * an optional field may be absent, a nullable one (or one whose default is null) may be null.
 */
function mayBeEmpty(field: z.ZodType): boolean {
  const def = (field as z.ZodType & { _zod: { def: { type: string } } })._zod.def;
  return def.type === "optional" || field.safeParse(null).success;
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

      test("only outputs that are never null or absent are required (always populated)", () => {
        // A generated name is always set; every other input output follows its zod type.
        const inputs = inputFields(spec).filter(
          (name) => name === "name" || !mayBeEmpty(spec.schema.shape[name] as z.ZodType),
        );
        const computed = Object.entries(spec.computed?.shape ?? {})
          .filter(([, field]) => !mayBeEmpty(field as z.ZodType))
          .map(([name]) => name);
        expect(resource.required.sort()).toEqual([...inputs, ...computed].sort());
        expect(resource.required).not.toContain("adoptId");
      });
    });
  }
});

describe("schema.json's required outputs against what the providers return", () => {
  let h: Harness;
  const created: Record<string, Props> = {};

  beforeAll(async () => {
    h = await startHarness();
    const context = h.context;
    const template = await checkAndCreate(createTemplateProvider(context), "tpl", {
      imageName: "runpodkit/echo:1.0",
      isServerless: true,
    });
    created.Template = template.outs;
    created.Endpoint = (
      await checkAndCreate(createEndpointProvider(context), "api", { templateId: template.id })
    ).outs;
    created.NetworkVolume = (
      await checkAndCreate(createNetworkVolumeProvider(context), "vol", { size: 10, dataCenterId: "EU-RO-1" })
    ).outs;
    created.ContainerRegistryAuth = (
      await checkAndCreate(createContainerRegistryAuthProvider(context), "creds", {
        username: "bot",
        password: "s3cret-pass",
      })
    ).outs;
    created.Secret = (await checkAndCreate(createSecretProvider(context), "hf", { value: "hf_abc" })).outs;
    created.Pod = (
      await checkAndCreate(createPodProvider(context), "box", {
        imageName: "runpod/pytorch:2.4",
        gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
      })
    ).outs;
  });
  afterAll(async () => {
    await h?.close();
  });

  test("the outputs the audit found null are not required", () => {
    const required = (type: string) => committed.resources[resourceToken(type)]!.required;
    expect(created.Endpoint).toMatchObject({ locations: null, hubReleaseId: null, modelName: null });
    for (const key of ["locations", "hubReleaseId", "modelName", "networkVolumeId", "minCudaVersion"]) {
      expect(required("Endpoint"), key).not.toContain(key);
    }
    expect(required("NetworkVolume")).not.toContain("storageType");
    expect(required("Template")).not.toContain("containerRegistryAuthId");
    expect(required("Secret")).not.toContain("description");
    expect(required("Endpoint")).toEqual(expect.arrayContaining(["name", "templateId", "url", "env"]));
  });

  for (const { spec } of DEFINITIONS) {
    test(`${spec.type}: every required output is populated by a minimal create`, () => {
      const outs = created[spec.type]!;
      const resource = committed.resources[resourceToken(spec.type)]!;
      const empty = resource.required.filter((key) => outs[key] === null || outs[key] === undefined);
      expect(empty).toEqual([]);
    });
  }
});
