import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { forwardingProvider, packageSpecifier } from "./dynamic";
import { DYNAMIC_MODULE, type PulumiInputs, resourceProps, withSecretOutputs } from "./resource";
import type { TemplateInputs } from "./template-provider";

export type TemplateArgs = PulumiInputs<TemplateInputs>;

/** The provider object Pulumi serializes into the state (see provider/dynamic.ts). */
export const templateForwarder = forwardingProvider(
  packageSpecifier(join(__dirname, "template-provider")),
  "templateProvider",
);

/** Every output: the inputs, adoptId and the computed fields. */
export const TEMPLATE_OUTPUTS = [
  "name",
  "imageName",
  "category",
  "isServerless",
  "containerDiskInGb",
  "volumeInGb",
  "volumeMountPath",
  "dockerEntrypoint",
  "dockerStartCmd",
  "env",
  "ports",
  "readme",
  "isPublic",
  "containerRegistryAuthId",
  "adoptId",
] as const;
export const TEMPLATE_SECRETS = ["env"];

/**
 * A template (REST /templates): the container image and settings that endpoints run. Type token
 * `pulumi-nodejs:dynamic/runpodkit:Template` (`runpodkit:index:Template` in schema.json). Changing
 * category or isServerless replaces it; env is stored as a secret.
 */
export class Template extends pulumi.dynamic.Resource {
  declare readonly name: pulumi.Output<string>;
  declare readonly imageName: pulumi.Output<string>;
  declare readonly category: pulumi.Output<"NVIDIA" | "AMD" | "CPU">;
  declare readonly isServerless: pulumi.Output<boolean>;
  declare readonly containerDiskInGb: pulumi.Output<number>;
  declare readonly volumeInGb: pulumi.Output<number>;
  declare readonly volumeMountPath: pulumi.Output<string>;
  declare readonly dockerEntrypoint: pulumi.Output<string[]>;
  declare readonly dockerStartCmd: pulumi.Output<string[]>;
  declare readonly env: pulumi.Output<Record<string, string>>;
  declare readonly ports: pulumi.Output<string[]>;
  declare readonly readme: pulumi.Output<string>;
  declare readonly isPublic: pulumi.Output<boolean>;
  declare readonly containerRegistryAuthId: pulumi.Output<string | null>;
  declare readonly adoptId: pulumi.Output<string | null>;

  constructor(name: string, args: TemplateArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      templateForwarder,
      name,
      resourceProps(name, args, TEMPLATE_OUTPUTS, TEMPLATE_SECRETS),
      withSecretOutputs(opts, TEMPLATE_SECRETS),
      DYNAMIC_MODULE,
      "Template",
    );
  }

  /** Looks up an existing template by id without managing it. */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): Template {
    return new Template(name, {} as TemplateArgs, { ...opts, id });
  }
}
