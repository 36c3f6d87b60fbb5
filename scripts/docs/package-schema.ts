/**
 * The part of a Pulumi package schema (schema.json) the docs are made from, validated on read:
 * resources, functions, types and config. Unknown keys are kept out of the way (loose objects), so the
 * schema can grow without breaking the docs.
 */
import { z } from "zod";

export interface SchemaProperty {
  type?: string;
  $ref?: string;
  items?: SchemaProperty;
  additionalProperties?: SchemaProperty | boolean;
  description?: string;
  default?: unknown;
  secret?: boolean;
  willReplaceOnChanges?: boolean;
}

const Property: z.ZodType<SchemaProperty> = z.lazy(() =>
  z.looseObject({
    type: z.string().optional(),
    $ref: z.string().optional(),
    items: Property.optional(),
    additionalProperties: z.union([Property, z.boolean()]).optional(),
    description: z.string().optional(),
    default: z.unknown().optional(),
    secret: z.boolean().optional(),
    willReplaceOnChanges: z.boolean().optional(),
  }),
);

const Properties = z.record(z.string(), Property);

const ObjectShape = z.looseObject({
  description: z.string().optional(),
  properties: Properties.default({}),
  required: z.array(z.string()).default([]),
});

const Resource = z.looseObject({
  description: z.string().optional(),
  inputProperties: Properties.default({}),
  requiredInputs: z.array(z.string()).default([]),
  properties: Properties.default({}),
  required: z.array(z.string()).default([]),
});

const FunctionDef = z.looseObject({
  description: z.string().optional(),
  inputs: ObjectShape.optional(),
  outputs: ObjectShape.optional(),
});

const ComplexType = z.looseObject({
  type: z.string(),
  description: z.string().optional(),
  enum: z.array(z.looseObject({ value: z.unknown(), description: z.string().optional() })).optional(),
  properties: Properties.optional(),
  required: z.array(z.string()).optional(),
});

export const PackageSchema = z.looseObject({
  name: z.string().min(1),
  description: z.string().optional(),
  license: z.string().optional(),
  config: z.looseObject({ variables: Properties.default({}) }).default({ variables: {} }),
  types: z.record(z.string(), ComplexType).default({}),
  resources: z.record(z.string(), Resource).default({}),
  functions: z.record(z.string(), FunctionDef).default({}),
  language: z
    .looseObject({ nodejs: z.looseObject({ packageName: z.string().optional() }).optional() })
    .optional(),
});

export type PackageSchema = z.infer<typeof PackageSchema>;
export type ResourceSchema = z.infer<typeof Resource>;
export type FunctionSchema = z.infer<typeof FunctionDef>;
export type ComplexTypeSchema = z.infer<typeof ComplexType>;

/** `runpodkit:index:NetworkVolume` -> `NetworkVolume`. */
export function tokenName(token: string): string {
  return token.split(":").at(-1) ?? token;
}

/** `NetworkVolume` -> `network-volume`, `getEndpoint` -> `get-endpoint`: the file name of its page. */
export function kebab(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase();
}
