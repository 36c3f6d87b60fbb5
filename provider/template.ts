import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import {
  TEMPLATE_DEFAULTS,
  TemplateCreateInput,
  type Template as TemplateRecord,
  type TemplateUpdateInput,
} from "../sdk/schemas";
import { type InputSpec, parseInputs } from "./check";
import { hostContext, type ProviderContext } from "./context";
import { forwardingProvider, packageSpecifier } from "./dynamic";
import { endpointsUsing } from "./endpoint";
import { ADOPT_ID, adoptIdInput, implement, orNull, type ResourceDefinition } from "./implement";
import {
  DYNAMIC_MODULE,
  type OutputsOf,
  outputKeys,
  type PulumiInputs,
  resourceProps,
  type StateOf,
  withSecretOutputs,
} from "./resource";

// Arguments ---------------------------------------------------------------------------------------

const fields = TemplateCreateInput.shape;

/** Inputs of Template (REST /templates), with the service's defaults. */
export const TemplateInputs = z.strictObject({
  name: fields.name
    .optional()
    .describe(
      "Template name, unique in the account. Default: the resource name plus a generated suffix. A replacement keeps an explicit name: the old template is renamed aside until its endpoints use the new one.",
    ),
  imageName: fields.imageName.describe("Container image, e.g. `ghcr.io/acme/worker:1.2`."),
  category: fields.category
    .unwrap()
    .default(TEMPLATE_DEFAULTS.category)
    .describe("NVIDIA, AMD or CPU (default NVIDIA). Changing it replaces the template."),
  isServerless: fields.isServerless
    .unwrap()
    .default(TEMPLATE_DEFAULTS.isServerless)
    .describe("Whether endpoints use it (default false). Changing it replaces the template."),
  containerDiskInGb: fields.containerDiskInGb
    .unwrap()
    .default(TEMPLATE_DEFAULTS.containerDiskInGb)
    .describe("Container disk in GB (default 50)."),
  volumeInGb: fields.volumeInGb
    .unwrap()
    .default(TEMPLATE_DEFAULTS.volumeInGb)
    .describe("Pod volume in GB (default 20)."),
  volumeMountPath: fields.volumeMountPath
    .unwrap()
    .default(TEMPLATE_DEFAULTS.volumeMountPath)
    .describe("Where the volume is mounted (default /workspace)."),
  dockerEntrypoint: fields.dockerEntrypoint
    .unwrap()
    .default(() => [])
    .describe("Entrypoint override (default none)."),
  dockerStartCmd: fields.dockerStartCmd
    .unwrap()
    .default(() => [])
    .describe("Start command override (default none)."),
  env: fields.env
    .unwrap()
    .default(() => ({}))
    .describe("Environment variables of the container. Stored as a secret in the state."),
  ports: fields.ports
    .unwrap()
    .default(() => [...TEMPLATE_DEFAULTS.ports])
    .describe('Exposed ports such as "8888/http" (default 8888/http and 22/tcp).'),
  readme: fields.readme.unwrap().default(TEMPLATE_DEFAULTS.readme).describe("Readme text (default empty)."),
  isPublic: fields.isPublic
    .unwrap()
    .default(TEMPLATE_DEFAULTS.isPublic)
    .describe("Whether the template is public (default false)."),
  containerRegistryAuthId: fields.containerRegistryAuthId
    .unwrap()
    .nullable()
    .default(null)
    .describe("Id of the registry credentials used to pull a private image (default none)."),
  adoptId: adoptIdInput("Id of an existing template to take over instead of creating one."),
});
export type TemplateArgs = PulumiInputs<z.input<typeof TemplateInputs>>;
/** The desired configuration: the arguments with defaults applied and a name. */
export type TemplateDesired = z.output<typeof TemplateInputs> & { name: string };

// State -------------------------------------------------------------------------------------------

export type TemplateState = StateOf<typeof TemplateInputs>;

export const templateSpec = {
  type: "Template",
  schema: TemplateInputs,
  secrets: ["env"],
  replaceOnChange: ["category", "isServerless"],
  uniqueName: true,
  createOnly: [ADOPT_ID],
} satisfies InputSpec;

// CRUD --------------------------------------------------------------------------------------------

export function templateDefinition(): ResourceDefinition<TemplateDesired, TemplateRecord> {
  return {
    noun: "template",
    spec: templateSpec,
    desired: (props) => parseInputs(templateSpec, props),
    fetch: (call, id) => orNull(() => call.api.templates.get(id)),
    create: (call, desired) => call.api.templates.create(toCreateInput(desired)),
    // The whole desired configuration every time, so drift in any field is put right.
    apply: (call, id, _current, desired) => call.api.templates.update(id, toUpdateInput(desired)),
    remove: (call, id) => call.api.templates.delete(id),
    dependents: (call, id) => endpointsUsing(call, (e) => e.templateId === id),
    // PATCH may rename: a same-name replacement moves the old template aside instead of deleting it
    // first, so its endpoints keep running until they are repointed to the new one.
    rename: async (call, id, name) => {
      await call.api.templates.update(id, { name });
    },
    findByName: async (call, name) => (await call.api.templates.list()).find((t) => t.name === name),
    idOf: (record) => record.id,
    nameOf: (record) => record.name,
    outputs: templateOutputs,
  };
}

export function createTemplateProvider(context: ProviderContext) {
  return implement(templateDefinition(), context);
}

/** What Pulumi's provider host loads (through provider/template-provider.ts, see provider/dynamic.ts). */
export const templateProvider = createTemplateProvider(hostContext());

// The Resource class ------------------------------------------------------------------------------

/** The provider object Pulumi serializes into the state (see provider/dynamic.ts). */
export const templateForwarder = forwardingProvider(
  packageSpecifier(join(__dirname, "template-provider")),
  "templateProvider",
);

/** Every output: the inputs and adoptId. */
export const TEMPLATE_OUTPUTS = outputKeys(templateSpec);

export interface Template extends OutputsOf<TemplateState> {}

/**
 * A template (REST /templates): the container image and settings that endpoints run. Type token
 * `pulumi-nodejs:dynamic/runpodkit:Template` (`runpodkit:index:Template` in schema.json). Changing
 * category or isServerless replaces it (without downtime, even under an explicit name); env is
 * stored as a secret.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface above declares the outputs once, from the schemas; Pulumi sets each on the instance
export class Template extends pulumi.dynamic.Resource {
  constructor(name: string, args: TemplateArgs, opts?: pulumi.CustomResourceOptions);
  constructor(
    name: string,
    args: undefined,
    opts: pulumi.CustomResourceOptions & { id: pulumi.Input<pulumi.ID> },
  );
  constructor(name: string, args: TemplateArgs | undefined, opts?: pulumi.CustomResourceOptions) {
    super(
      templateForwarder,
      name,
      resourceProps(name, args, templateSpec, opts),
      withSecretOutputs(opts, templateSpec),
      DYNAMIC_MODULE,
      "Template",
    );
  }

  /** Looks up an existing template by id without managing it. */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): Template {
    return new Template(name, undefined, { ...opts, id });
  }
}

// Pure mappers ------------------------------------------------------------------------------------

/** The fields PATCH may change: everything but category and isServerless (those replace). */
export function toUpdateInput(desired: TemplateDesired): TemplateUpdateInput {
  return {
    name: desired.name,
    imageName: desired.imageName,
    containerDiskInGb: desired.containerDiskInGb,
    volumeInGb: desired.volumeInGb,
    volumeMountPath: desired.volumeMountPath,
    dockerEntrypoint: desired.dockerEntrypoint,
    dockerStartCmd: desired.dockerStartCmd,
    env: desired.env,
    ports: desired.ports,
    readme: desired.readme,
    isPublic: desired.isPublic,
    containerRegistryAuthId: desired.containerRegistryAuthId,
  };
}

export function toCreateInput(desired: TemplateDesired): TemplateCreateInput {
  const { containerRegistryAuthId, ...rest } = toUpdateInput(desired);
  return {
    ...rest,
    name: desired.name,
    imageName: desired.imageName,
    category: desired.category,
    isServerless: desired.isServerless,
    ...(containerRegistryAuthId ? { containerRegistryAuthId } : {}),
  };
}

export function templateOutputs(record: TemplateRecord): Omit<TemplateState, "adoptId" | "category"> & {
  category: string;
} {
  return {
    name: record.name,
    imageName: record.imageName,
    category: record.category,
    isServerless: record.isServerless,
    containerDiskInGb: record.containerDiskInGb,
    volumeInGb: record.volumeInGb,
    volumeMountPath: record.volumeMountPath,
    dockerEntrypoint: record.dockerEntrypoint,
    dockerStartCmd: record.dockerStartCmd,
    env: record.env,
    ports: record.ports,
    readme: record.readme,
    isPublic: record.isPublic,
    containerRegistryAuthId: record.containerRegistryAuthId ?? null,
  };
}
