import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { forwardingProvider, packageSpecifier } from "./dynamic";
import type { NetworkVolumeInputs } from "./network-volume-provider";
import { DYNAMIC_MODULE, type PulumiInputs, resourceProps } from "./resource";

export type NetworkVolumeArgs = PulumiInputs<NetworkVolumeInputs>;

/** The provider object Pulumi serializes into the state (see provider/dynamic.ts). */
export const networkVolumeForwarder = forwardingProvider(
  packageSpecifier(join(__dirname, "network-volume-provider")),
  "networkVolumeProvider",
);

/** Every output: the inputs, adoptId and the computed fields. */
export const NETWORK_VOLUME_OUTPUTS = ["name", "size", "dataCenterId", "adoptId"] as const;

/**
 * A network volume (REST /networkvolumes). Type token `pulumi-nodejs:dynamic/runpodkit:NetworkVolume`
 * (`runpodkit:index:NetworkVolume` in schema.json). Changing dataCenterId replaces it; size only grows.
 */
export class NetworkVolume extends pulumi.dynamic.Resource {
  declare readonly name: pulumi.Output<string>;
  /** Size in GB. */
  declare readonly size: pulumi.Output<number>;
  declare readonly dataCenterId: pulumi.Output<string>;
  declare readonly adoptId: pulumi.Output<string | null>;

  constructor(name: string, args: NetworkVolumeArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      networkVolumeForwarder,
      name,
      resourceProps(name, args, NETWORK_VOLUME_OUTPUTS),
      opts,
      DYNAMIC_MODULE,
      "NetworkVolume",
    );
  }

  /** Looks up an existing volume by id without managing it. */
  static get(name: string, id: pulumi.Input<pulumi.ID>, opts?: pulumi.CustomResourceOptions): NetworkVolume {
    return new NetworkVolume(name, {} as NetworkVolumeArgs, { ...opts, id });
  }
}
