import { z } from "zod";
import type * as api from "../public-types";
import {
  ComputeType,
  CpuFlavorId,
  CudaVersion,
  DataCenterId,
  GpuTypeId,
  GqlPodStatus,
  many,
  OptionalRef,
  OptionalResourceName,
  PodStatus,
  ResourceName,
  restRef,
} from "./common";
import { NetworkVolume } from "./network-volume";
import {
  EnvMap,
  GqlDockerArgs,
  GqlPodEnvList,
  IMAGE_NAME_MAX_LENGTH,
  ImageName,
  MountPath,
  PortSpec,
} from "./template";

/**
 * A pod as REST v1 returns it (GET /pods, GET /pods/{id}, endpoint `workers`). Serverless workers are
 * pods with an `endpointId`; rented pods have none. Only the fields this service fills are listed;
 * readers keep unknown ones.
 */
export const Pod = z.object({
  id: z.string(),
  name: z.string(),
  desiredStatus: PodStatus,
  machineId: z.string().optional(),
  memoryInGb: z.number().optional(),
  vcpuCount: z.number().optional(),
  cpuFlavorId: z.string().nullish(),
  containerDiskInGb: z.number().int().optional(),
  volumeInGb: z.number().int().optional(),
  volumeMountPath: z.string().optional(),
  dockerEntrypoint: z.array(z.string()).optional(),
  dockerStartCmd: z.array(z.string()).optional(),
  networkVolumeId: z.string().nullish(),
  containerRegistryAuthId: z.string().nullish(),
  /** Empty: no container runs, so nothing is reachable. */
  publicIp: z.string().nullish(),
  portMappings: z.record(z.string(), z.number()).nullish(),
  /**
   * Where the pod runs. A rented pod always has dataCenterId and gpuTypeId here; includeMachine adds
   * the rest of the OpenAPI's Machine that this service knows (location, prices, the GPU or CPU type).
   */
  machine: z
    .object({
      dataCenterId: z.string().optional(),
      gpuTypeId: z.string().nullish(),
      location: z.string().optional(),
      secureCloud: z.boolean().optional(),
      supportPublicIp: z.boolean().optional(),
      costPerHr: z.number().optional(),
      currentPricePerGpu: z.number().optional(),
      minPodGpuCount: z.number().int().optional(),
      gpuDisplayName: z.string().optional(),
      gpuType: z
        .object({
          id: z.string(),
          count: z.number().int(),
          displayName: z.string(),
          securePrice: z.number().nullish(),
          communityPrice: z.number().nullish(),
        })
        .loose()
        .optional(),
      cpuCount: z.number().int().optional(),
      cpuTypeId: z.string().optional(),
      cpuType: z.object({ id: z.string(), displayName: z.string(), groupId: z.string() }).loose().optional(),
    })
    .nullish(),
  /** With includeNetworkVolume: the attached volume (a worker's is its endpoint's); absent when none. */
  networkVolume: NetworkVolume.optional(),
  /** With includeSavingsPlans: the savings plans applied (this service has none, so []). */
  savingsPlans: z
    .array(
      z
        .object({
          id: z.string(),
          podId: z.string(),
          gpuTypeId: z.string(),
          costPerHr: z.number(),
          startTime: z.string(),
          endTime: z.string(),
        })
        .loose(),
    )
    .optional(),
  /** Set when the pod is a serverless worker. */
  endpointId: z.string().nullish(),
  /** Legacy synonym of endpointId. */
  aiApiId: z.string().nullish(),
  consumerUserId: z.string().optional(),
  image: z.string(),
  templateId: z.string().nullish(),
  gpu: z
    .object({ id: z.string().optional(), count: z.number().int(), displayName: z.string().optional() })
    .nullish(),
  costPerHr: z.number().optional(),
  adjustedCostPerHr: z.number().optional(),
  env: z.record(z.string(), z.string()).optional(),
  ports: z.array(z.string()).optional(),
  interruptible: z.boolean().optional(),
  locked: z.boolean().optional(),
  /** ISO-8601; null when never started. */
  lastStartedAt: z.string().nullish(),
  lastStatusChange: z.string().optional(),
  /** For workers: the endpoint version the worker runs. */
  slsVersion: z.number().int().optional(),
});
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type Pod = api.Pod;
export const PodList = z.array(Pod);

const BoolQuery = z.stringbool().optional();

/** GET /pods query (filters of the real service; unknown parameters are refused). */
export const PodListQuery = z.strictObject({
  computeType: z.enum(["GPU", "CPU"]).optional(),
  desiredStatus: PodStatus.optional(),
  endpointId: z.string().max(191).optional(),
  id: z.string().optional(),
  imageName: z.string().optional(),
  name: OptionalResourceName.optional(),
  templateId: z.string().optional(),
  networkVolumeId: z.string().optional(),
  /** Pods with any of these GPU types (repeat the parameter for several). */
  gpuTypeId: many(GpuTypeId).optional(),
  /** Pods in any of these data centers. */
  dataCenterId: many(DataCenterId).optional(),
  /** CPU pods of any of these flavors. */
  cpuFlavorId: many(CpuFlavorId).optional(),
  includeMachine: BoolQuery,
  includeNetworkVolume: BoolQuery,
  includeSavingsPlans: BoolQuery,
  includeTemplate: BoolQuery,
  /** Serverless workers are listed only when true (as the real service). */
  includeWorkers: BoolQuery,
});
export type PodListQuery = z.infer<typeof PodListQuery>;

const podFields = {
  name: ResourceName,
  imageName: ImageName,
  dockerEntrypoint: z.array(z.string()),
  dockerStartCmd: z.array(z.string()),
  env: EnvMap,
  ports: z.array(PortSpec),
  containerDiskInGb: z.int().min(1).nullable(),
  volumeInGb: z.int().min(0).nullable(),
  volumeMountPath: MountPath.min(1),
  locked: z.boolean(),
};

/** POST /pods (the real service's PodCreateInput; GPU fields are ignored for CPU pods and vice versa). */
export const PodCreateInput = z.strictObject({
  ...podFields,
  name: podFields.name.optional(),
  imageName: podFields.imageName.optional(),
  dockerEntrypoint: podFields.dockerEntrypoint.optional(),
  dockerStartCmd: podFields.dockerStartCmd.optional(),
  env: podFields.env.optional(),
  ports: podFields.ports.optional(),
  containerDiskInGb: podFields.containerDiskInGb.optional(),
  volumeInGb: podFields.volumeInGb.optional(),
  volumeMountPath: podFields.volumeMountPath.optional(),
  locked: podFields.locked.optional(),
  computeType: ComputeType.optional(),
  cloudType: z.enum(["SECURE", "COMMUNITY"]).optional(),
  gpuTypeIds: z.array(GpuTypeId).min(1).optional(),
  gpuTypePriority: z.enum(["availability", "custom"]).optional(),
  gpuCount: z.int().min(1).optional(),
  cpuFlavorIds: z.array(CpuFlavorId).min(1).optional(),
  cpuFlavorPriority: z.enum(["availability", "custom"]).optional(),
  vcpuCount: z.int().min(1).optional(),
  dataCenterIds: z.array(DataCenterId).min(1).optional(),
  dataCenterPriority: z.enum(["availability", "custom"]).optional(),
  countryCodes: z.array(z.string().min(2).max(2)).optional(),
  allowedCudaVersions: z.array(CudaVersion).optional(),
  interruptible: z.boolean().optional(),
  supportPublicIp: z.boolean().nullable().optional(),
  globalNetworking: z.boolean().optional(),
  minRAMPerGPU: z.int().min(1).optional(),
  minVCPUPerGPU: z.int().min(1).optional(),
  minDiskBandwidthMBps: z.number().optional(),
  minDownloadMbps: z.number().optional(),
  minUploadMbps: z.number().optional(),
  templateId: z.string().min(1).optional(),
  networkVolumeId: restRef("a network volume").optional(),
  containerRegistryAuthId: restRef("a container registry auth").optional(),
});
export type PodCreateInput = api.PodCreateInput;

/**
 * PATCH /pods/{id} and POST .../update: absent = unchanged. A change of image, command, env, ports or
 * disks resets the pod (refused while locked); volumeInGb can only grow.
 */
export const PodUpdateInput = z.strictObject({
  name: podFields.name.optional(),
  imageName: podFields.imageName.optional(),
  dockerEntrypoint: podFields.dockerEntrypoint.optional(),
  dockerStartCmd: podFields.dockerStartCmd.optional(),
  env: podFields.env.optional(),
  ports: podFields.ports.optional(),
  containerDiskInGb: podFields.containerDiskInGb.optional(),
  volumeInGb: podFields.volumeInGb.optional(),
  volumeMountPath: podFields.volumeMountPath.optional(),
  locked: podFields.locked.optional(),
  globalNetworking: z.boolean().optional(),
  /** null detaches the credentials. */
  containerRegistryAuthId: restRef("a container registry auth").nullable().optional(),
});
export type PodUpdateInput = api.PodUpdateInput;

// ---- GraphQL -----------------------------------------------------------------------------------

const GqlEnv = GqlPodEnvList.nullish();
export const CLOUD_TYPES = ["SECURE", "COMMUNITY", "ALL"] as const;
export const CloudType = z.enum(CLOUD_TYPES);

/** pod(input: {podId}). */
export const GqlPodFilter = z.strictObject({ podId: z.string().min(1) });

/** podStop, podRestart, podReset, podTerminate (input: {podId}). */
export const GqlPodIdInput = z.strictObject({ podId: z.string().min(1) });

/** podResume(input: {podId, gpuCount}); gpuCount is ignored for CPU pods. */
export const GqlPodResumeInput = z.strictObject({ podId: z.string().min(1), gpuCount: z.int().min(0) });

/** Fields deployCpuPod and podFindAndDeployOnDemand share. `""` references are "not given". */
const gqlDeployFields = {
  cloudType: CloudType.nullish(),
  containerDiskInGb: z.int().min(1).nullish(),
  containerRegistryAuthId: OptionalRef,
  countryCode: z.string().nullish(),
  deployCost: z.number().nullish(),
  dockerArgs: GqlDockerArgs,
  env: GqlEnv,
  // "" is "not given" here (the template's image), as the official client sends it.
  imageName: z.string().max(IMAGE_NAME_MAX_LENGTH).nullish(),
  minDisk: z.int().nullish(),
  minDownload: z.int().nullish(),
  minUpload: z.int().nullish(),
  name: OptionalResourceName.nullish(),
  networkVolumeId: OptionalRef,
  ports: z.string().nullish(),
  startJupyter: z.boolean().nullish(),
  startSsh: z.boolean().nullish(),
  supportPublicIp: z.boolean().nullish(),
  templateId: OptionalRef,
  volumeKey: z.string().nullish(),
  volumeMountPath: MountPath.nullish(),
  dataCenterId: OptionalRef,
};

/** podFindAndDeployOnDemand(input): a GPU pod of gpuTypeId (or the first of gpuTypeIdList on offer). */
export const GqlPodFindAndDeployOnDemandInput = z.strictObject({
  ...gqlDeployFields,
  aiApiId: z.string().nullish(),
  gpuCount: z.int().min(1).nullish(),
  gpuTypeId: z.string().nullish(),
  gpuTypeIdList: z.array(z.string().nullable()).nullish(),
  minMemoryInGb: z.int().nullish(),
  minVcpuCount: z.int().nullish(),
  port: z.int().nullish(),
  volumeInGb: z.int().min(0).nullish(),
  cudaVersion: z.string().nullish(),
  allowedCudaVersions: z.array(z.string().nullable()).nullish(),
  minCudaVersion: z.string().nullish(),
  instanceIds: z.array(z.string().nullable()).nullish(),
  computeType: ComputeType.nullish(),
  globalNetwork: z.boolean().nullish(),
});
export type GqlPodFindAndDeployOnDemandInput = api.GqlPodFindAndDeployOnDemandInput;

/** deployCpuPod(input): instanceId "cpu3c-2-4" (flavor-vCPUs-GB); without one, the smallest cpu3c. */
export const GqlDeployCpuPodInput = z.strictObject({
  ...gqlDeployFields,
  instanceId: z.string().nullish(),
});
export type GqlDeployCpuPodInput = api.GqlDeployCpuPodInput;

/** podEditJob(input): the pod's new runtime (a reset); volumeInGb can only grow. */
export const GqlPodEditJobInput = z.strictObject({
  podId: z.string().min(1),
  dockerArgs: GqlDockerArgs,
  imageName: ImageName,
  env: GqlEnv,
  port: z.int().nullish(),
  ports: z.string().nullish(),
  containerDiskInGb: z.int().min(1),
  volumeInGb: z.int().min(0).nullish(),
  volumeMountPath: z.string().nullish(),
  containerRegistryAuthId: OptionalRef,
});
export type GqlPodEditJobInput = api.GqlPodEditJobInput;

/** GraphQL Pod: what `myself { pods }`, `pod(input)` and the pod mutations answer. */
export const GqlPod = z.object({
  id: z.string(),
  name: z.string(),
  machineId: z.string(),
  imageName: z.string().nullish(),
  dockerArgs: z.string().nullish(),
  gpuCount: z.number().int(),
  vcpuCount: z.number(),
  memoryInGb: z.number(),
  containerDiskInGb: z.number().int().nullish(),
  volumeInGb: z.number().nullish(),
  volumeMountPath: z.string().nullish(),
  desiredStatus: GqlPodStatus,
  costPerHr: z.number(),
  /** "KEY=value" entries. */
  env: z.array(z.string().nullable()).nullish(),
  ports: z.string().nullish(),
  templateId: z.string().nullish(),
  networkVolumeId: z.string().nullish(),
  containerRegistryAuthId: z.string().nullish(),
  podType: z.enum(["INTERRUPTABLE", "RESERVED", "BID", "BACKGROUND"]).nullish(),
  lastStatusChange: z.string().nullish(),
  uptimeSeconds: z.number().int().nullish(),
});
export type GqlPod = z.infer<typeof GqlPod>;

/** GET /pods/{podId} query. */
export const PodGetQuery = z.strictObject({
  includeMachine: BoolQuery,
  includeNetworkVolume: BoolQuery,
  includeSavingsPlans: BoolQuery,
  includeTemplate: BoolQuery,
  includeWorkers: BoolQuery,
});
export type PodGetQuery = z.infer<typeof PodGetQuery>;
