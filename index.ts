/**
 * runpodkit: Pulumi resources for a serverless GPU service (RunPod-compatible). The typed SDK is a
 * separate entry point ("runpodkit/sdk") and never loads Pulumi.
 */
// First: on an unsupported Node.js, one line naming the required version instead of a crash below.
import "./sdk/node-guard";
// Then: without @pulumi/pulumi (an optional peer dependency), one line saying to install it.
import "./provider/pulumi-guard";

export { ContainerRegistryAuth, type ContainerRegistryAuthArgs } from "./provider/container-registry-auth";
export { Endpoint, type EndpointArgs } from "./provider/endpoint";
export {
  type GetCpuFlavorsArgs,
  type GetGpuTypesArgs,
  getCpuFlavors,
  getDataCenters,
  getGpuTypes,
  getGpuTypesOutput,
  type LookupOptions,
} from "./provider/lookups";
export { NetworkVolume, type NetworkVolumeArgs } from "./provider/network-volume";
export { Pod, type PodArgs } from "./provider/pod";
export { Secret, type SecretArgs } from "./provider/secret";
export { Template, type TemplateArgs } from "./provider/template";
/** The typed SDK, also importable alone as "runpodkit/sdk" (without Pulumi). */
export * as sdk from "./sdk";
