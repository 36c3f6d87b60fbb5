import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { forwardingProvider, packageSpecifier } from "./dynamic";
import type { EndpointInputs } from "./endpoint-provider";
import { DYNAMIC_MODULE, type PulumiInputs, resourceProps, withSecretOutputs } from "./resource";

export type EndpointArgs = PulumiInputs<EndpointInputs>;

/** The provider object Pulumi serializes into the state (see provider/dynamic.ts). */
export const endpointForwarder = forwardingProvider(
  packageSpecifier(join(__dirname, "endpoint-provider")),
  "endpointProvider",
);

/** Every output: the inputs, adoptId and the computed fields. */
export const ENDPOINT_OUTPUTS = [
  "name",
  "templateId",
  "hubReleaseId",
  "modelName",
  "computeType",
  "type",
  "gpuIds",
  "gpuCount",
  "instanceIds",
  "workersMin",
  "workersMax",
  "workersStandby",
  "idleTimeout",
  "scalerType",
  "scalerValue",
  "flashBootType",
  "executionTimeoutMs",
  "locations",
  "allowedCudaVersions",
  "networkVolumeId",
  "env",
  "adoptId",
  "url",
  "createdAt",
  "version",
] as const;
export const ENDPOINT_SECRETS = ["env"];

/**
 * A serverless endpoint, managed through GraphQL saveEndpoint (always the whole configuration: it is
 * a full replace). Type token `pulumi-nodejs:dynamic/runpodkit:Endpoint` (`runpodkit:index:Endpoint`
 * in schema.json). Changing computeType or type replaces it. Deleting it scales it to zero first.
 */
export class Endpoint extends pulumi.dynamic.Resource {
  declare readonly name: pulumi.Output<string>;
  declare readonly templateId: pulumi.Output<string>;
  declare readonly hubReleaseId: pulumi.Output<string | null>;
  declare readonly modelName: pulumi.Output<string | null>;
  declare readonly computeType: pulumi.Output<"GPU" | "CPU">;
  declare readonly type: pulumi.Output<"QB" | "LB">;
  declare readonly gpuIds: pulumi.Output<string>;
  declare readonly gpuCount: pulumi.Output<number>;
  declare readonly instanceIds: pulumi.Output<string[]>;
  declare readonly workersMin: pulumi.Output<number>;
  declare readonly workersMax: pulumi.Output<number>;
  declare readonly workersStandby: pulumi.Output<number>;
  declare readonly idleTimeout: pulumi.Output<number>;
  declare readonly scalerType: pulumi.Output<"QUEUE_DELAY" | "REQUEST_COUNT">;
  declare readonly scalerValue: pulumi.Output<number>;
  declare readonly flashBootType: pulumi.Output<"OFF" | "FLASHBOOT">;
  declare readonly executionTimeoutMs: pulumi.Output<number>;
  declare readonly locations: pulumi.Output<string | null>;
  declare readonly allowedCudaVersions: pulumi.Output<string | null>;
  declare readonly networkVolumeId: pulumi.Output<string | null>;
  declare readonly env: pulumi.Output<Record<string, string>>;
  declare readonly adoptId: pulumi.Output<string | null>;
  /** The job API address of this endpoint: `{queueUrl}/v2/{id}`. */
  declare readonly url: pulumi.Output<string>;
  /** ISO-8601. */
  declare readonly createdAt: pulumi.Output<string>;
  /** Bumped by the service when the template or env changes (a rolling release). */
  declare readonly version: pulumi.Output<number>;

  constructor(name: string, args: EndpointArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      endpointForwarder,
      name,
      resourceProps(name, args, ENDPOINT_OUTPUTS, ENDPOINT_SECRETS),
      withSecretOutputs(opts, ENDPOINT_SECRETS),
      DYNAMIC_MODULE,
      "Endpoint",
    );
  }

  /** Looks up an existing endpoint by id without managing it. */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): Endpoint {
    return new Endpoint(name, {} as EndpointArgs, { ...opts, id });
  }
}
