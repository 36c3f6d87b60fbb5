import type { Endpoint } from "../../../sdk/schemas/endpoint";
import type { NetworkVolume } from "../../../sdk/schemas/network-volume";
import type { Pod } from "../../../sdk/schemas/pod";
import type { Template } from "../../../sdk/schemas/template";
import {
  cpuDisplayName,
  gpuDisplayName,
  gpuPrices,
  locationOf,
  type PublicTemplate,
} from "../model/catalogue";
import { type PodView, podName, workerStatusChange } from "../model/pod";
import type { EndpointRecord, NetworkVolumeRecord, PodRecord, TemplateRecord } from "../model/records";

/** Records to REST v1 replies. Pure functions: what a domain record looks like on this wire. */

const iso = (ms: number | null | undefined) =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();

export function restTemplate(t: TemplateRecord): Template {
  return {
    id: t.id,
    name: t.name,
    imageName: t.imageName,
    category: t.category,
    isServerless: t.isServerless,
    isPublic: t.isPublic,
    isRunpod: false,
    containerDiskInGb: t.containerDiskInGb,
    volumeInGb: t.volumeInGb,
    volumeMountPath: t.volumeMountPath,
    dockerEntrypoint: t.dockerEntrypoint,
    dockerStartCmd: t.dockerStartCmd,
    env: t.env,
    ports: t.ports,
    readme: t.readme,
    containerRegistryAuthId: t.containerRegistryAuthId,
    earned: 0,
    runtimeInMin: 0,
  };
}

/** An official template of the catalogue (GET /templates?includeRunpodTemplates=true). */
export function restRunpodTemplate(t: PublicTemplate): Template {
  return {
    id: t.id,
    name: t.name,
    imageName: t.imageName,
    category: t.category,
    isServerless: false,
    isPublic: true,
    isRunpod: true,
    containerDiskInGb: t.containerDiskInGb,
    volumeInGb: t.volumeInGb,
    volumeMountPath: t.volumeMountPath,
    dockerEntrypoint: [],
    dockerStartCmd: t.dockerStartCmd,
    env: t.env,
    ports: t.ports,
    readme: "",
    containerRegistryAuthId: null,
    earned: 0,
    runtimeInMin: 0,
  };
}

export function restPod(pod: PodView, includeTemplate = false): Pod & { template?: Template } {
  const { worker, endpoint, template } = pod;
  return {
    id: worker.id,
    name: podName(pod),
    desiredStatus: worker.desiredStatus,
    endpointId: worker.endpointId,
    aiApiId: worker.endpointId,
    consumerUserId: worker.accountId,
    image: worker.imageName,
    templateId: worker.templateId,
    gpu: endpoint?.computeType === "CPU" ? null : { id: endpoint?.gpuTypeIds[0], count: worker.gpuCount },
    env: { ...(template?.env ?? {}), ...(endpoint?.env ?? {}) },
    ports: template?.ports ?? [],
    interruptible: false,
    locked: false,
    lastStartedAt: iso(worker.lastStartedAt),
    lastStatusChange: workerStatusChange(worker),
    slsVersion: endpoint?.version ?? 0,
    ...(includeTemplate && template ? { template: restTemplate(template) } : {}),
  };
}

/** A rented pod on REST; publicIp empty and no port mappings: no container runs here. */
export function restRentedPod(pod: PodRecord, template?: TemplateRecord): Pod & { template?: Template } {
  return {
    id: pod.id,
    name: pod.name,
    desiredStatus: pod.desiredStatus,
    consumerUserId: pod.accountId,
    image: pod.imageName,
    templateId: pod.templateId,
    machineId: pod.machineId,
    memoryInGb: pod.memoryInGb,
    vcpuCount: pod.vcpuCount,
    cpuFlavorId: pod.cpuFlavorId,
    gpu: pod.gpuTypeId
      ? { id: pod.gpuTypeId, count: pod.gpuCount, displayName: gpuDisplayName(pod.gpuTypeId) }
      : null,
    costPerHr: pod.costPerHr,
    adjustedCostPerHr: pod.costPerHr,
    env: pod.env,
    ports: pod.ports,
    containerDiskInGb: pod.containerDiskInGb,
    volumeInGb: pod.volumeInGb,
    volumeMountPath: pod.volumeMountPath,
    dockerEntrypoint: pod.dockerEntrypoint,
    dockerStartCmd: pod.dockerStartCmd,
    networkVolumeId: pod.networkVolumeId,
    containerRegistryAuthId: pod.containerRegistryAuthId,
    interruptible: pod.interruptible,
    locked: pod.locked,
    publicIp: "",
    portMappings: {},
    machine: { dataCenterId: pod.dataCenterId, gpuTypeId: pod.gpuTypeId },
    lastStartedAt: iso(pod.lastStartedAt),
    lastStatusChange: pod.lastStatusChange,
    ...(template ? { template: restTemplate(template) } : {}),
  };
}

/** What a pod reply includes beyond the record, by the include* query flags. */
export interface PodIncludes {
  template?: boolean | undefined;
  networkVolume?: boolean | undefined;
  machine?: boolean | undefined;
  savingsPlans?: boolean | undefined;
}

/** The OpenAPI's Machine, as far as this service knows a rented pod's (no container runs here). */
export function rentedPodMachine(pod: PodRecord): NonNullable<Pod["machine"]> {
  const gpu = pod.gpuTypeId;
  return {
    dataCenterId: pod.dataCenterId,
    gpuTypeId: gpu,
    location: locationOf(pod.dataCenterId),
    secureCloud: pod.cloudType === "SECURE",
    supportPublicIp: pod.supportPublicIp,
    costPerHr: pod.costPerHr,
    ...(gpu
      ? {
          minPodGpuCount: 1,
          gpuDisplayName: gpuDisplayName(gpu),
          currentPricePerGpu: Math.round((pod.costPerHr / Math.max(pod.gpuCount, 1)) * 1000) / 1000,
          gpuType: { id: gpu, count: pod.gpuCount, displayName: gpuDisplayName(gpu), ...gpuPrices(gpu) },
        }
      : {}),
    ...(pod.cpuFlavorId
      ? {
          cpuCount: pod.vcpuCount,
          cpuTypeId: pod.cpuFlavorId,
          cpuType: {
            id: pod.cpuFlavorId,
            displayName: cpuDisplayName(pod.cpuFlavorId),
            groupId: pod.cpuFlavorId,
          },
        }
      : {}),
  };
}

/** A serverless worker's machine: only its GPU (or CPU) type; workers run on this host, in no data center. */
export function workerMachine(endpoint: EndpointRecord | undefined): NonNullable<Pod["machine"]> {
  if (endpoint?.computeType === "CPU") {
    const flavor = endpoint.cpuFlavorIds[0];
    return flavor ? { cpuTypeId: flavor, cpuCount: endpoint.vcpuCount } : {};
  }
  const gpu = endpoint?.gpuTypeIds[0];
  return gpu ? { gpuTypeId: gpu, gpuDisplayName: gpuDisplayName(gpu) } : {};
}

export interface EndpointExtras {
  template?: TemplateRecord | undefined;
  workers?: PodView[] | undefined;
}

/** REST never shows GraphQL's gpuIds; flashBootType becomes the boolean `flashboot`. */
export function restEndpoint(e: EndpointRecord, extras: EndpointExtras = {}): Endpoint {
  return {
    id: e.id,
    name: e.name,
    userId: e.accountId,
    templateId: e.templateId,
    computeType: e.computeType,
    gpuTypeIds: e.gpuTypeIds,
    gpuCount: e.gpuCount,
    idleTimeout: e.idleTimeout,
    scalerType: e.scalerType,
    scalerValue: e.scalerValue,
    workersMin: e.workersMin,
    workersMax: e.workersMax,
    dataCenterIds: e.dataCenterIds,
    networkVolumeId: e.networkVolumeId,
    networkVolumeIds: e.networkVolumeIds,
    flashboot: e.flashBootType !== "OFF",
    executionTimeoutMs: e.executionTimeoutMs,
    env: e.env,
    allowedCudaVersions: e.allowedCudaVersions,
    minCudaVersion: e.minCudaVersion,
    instanceIds: e.instanceIds,
    ...(e.computeType === "CPU" ? { cpuFlavorIds: e.cpuFlavorIds, vcpuCount: e.vcpuCount } : {}),
    version: e.version,
    createdAt: new Date(e.createdAt).toISOString(),
    ...(extras.template ? { template: restTemplate(extras.template) } : {}),
    ...(extras.workers ? { workers: extras.workers.map((w) => restPod(w)) } : {}),
  };
}

export function restNetworkVolume(v: NetworkVolumeRecord): NetworkVolume {
  return { id: v.id, name: v.name, size: v.size, dataCenterId: v.dataCenterId };
}
