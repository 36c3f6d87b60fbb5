import { z } from "zod";
import {
  TEMPLATE_DEFAULTS,
  type Template,
  TemplateCreateInput,
  type TemplateUpdateInput,
} from "../sdk/schemas";
import type { InputSpec, Props } from "./check";
import { hostContext, type ProviderContext } from "./context";
import {
  ADOPT_ID,
  adoptIdInput,
  deleteWithin,
  implement,
  orNull,
  type ResourceDefinition,
} from "./implement";

const fields = TemplateCreateInput.shape;

/** Inputs of Template (REST /templates). Defaults are the service's. */
export const TemplateInputs = z.strictObject({
  name: fields.name
    .optional()
    .describe("Template name, unique in the account. Default: the resource name plus a random suffix."),
  imageName: fields.imageName.describe("Container image, e.g. `ghcr.io/acme/worker:1.2`."),
  category: fields.category.describe(
    "NVIDIA, AMD or CPU (default NVIDIA). Changing it replaces the template.",
  ),
  isServerless: fields.isServerless.describe(
    "Whether endpoints use it (default false). Changing it replaces the template.",
  ),
  containerDiskInGb: fields.containerDiskInGb.describe("Container disk in GB (default 50)."),
  volumeInGb: fields.volumeInGb.describe("Pod volume in GB (default 20)."),
  volumeMountPath: fields.volumeMountPath.describe("Where the volume is mounted (default /workspace)."),
  dockerEntrypoint: fields.dockerEntrypoint.describe("Entrypoint override (default none)."),
  dockerStartCmd: fields.dockerStartCmd.describe("Start command override (default none)."),
  env: fields.env.describe("Environment variables of the container. Stored as a secret in the state."),
  ports: fields.ports.describe('Exposed ports such as "8888/http" (default 8888/http and 22/tcp).'),
  readme: fields.readme.describe("Readme text (default empty)."),
  isPublic: fields.isPublic.describe("Whether the template is public (default false)."),
  containerRegistryAuthId: fields.containerRegistryAuthId
    .nullable()
    .describe("Id of the registry credentials used to pull a private image (default none)."),
  adoptId: adoptIdInput("Id of an existing template to take over instead of creating one."),
});
export type TemplateInputs = z.input<typeof TemplateInputs>;

export const templateSpec: InputSpec = {
  type: "Template",
  schema: TemplateInputs,
  secrets: ["env"],
  defaults: { ...TEMPLATE_DEFAULTS, containerRegistryAuthId: null },
  createOnly: [ADOPT_ID],
};

/** The fields PATCH may change: everything but category and isServerless (those replace). */
function updatable(inputs: Props): TemplateUpdateInput {
  return {
    name: String(inputs.name),
    imageName: String(inputs.imageName),
    containerDiskInGb: inputs.containerDiskInGb as number,
    volumeInGb: inputs.volumeInGb as number,
    volumeMountPath: inputs.volumeMountPath as string,
    dockerEntrypoint: inputs.dockerEntrypoint as string[],
    dockerStartCmd: inputs.dockerStartCmd as string[],
    env: inputs.env as Record<string, string>,
    ports: inputs.ports as string[],
    readme: inputs.readme as string,
    isPublic: inputs.isPublic as boolean,
    containerRegistryAuthId: (inputs.containerRegistryAuthId as string | null) ?? null,
  };
}

export function templateDefinition(): ResourceDefinition<Template> {
  return {
    noun: "template",
    spec: templateSpec,
    replaceOnChange: ["category", "isServerless"],
    uniqueName: true,
    fetch: (call, id) => orNull(() => call.api.templates.get(id)),
    create: (call, inputs) => {
      const { containerRegistryAuthId, ...rest } = updatable(inputs);
      return call.api.templates.create({
        ...rest,
        name: String(inputs.name),
        imageName: String(inputs.imageName),
        category: inputs.category as TemplateCreateInput["category"],
        isServerless: inputs.isServerless as boolean,
        ...(containerRegistryAuthId ? { containerRegistryAuthId } : {}),
      });
    },
    // The whole desired configuration every time, so drift in any field is put right.
    apply: (call, id, _current, inputs) => call.api.templates.update(id, updatable(inputs)),
    // Still used by an endpoint (often one being deleted in the same run): wait for it to go.
    remove: (call, id) => deleteWithin(call, () => call.api.templates.delete(id)),
    idOf: (record) => record.id,
    nameOf: (record) => record.name,
    outputs: (record) => ({
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
    }),
  };
}

export function createTemplateProvider(context: ProviderContext) {
  return implement(templateDefinition(), context);
}

/** What Pulumi's provider host loads (see provider/dynamic.ts). */
export const templateProvider = createTemplateProvider(hostContext());
