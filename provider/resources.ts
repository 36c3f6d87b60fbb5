/**
 * The resource classes a Pulumi program constructs. Apart from the modules that implement them, so
 * that their declarations (what `import { Endpoint } from "runpodkit"` type-checks against) reach only
 * @pulumi/pulumi and the plain types of ./public-types, never zod (see scripts/gen-public-types.ts).
 */
import * as pulumi from "@pulumi/pulumi";
import { containerRegistryAuthForwarder, containerRegistryAuthSpec } from "./container-registry-auth";
import { endpointForwarder, endpointSpec } from "./endpoint";
import { networkVolumeForwarder, networkVolumeSpec } from "./network-volume";
import { podForwarder, podSpec } from "./pod";
import type {
  ContainerRegistryAuthArgs,
  ContainerRegistryAuthState,
  EndpointArgs,
  EndpointState,
  NetworkVolumeArgs,
  NetworkVolumeState,
  OutputsOf,
  PodArgs,
  PodState,
  SecretArgs,
  SecretState,
  TemplateArgs,
  TemplateState,
} from "./public-types";
import { DYNAMIC_MODULE, resourceProps, withSecretOutputs } from "./resource";
import { secretForwarder, secretSpec } from "./secret";
import { templateForwarder, templateSpec } from "./template";

export interface Endpoint extends OutputsOf<EndpointState> {}

/**
 * A serverless endpoint, managed through GraphQL saveEndpoint (always the whole configuration: it is
 * a full replace). Type token `pulumi-nodejs:dynamic/runpodkit:Endpoint` (`runpodkit:index:Endpoint`
 * in schema.json). Changing computeType or type replaces it. Deleting it scales it to zero first.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface above declares the outputs once, from the schemas; Pulumi sets each on the instance
export class Endpoint extends pulumi.dynamic.Resource {
  constructor(name: string, args: EndpointArgs, opts?: pulumi.CustomResourceOptions);
  constructor(
    name: string,
    args: undefined,
    opts: pulumi.CustomResourceOptions & { id: pulumi.Input<pulumi.ID> },
  );
  constructor(name: string, args: EndpointArgs | undefined, opts?: pulumi.CustomResourceOptions) {
    super(
      endpointForwarder,
      name,
      resourceProps(name, args, endpointSpec, opts),
      withSecretOutputs(opts, endpointSpec),
      DYNAMIC_MODULE,
      "Endpoint",
    );
  }

  /** Looks up an existing endpoint by id without managing it. */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): Endpoint {
    return new Endpoint(name, undefined, { ...opts, id });
  }
}

export interface Template extends OutputsOf<TemplateState> {}

/**
 * A template (REST /templates): the container image and settings that endpoints run. Type token
 * `pulumi-nodejs:dynamic/runpodkit:Template` (`runpodkit:index:Template` in schema.json). Changing
 * category or isServerless replaces it (without downtime, even under an explicit name); env is
 * stored as a secret.
 *
 * REST is the main path. startSsh, startJupyter and startScript exist only in GraphQL (REST neither
 * takes nor returns them), so: every read adds them from `myself { podTemplates }`; a create or
 * update whose start fields differ from the template's first sends GraphQL saveTemplate (a full
 * replace, carrying every field GraphQL has) and then, as always, the REST update with the whole
 * configuration (which restores dockerEntrypoint, a field saveTemplate lacks). Every field changes
 * in place. dockerArgs and dockerStartCmd are two spellings of one start command (shell quoting,
 * sdk/schemas/docker-args.ts).
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

export interface NetworkVolume extends OutputsOf<NetworkVolumeState> {}

/**
 * A network volume (REST /networkvolumes). Type token `pulumi-nodejs:dynamic/runpodkit:NetworkVolume`
 * (`runpodkit:index:NetworkVolume` in schema.json). Changing dataCenterId or isNextGenStorage replaces
 * it; size only grows.
 *
 * REST is the main path. The storage exists only in GraphQL: a volume with isNextGenStorage is
 * created by GraphQL createNetworkVolume (REST's create does not take it), and every read adds
 * storageType from `myself { networkVolumes }`, from which isNextGenStorage is read back.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface above declares the outputs once, from the schemas; Pulumi sets each on the instance
export class NetworkVolume extends pulumi.dynamic.Resource {
  constructor(name: string, args: NetworkVolumeArgs, opts?: pulumi.CustomResourceOptions);
  constructor(
    name: string,
    args: undefined,
    opts: pulumi.CustomResourceOptions & { id: pulumi.Input<pulumi.ID> },
  );
  constructor(name: string, args: NetworkVolumeArgs | undefined, opts?: pulumi.CustomResourceOptions) {
    super(
      networkVolumeForwarder,
      name,
      resourceProps(name, args, networkVolumeSpec, opts),
      withSecretOutputs(opts, networkVolumeSpec),
      DYNAMIC_MODULE,
      "NetworkVolume",
    );
  }

  /** Looks up an existing volume by id without managing it. */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): NetworkVolume {
    return new NetworkVolume(name, undefined, { ...opts, id });
  }
}

export interface ContainerRegistryAuth extends OutputsOf<ContainerRegistryAuthState> {}

/**
 * Credentials for a private container registry (REST /containerregistryauth). Type token
 * `pulumi-nodejs:dynamic/runpodkit:ContainerRegistryAuth` (`runpodkit:index:ContainerRegistryAuth`
 * in schema.json). The password is only ever stored as a secret. A new name replaces the resource;
 * new credentials update it in place through GraphQL updateRegistryAuth.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface above declares the outputs once, from the schemas; Pulumi sets each on the instance
export class ContainerRegistryAuth extends pulumi.dynamic.Resource {
  constructor(name: string, args: ContainerRegistryAuthArgs, opts?: pulumi.CustomResourceOptions);
  constructor(
    name: string,
    args: undefined,
    opts: pulumi.CustomResourceOptions & { id: pulumi.Input<pulumi.ID> },
  );
  constructor(
    name: string,
    args: ContainerRegistryAuthArgs | undefined,
    opts?: pulumi.CustomResourceOptions,
  ) {
    super(
      containerRegistryAuthForwarder,
      name,
      resourceProps(name, args, containerRegistryAuthSpec, opts),
      withSecretOutputs(opts, containerRegistryAuthSpec),
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
    return new ContainerRegistryAuth(name, undefined, { ...opts, id });
  }
}

export interface Secret extends OutputsOf<SecretState> {}

/**
 * An account secret (GraphQL secretCreate). Type token `pulumi-nodejs:dynamic/runpodkit:Secret`
 * (`runpodkit:index:Secret` in schema.json). Template, endpoint and pod env reference it as
 * `{{ RUNPOD_SECRET_<name> }}` (the `reference` output); the service substitutes the value when a
 * worker or pod starts, so the value never appears in their configuration. The value is only ever
 * stored as a secret.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface above declares the outputs once, from the schemas; Pulumi sets each on the instance
export class Secret extends pulumi.dynamic.Resource {
  constructor(name: string, args: SecretArgs, opts?: pulumi.CustomResourceOptions);
  constructor(
    name: string,
    args: undefined,
    opts: pulumi.CustomResourceOptions & { id: pulumi.Input<pulumi.ID> },
  );
  constructor(name: string, args: SecretArgs | undefined, opts?: pulumi.CustomResourceOptions) {
    super(
      secretForwarder,
      name,
      resourceProps(name, args, secretSpec, opts),
      withSecretOutputs(opts, secretSpec),
      DYNAMIC_MODULE,
      "Secret",
    );
  }

  /** Looks up an existing secret by id without managing it (its value reads as null). */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): Secret {
    return new Secret(name, undefined, { ...opts, id });
  }
}

export interface Pod extends OutputsOf<PodState> {}

/**
 * A rented GPU or CPU pod (REST /pods). Type token `pulumi-nodejs:dynamic/runpodkit:Pod`
 * (`runpodkit:index:Pod` in schema.json). Placement fields (compute type, GPU types and count, CPU
 * flavors, vCPUs, cloud, data centers, volume, template) replace it; image, command, env, ports and
 * disks update it in place (the service resets the pod); `desiredStatus` starts or stops it. env is
 * stored as a secret. On the local service a pod holds state and is billed but runs no container.
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface above declares the outputs once, from the schemas; Pulumi sets each on the instance
export class Pod extends pulumi.dynamic.Resource {
  constructor(name: string, args: PodArgs, opts?: pulumi.CustomResourceOptions);
  constructor(
    name: string,
    args: undefined,
    opts: pulumi.CustomResourceOptions & { id: pulumi.Input<pulumi.ID> },
  );
  constructor(name: string, args: PodArgs | undefined, opts?: pulumi.CustomResourceOptions) {
    super(
      podForwarder,
      name,
      resourceProps(name, args, podSpec, opts),
      withSecretOutputs(opts, podSpec),
      DYNAMIC_MODULE,
      "Pod",
    );
  }

  /** Looks up an existing pod by id without managing it. */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): Pod {
    return new Pod(name, undefined, { ...opts, id });
  }
}
