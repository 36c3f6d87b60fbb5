import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { type InputSpec, inputFields } from "./check";
import { CONFIG_KEYS, DEFAULT_DELETE_TIMEOUT_SECONDS, DEFAULT_URLS } from "./config";
import { containerRegistryAuthSpec } from "./container-registry-auth";
import { endpointSpec } from "./endpoint";
import { networkVolumeSpec } from "./network-volume";
import { podSpec } from "./pod";
import { secretSpec } from "./secret";
import { templateSpec } from "./template";

/**
 * schema.json, generated from the zod input schemas so the two cannot drift (a test regenerates it
 * and compares). Token mapping: a dynamic resource's engine type is always
 * `pulumi-nodejs:dynamic/runpodkit:<Type>`; the package schema names it `runpodkit:index:<Type>`.
 * Run `npx tsx provider/schema-gen.ts` to rewrite schema.json.
 */

type Json = Record<string, unknown>;
type JsonSchema = {
  type?: string | string[];
  description?: string;
  items?: JsonSchema;
  additionalProperties?: JsonSchema | boolean;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  default?: unknown;
};

/** Each resource's spec and the noun its description uses, in schema order. */
export const DEFINITIONS: readonly { noun: string; spec: InputSpec }[] = [
  { noun: "endpoint", spec: endpointSpec },
  { noun: "template", spec: templateSpec },
  { noun: "network volume", spec: networkVolumeSpec },
  { noun: "container registry auth", spec: containerRegistryAuthSpec },
  { noun: "secret", spec: secretSpec },
  { noun: "pod", spec: podSpec },
];

export const resourceToken = (type: string) => `runpodkit:index:${type}`;
export const dynamicToken = (type: string) => `pulumi-nodejs:dynamic/runpodkit:${type}`;

/** One JSON Schema node (zod's rendering) as a Pulumi schema property. */
export function pulumiProperty(node: JsonSchema, types: Record<string, Json>, enumName: string): Json {
  const variants = (node.anyOf ?? [node]).filter((v) => v.type !== "null");
  const single = variants.length === 1 ? variants[0]! : node;
  const type = Array.isArray(single.type) ? single.type.find((t) => t !== "null") : single.type;
  const out: Json = {};
  if (single.enum) {
    const token = `runpodkit:index:${enumName}`;
    types[token] = { type: "string", enum: single.enum.map((value) => ({ value })) };
    out.$ref = `#/types/${token}`;
  } else if (type === "array") {
    out.type = "array";
    out.items = pulumiProperty(single.items ?? {}, types, enumName);
  } else if (type === "object") {
    out.type = "object";
    const extra = single.additionalProperties;
    out.additionalProperties =
      typeof extra === "object" ? pulumiProperty(extra, types, enumName) : { type: "string" };
  } else if (type === "string" || type === "integer" || type === "number" || type === "boolean") {
    out.type = type;
  } else {
    throw new Error(`no Pulumi type for JSON Schema ${JSON.stringify(node)}`);
  }
  const description = node.description ?? single.description;
  if (description) out.description = description;
  // The service's default (the schema's .default()), where Pulumi's schema can state one.
  const fallback = node.default;
  if (typeof fallback === "string" || typeof fallback === "number" || typeof fallback === "boolean") {
    out.default = fallback;
  }
  return out;
}

function properties(schema: z.ZodObject, types: Record<string, Json>, type: string) {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as {
    properties: Record<string, JsonSchema>;
    required?: string[];
  };
  const props: Record<string, Json> = {};
  for (const [name, node] of Object.entries(json.properties)) {
    props[name] = pulumiProperty(node, types, `${type}${name[0]!.toUpperCase()}${name.slice(1)}`);
  }
  return { props, required: json.required ?? [] };
}

function resourceSchema(definition: { noun: string; spec: InputSpec }, types: Record<string, Json>): Json {
  const { spec } = definition;
  const inputs = properties(spec.schema, types, spec.type);
  for (const [name, prop] of Object.entries(inputs.props)) {
    if (spec.secrets?.includes(name)) prop.secret = true;
    if (spec.replaceOnChange.includes(name)) prop.willReplaceOnChanges = true;
  }
  const outputs: Record<string, Json> = {};
  for (const [name, prop] of Object.entries(inputs.props)) {
    const { willReplaceOnChanges: _r, default: _d, ...rest } = prop;
    outputs[name] = rest;
  }
  const computed = spec.computed ? properties(spec.computed, types, spec.type).props : {};
  Object.assign(outputs, computed);
  // Pulumi's `required` outputs are the always-populated ones (a generated SDK types them non-null):
  // those whose state type admits neither null nor absence (StateOf: a name is always set).
  const alwaysPresent = [
    ...inputFields(spec).filter((f) => f === "name" || alwaysPopulated(spec.schema, f)),
    ...Object.keys(computed).filter((f) => spec.computed !== undefined && alwaysPopulated(spec.computed, f)),
  ];
  return {
    description: `${capitalize(definition.noun)}. Engine type token: \`${dynamicToken(spec.type)}\` (a Pulumi dynamic resource of the runpodkit npm package).`,
    inputProperties: inputs.props,
    requiredInputs: inputs.required,
    properties: outputs,
    required: alwaysPresent,
  };
}

/** The field's output (after defaults) can be neither null nor absent. */
function alwaysPopulated(schema: z.ZodObject, field: string): boolean {
  const json = z.toJSONSchema(schema, { io: "output", unrepresentable: "any" }) as {
    properties: Record<string, JsonSchema>;
    required?: string[];
  };
  const node = json.properties[field] ?? {};
  const admitsNull = (node.anyOf ?? [node]).some(
    (v) => v.type === "null" || (Array.isArray(v.type) && v.type.includes("null")),
  );
  return (json.required ?? []).includes(field) && !admitsNull;
}

const capitalize = (text: string) => text[0]!.toUpperCase() + text.slice(1);

function configVariables(): Record<string, Json> {
  const described: Record<keyof typeof CONFIG_KEYS, string> = {
    apiKey: "API key of the service. Set it as a secret.",
    restUrl: `Base of the REST management API (default ${DEFAULT_URLS.restUrl}).`,
    graphqlUrl: `GraphQL address (default ${DEFAULT_URLS.graphqlUrl}).`,
    queueUrl: `Host of the job API; a queue-based endpoint's url is {queueUrl}/v2/{id}, a load-balancing one's the id as a subdomain of this host (default ${DEFAULT_URLS.queueUrl}).`,
    deleteTimeout: `Seconds a delete waits out refusals (workers still scaling down, in use) and a busy service (429, 5xx), unless the resource's customTimeouts.delete says otherwise (default ${DEFAULT_DELETE_TIMEOUT_SECONDS}).`,
  };
  const out: Record<string, Json> = {};
  for (const [name, { env, secret }] of Object.entries(CONFIG_KEYS)) {
    out[name] = {
      type: name === "deleteTimeout" ? "integer" : "string",
      description: `${described[name as keyof typeof CONFIG_KEYS]} Environment fallback: ${env}.`,
      ...(secret ? { secret: true } : {}),
    };
  }
  return out;
}

/** The whole package schema. */
export function buildSchema(): Json {
  const types: Record<string, Json> = {};
  const resources: Record<string, Json> = {};
  for (const definition of DEFINITIONS) {
    resources[resourceToken(definition.spec.type)] = resourceSchema(definition, types);
  }
  const variables = configVariables();
  return {
    name: "runpodkit",
    displayName: "runpodkit",
    description:
      "Serverless GPU endpoints, templates, network volumes, registry credentials, secrets and pods of a RunPod-compatible service, as Pulumi dynamic resources of the runpodkit npm package.",
    keywords: ["pulumi", "runpod", "serverless", "gpu", "category/cloud"],
    license: "Apache-2.0",
    meta: { moduleFormat: "(.*)" },
    config: { variables },
    provider: {
      description:
        "Read from stack config in the runpodkit namespace (e.g. runpodkit:apiKey), then the environment.",
      inputProperties: variables,
    },
    types: Object.fromEntries(Object.entries(types).sort(([a], [b]) => a.localeCompare(b))),
    resources,
    language: { nodejs: { packageName: "runpodkit" } },
  };
}

export function schemaText(): string {
  return `${JSON.stringify(buildSchema(), null, 2)}\n`;
}

export const SCHEMA_PATH = join(__dirname, "..", "schema.json");

if (require.main === module) {
  writeFileSync(SCHEMA_PATH, schemaText());
  console.log(`wrote ${SCHEMA_PATH}`);
}
