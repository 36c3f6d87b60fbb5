import {
  buildSchema,
  type GraphQLNamedType,
  type GraphQLType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
} from "graphql";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  CpuFlavor,
  DataCenter,
  GpuType,
  GqlCpuFlavorInput,
  GqlGpuAvailabilityInput,
  GqlGpuLowestPriceInput,
  GqlGpuTypeFilter,
} from "../../../sdk/schemas/catalogue";
import {
  ContainerRegistryAuth,
  ContainerRegistryAuthCreateInput,
  GqlRegistryAuthUpdateInput,
} from "../../../sdk/schemas/container-registry-auth";
import {
  GqlEndpoint,
  GqlEndpointInput,
  GqlNetworkVolumeIdsInput,
  GqlUpdateEndpointTemplateInput,
  ServerlessDiscount,
} from "../../../sdk/schemas/endpoint";
import {
  GqlNetworkVolume,
  GqlNetworkVolumeCreateInput,
  GqlNetworkVolumeDeleteInput,
  GqlNetworkVolumeUpdateInput,
} from "../../../sdk/schemas/network-volume";
import {
  GqlDeployCpuPodInput,
  GqlPod,
  GqlPodEditJobInput,
  GqlPodFilter,
  GqlPodFindAndDeployOnDemandInput,
  GqlPodIdInput,
  GqlPodResumeInput,
} from "../../../sdk/schemas/pod";
import {
  GqlSecret,
  GqlSecretCreateInput,
  GqlSecretDescriptionUpdateInput,
  GqlSecretValueUpdateInput,
} from "../../../sdk/schemas/secret";
import { GqlPodTemplate, GqlTemplateInput, KeyValue } from "../../../sdk/schemas/template";
import { GqlUser, GqlUserSettingsInput } from "../../../sdk/schemas/user";
import { typeDefs } from "../../../service/management/graphql/schema";

/*
 * The GraphQL SDL (service/management/graphql/schema.ts) checked field by field against the zod wire
 * schemas in sdk/schemas, the one contract: every input type has exactly the zod input's fields, with
 * the same nullability and compatible types (so graphql-js and zod accept the same documents), and
 * every field of a zod reply schema exists in the SDL with a type the SDK can parse.
 */

/** A type, as both sides can describe it. */
interface Shape {
  kind: "string" | "integer" | "number" | "boolean" | "enum" | "array" | "object";
  nullable: boolean;
  values?: string[];
  items?: Shape;
  fields?: Map<string, { shape: Shape; required: boolean }>;
}

type JsonSchema = {
  type?: string | string[];
  anyOf?: JsonSchema[];
  enum?: unknown[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
};

/** The shape of a zod schema, read from its JSON Schema (what zod itself derives from it). */
function zodShape(schema: z.ZodType, io: "input" | "output"): Shape {
  return fromJson(z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonSchema);
}

function fromJson(json: JsonSchema): Shape {
  let nullable = false;
  let node = json;
  if (node.anyOf) {
    const others = node.anyOf.filter((option) => option.type !== "null");
    nullable = others.length < node.anyOf.length;
    if (others.length !== 1) throw new Error(`unsupported union ${JSON.stringify(json)}`);
    node = others[0] as JsonSchema;
  }
  let type = node.type;
  if (Array.isArray(type)) {
    nullable ||= type.includes("null");
    const rest = type.filter((t) => t !== "null");
    if (rest.length !== 1) throw new Error(`unsupported type ${JSON.stringify(json)}`);
    type = rest[0];
  }
  if (node.enum) return { kind: "enum", nullable, values: node.enum.map(String).sort() };
  if (type === "array") return { kind: "array", nullable, items: fromJson(node.items ?? {}) };
  if (type === "object") {
    const required = new Set(node.required ?? []);
    const fields = new Map(
      Object.entries(node.properties ?? {}).map(([name, property]) => [
        name,
        { shape: fromJson(property), required: required.has(name) },
      ]),
    );
    return { kind: "object", nullable, fields };
  }
  if (type === "string" || type === "integer" || type === "number" || type === "boolean") {
    return { kind: type, nullable };
  }
  throw new Error(`unsupported JSON Schema ${JSON.stringify(json)}`);
}

const schema = buildSchema(typeDefs);

function namedType(name: string): GraphQLNamedType {
  const type = schema.getType(name);
  if (!type) throw new Error(`no type ${name} in the SDL`);
  return type;
}

/** The shape of an SDL type; nested object types are described to the depth given. */
function sdlShape(type: GraphQLType, depth = 2): Shape {
  const nullable = !isNonNullType(type);
  const inner = isNonNullType(type) ? type.ofType : type;
  if (isListType(inner)) return { kind: "array", nullable, items: sdlShape(inner.ofType, depth) };
  if (isEnumType(inner))
    return {
      kind: "enum",
      nullable,
      values: inner
        .getValues()
        .map((v) => v.name)
        .sort(),
    };
  if (isScalarType(inner)) {
    const kinds: Record<string, Shape["kind"]> = {
      String: "string",
      ID: "string",
      DateTime: "string",
      Int: "integer",
      Float: "number",
      Boolean: "boolean",
    };
    const kind = kinds[inner.name];
    if (!kind) throw new Error(`unknown scalar ${inner.name}`);
    return { kind, nullable };
  }
  if (isObjectType(inner) || isInputObjectType(inner)) {
    const fields = new Map<string, { shape: Shape; required: boolean }>();
    if (depth > 0) {
      for (const field of Object.values(inner.getFields())) {
        fields.set(field.name, {
          shape: sdlShape(field.type, depth - 1),
          required: isNonNullType(field.type),
        });
      }
    }
    return { kind: "object", nullable, fields };
  }
  throw new Error(`unsupported SDL type ${String(type)}`);
}

/**
 * Differences between an SDL type and a zod schema, as "path: what" lines. `input`: both sides must
 * accept the same values (same fields; non-null in the SDL exactly where zod requires a non-null
 * value). `output`: every value zod parses must be one the SDL allows to be there, and every field
 * zod reads must be one the SDL has.
 */
function differences(sdl: Shape, zod: Shape, mode: "input" | "output", path: string): string[] {
  const out: string[] = [];
  const kindsMatch =
    sdl.kind === zod.kind ||
    (sdl.kind === "string" && zod.kind === "enum") ||
    (sdl.kind === "number" && zod.kind === "integer");
  if (!kindsMatch) return [`${path}: SDL ${sdl.kind}, zod ${zod.kind}`];
  if (sdl.kind === "enum" && zod.kind === "enum" && sdl.values?.join() !== zod.values?.join()) {
    out.push(`${path}: SDL enum ${sdl.values?.join("|")}, zod ${zod.values?.join("|")}`);
  }
  if (sdl.items && zod.items) {
    out.push(...differences(sdl.items, zod.items, mode, `${path}[]`));
    if (mode === "input" && sdl.items.nullable !== zod.items.nullable) {
      out.push(`${path}[]: items nullable in ${sdl.items.nullable ? "the SDL" : "zod"} only`);
    }
  }
  if (sdl.fields && zod.fields) out.push(...fieldDifferences(sdl, zod, mode, path));
  return out;
}

function fieldDifferences(sdl: Shape, zod: Shape, mode: "input" | "output", path: string): string[] {
  const out: string[] = [];
  const sdlFields = sdl.fields ?? new Map();
  for (const [name, z] of zod.fields ?? new Map()) {
    const s = sdlFields.get(name);
    const at = path ? `${path}.${name}` : name;
    if (!s) {
      out.push(`${at}: in zod, not in the SDL`);
      continue;
    }
    const zodNonNull = z.required && !z.shape.nullable;
    if (mode === "input" && s.required !== zodNonNull) {
      out.push(
        `${at}: ${s.required ? "non-null in the SDL" : "nullable in the SDL"} but ${zodNonNull ? "required non-null" : "optional or nullable"} in zod`,
      );
    }
    if (mode === "output" && zodNonNull && !s.required)
      out.push(`${at}: zod needs a value the SDL may leave null`);
    if (s.shape.fields && s.shape.fields.size === 0) continue; // described no deeper
    out.push(...differences(s.shape, z.shape, mode, at));
  }
  if (mode === "input") {
    for (const name of sdlFields.keys()) {
      if (!zod.fields?.has(name)) out.push(`${path ? `${path}.` : ""}${name}: in the SDL, not in zod`);
    }
  }
  return out;
}

/** SDL fields that no zod schema reads (the SDK does not select them), by type. */
function sdlOnly(sdlName: string, zod: z.ZodType): string[] {
  const fields = zodShape(zod, "output").fields ?? new Map();
  return [...(sdlShape(namedType(sdlName)).fields?.keys() ?? [])].filter((name) => !fields.has(name));
}

const INPUTS: [sdl: string, zod: z.ZodType][] = [
  ["EndpointInput", GqlEndpointInput],
  ["NetworkVolumeIdsInput", GqlNetworkVolumeIdsInput],
  ["SaveTemplateInput", GqlTemplateInput],
  ["CreateNetworkVolumeInput", GqlNetworkVolumeCreateInput],
  ["UpdateNetworkVolumeInput", GqlNetworkVolumeUpdateInput],
  ["DeleteNetworkVolumeInput", GqlNetworkVolumeDeleteInput],
  ["SaveRegistryAuthInput", ContainerRegistryAuthCreateInput],
  ["UpdateRegistryAuthInput", GqlRegistryAuthUpdateInput],
  ["EnvironmentVariableInput", KeyValue],
  ["UpdateEndpointTemplateInput", GqlUpdateEndpointTemplateInput],
  ["UpdateUserSettingsInput", GqlUserSettingsInput],
  ["GpuTypeFilter", GqlGpuTypeFilter],
  ["GpuLowestPriceInput", GqlGpuLowestPriceInput],
  ["CpuFlavorInput", GqlCpuFlavorInput],
  ["GpuAvailabilityInput", GqlGpuAvailabilityInput],
  ["PodFilter", GqlPodFilter],
  ["PodFindAndDeployOnDemandInput", GqlPodFindAndDeployOnDemandInput],
  ["deployCpuPodInput", GqlDeployCpuPodInput],
  ["PodEditJobInput", GqlPodEditJobInput],
  ["PodStopInput", GqlPodIdInput],
  ["PodResumeInput", GqlPodResumeInput],
  ["PodRestartInput", GqlPodIdInput],
  ["PodResetInput", GqlPodIdInput],
  ["PodTerminateInput", GqlPodIdInput],
  ["SecretCreateInput", GqlSecretCreateInput],
  ["SecretValueUpdateInput", GqlSecretValueUpdateInput],
  ["SecretDescriptionUpdateInput", GqlSecretDescriptionUpdateInput],
];

const OUTPUTS: [sdl: string, zod: z.ZodType][] = [
  ["Endpoint", GqlEndpoint],
  ["PodTemplate", GqlPodTemplate],
  ["NetworkVolume", GqlNetworkVolume],
  ["ContainerRegistryAuth", ContainerRegistryAuth],
  ["ServerlessDiscount", ServerlessDiscount],
  ["User", GqlUser],
  ["GpuType", GpuType],
  ["CpuFlavor", CpuFlavor],
  ["DataCenter", DataCenter],
  ["Pod", GqlPod],
  ["Secret", GqlSecret],
];

describe("the GraphQL SDL against the zod wire schemas", () => {
  it("pairs every input type of the SDL with a zod schema", () => {
    const inputTypes = Object.values(schema.getTypeMap())
      .filter((type) => isInputObjectType(type))
      .map((type) => type.name)
      .sort();
    expect(inputTypes).toEqual(INPUTS.map(([name]) => name).sort());
  });

  it.each(INPUTS)("input %s accepts exactly what its zod schema accepts, field by field", (name, zod) => {
    expect(differences(sdlShape(namedType(name)), zodShape(zod, "input"), "input", "")).toEqual([]);
  });

  it.each(OUTPUTS)("every field of the SDK's %s reply schema is in the SDL, typed alike", (name, zod) => {
    expect(differences(sdlShape(namedType(name)), zodShape(zod, "output"), "output", "")).toEqual([]);
  });

  it("names the SDL fields the SDK does not read", () => {
    expect(sdlOnly("Endpoint", GqlEndpoint)).toEqual(["template", "aiKey", "networkVolume"]);
    expect(sdlOnly("PodTemplate", GqlPodTemplate)).toEqual([]);
    expect(sdlOnly("NetworkVolume", GqlNetworkVolume)).toEqual([]);
    expect(sdlOnly("ContainerRegistryAuth", ContainerRegistryAuth)).toEqual([]);
  });

  it("finds a difference when there is one (the check can fail)", () => {
    const drifted = z.strictObject({
      id: z.string().optional(),
      name: z.string().nullish(),
      size: z.int(),
      extra: z.boolean(),
    });
    expect(
      differences(sdlShape(namedType("UpdateNetworkVolumeInput")), zodShape(drifted, "input"), "input", ""),
    ).toEqual([
      "id: non-null in the SDL but optional or nullable in zod",
      "size: nullable in the SDL but required non-null in zod",
      "extra: in zod, not in the SDL",
    ]);
    const reply = z.object({ id: z.string(), size: z.string(), colour: z.string() });
    expect(
      differences(sdlShape(namedType("NetworkVolume")), zodShape(reply, "output"), "output", ""),
    ).toEqual(["size: SDL integer, zod string", "colour: in zod, not in the SDL"]);
  });
});
