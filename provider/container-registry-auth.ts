import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import type { ContainerRegistryAuthInputs } from "./container-registry-auth-provider";
import { forwardingProvider, packageSpecifier } from "./dynamic";
import { DYNAMIC_MODULE, type PulumiInputs, resourceProps, withSecretOutputs } from "./resource";

export type ContainerRegistryAuthArgs = PulumiInputs<ContainerRegistryAuthInputs>;

/** The provider object Pulumi serializes into the state (see provider/dynamic.ts). */
export const containerRegistryAuthForwarder = forwardingProvider(
  packageSpecifier(join(__dirname, "container-registry-auth-provider")),
  "containerRegistryAuthProvider",
);

/** Every output: the inputs, adoptId and the computed fields. */
export const CONTAINER_REGISTRY_AUTH_OUTPUTS = ["name", "username", "password", "adoptId"] as const;
export const CONTAINER_REGISTRY_AUTH_SECRETS = ["password"];

/**
 * Credentials for a private container registry (REST /containerregistryauth). Type token
 * `pulumi-nodejs:dynamic/runpodkit:ContainerRegistryAuth` (`runpodkit:index:ContainerRegistryAuth`
 * in schema.json). The password is only ever stored as a secret. A new name replaces the resource
 * (deleting the old one first when the name is explicit, since names are unique); new credentials
 * update it in place through GraphQL updateRegistryAuth.
 */
export class ContainerRegistryAuth extends pulumi.dynamic.Resource {
  declare readonly name: pulumi.Output<string>;
  declare readonly username: pulumi.Output<string>;
  declare readonly password: pulumi.Output<string>;
  declare readonly adoptId: pulumi.Output<string | null>;

  constructor(name: string, args: ContainerRegistryAuthArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      containerRegistryAuthForwarder,
      name,
      resourceProps(name, args, CONTAINER_REGISTRY_AUTH_OUTPUTS, CONTAINER_REGISTRY_AUTH_SECRETS),
      withSecretOutputs(opts, CONTAINER_REGISTRY_AUTH_SECRETS),
      DYNAMIC_MODULE,
      "ContainerRegistryAuth",
    );
  }

  /** Looks up existing credentials by id without managing them (username and password read as null). */
  static get(
    name: string,
    id: pulumi.Input<pulumi.ID>,
    opts?: pulumi.CustomResourceOptions,
  ): ContainerRegistryAuth {
    return new ContainerRegistryAuth(name, {} as ContainerRegistryAuthArgs, { ...opts, id });
  }
}
