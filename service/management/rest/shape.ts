import type { Endpoint } from "../../../sdk/schemas/endpoint";
import type { NetworkVolume } from "../../../sdk/schemas/network-volume";
import type { Pod } from "../../../sdk/schemas/pod";
import type { Template } from "../../../sdk/schemas/template";
import { type PodView, podName } from "../model/pod";
import type { EndpointRecord, NetworkVolumeRecord, TemplateRecord } from "../model/records";

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
    lastStatusChange: `${worker.state} since ${iso(worker.lastStartedAt ?? worker.createdAt)}`,
    slsVersion: endpoint?.version ?? 0,
    ...(includeTemplate && template ? { template: restTemplate(template) } : {}),
  };
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
    flashboot: e.flashBootType === "FLASHBOOT",
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
