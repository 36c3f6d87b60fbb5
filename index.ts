/**
 * runpodkit: Pulumi resources for a serverless GPU service (RunPod-compatible). The typed SDK is a
 * separate entry point ("runpodkit/sdk") and never loads Pulumi.
 */
// First: on an unsupported Node.js, one line naming the required version instead of a crash below.
import "./sdk/node-guard";
// Then: without @pulumi/pulumi (an optional peer dependency), one line saying to install it.
import "./provider/pulumi-guard";

export {
  type GetCpuFlavorsArgs,
  type GetGpuTypesArgs,
  type GetGpuTypesOutputArgs,
  getCpuFlavors,
  getDataCenters,
  getGpuTypes,
  getGpuTypesOutput,
  type LookupOptions,
} from "./provider/lookups";
export type {
  ContainerRegistryAuthArgs,
  ContainerRegistryAuthState,
  CpuFlavor,
  DataCenter,
  EndpointArgs,
  EndpointState,
  GpuType,
  NetworkVolumeArgs,
  NetworkVolumeState,
  PodArgs,
  PodState,
  SecretArgs,
  SecretState,
  TemplateArgs,
  TemplateState,
} from "./provider/public-types";
export {
  ContainerRegistryAuth,
  Endpoint,
  NetworkVolume,
  Pod,
  Secret,
  Template,
} from "./provider/resources";
/** The typed SDK, also importable alone as "runpodkit/sdk" (without Pulumi). */
export * as sdk from "./sdk";
