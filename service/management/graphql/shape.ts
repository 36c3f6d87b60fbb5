import { formatDockerArgs } from "../../../sdk/schemas/docker-args";
import type { KeyValue } from "../../../sdk/schemas/template";
import { gpuDisplayName } from "../model/catalogue";
import type { StartCommand } from "../model/common";
import { type PodEntry, type PodView, podName, workerStatusChange } from "../model/pod";
import type { PodRecord, SecretRecord, TemplateRecord } from "../model/records";

/** Records to GraphQL objects where the SDL's shape differs from the record's. Pure functions. */

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** GraphQL env: [{key, value}] where records hold a map. */
export const envList = (env: Record<string, string>): KeyValue[] =>
  Object.entries(env).map(([key, value]) => ({ key, value }));

/**
 * GraphQL dockerArgs: the string as GraphQL wrote it; for a command set as an argv (REST, or stored
 * before the string was kept), the argv with each argument shell-quoted.
 */
const dockerArgsOf = (command: StartCommand): string =>
  command.dockerArgs ?? formatDockerArgs(command.dockerStartCmd);

/** dockerArgs is the start command as one string (dockerArgsOf); ports a comma list. */
export function gqlTemplate(t: TemplateRecord) {
  return {
    ...t,
    dockerArgs: dockerArgsOf(t),
    env: envList(t.env),
    ports: t.ports.join(","),
  };
}

/** A serverless worker as a GraphQL Pod. */
export function gqlPod(pod: PodView) {
  const { worker, endpoint, template } = pod;
  // The GPU type REST's worker machine reports (its endpoint's first); none for a CPU endpoint.
  const gpu = endpoint?.computeType === "CPU" ? undefined : endpoint?.gpuTypeIds[0];
  return {
    id: worker.id,
    name: podName(pod),
    machineId: worker.id,
    desiredStatus: worker.desiredStatus,
    endpointId: worker.endpointId,
    imageName: worker.imageName,
    dockerArgs: template ? dockerArgsOf(template) : "",
    templateId: worker.templateId,
    networkVolumeId: endpoint?.networkVolumeId ?? null,
    gpuCount: worker.gpuCount,
    vcpuCount: 0,
    memoryInGb: 0,
    costPerHr: 0,
    env: Object.entries({ ...(template?.env ?? {}), ...(endpoint?.env ?? {}) }).map(([k, v]) => `${k}=${v}`),
    ports: (template?.ports ?? []).join(","),
    podType: "BACKGROUND",
    lastStartedAt: iso(worker.lastStartedAt),
    lastStatusChange: workerStatusChange(worker),
    runtime: null,
    machine: {
      podHostId: worker.id,
      gpuTypeId: gpu ?? null,
      gpuDisplayName: gpu ? gpuDisplayName(gpu) : null,
    },
  };
}

/**
 * A rented pod as a GraphQL Pod. `runtime` is null unless RUNNING, and then lists no ports: no
 * container runs on this service, so nothing is reachable.
 */
export function gqlRentedPod(pod: PodRecord, now: number) {
  const running = pod.desiredStatus === "RUNNING";
  const uptimeSeconds =
    running && pod.lastStartedAt !== null ? Math.floor((now - pod.lastStartedAt) / 1000) : 0;
  return {
    id: pod.id,
    name: pod.name,
    machineId: pod.machineId,
    imageName: pod.imageName,
    dockerArgs: dockerArgsOf(pod),
    dockerId: null,
    gpuCount: pod.gpuCount,
    vcpuCount: pod.vcpuCount,
    memoryInGb: pod.memoryInGb,
    containerDiskInGb: pod.containerDiskInGb,
    volumeInGb: pod.volumeInGb,
    volumeMountPath: pod.volumeMountPath,
    desiredStatus: pod.desiredStatus,
    costPerHr: pod.costPerHr,
    env: Object.entries(pod.env).map(([k, v]) => `${k}=${v}`),
    ports: pod.ports.join(","),
    port: null,
    templateId: pod.templateId,
    networkVolumeId: pod.networkVolumeId,
    containerRegistryAuthId: pod.containerRegistryAuthId,
    podType: pod.interruptible ? "INTERRUPTABLE" : "RESERVED",
    endpointId: null,
    locked: pod.locked,
    dataCenterId: pod.dataCenterId,
    lastStartedAt: iso(pod.lastStartedAt),
    lastStatusChange: pod.lastStatusChange,
    uptimeSeconds,
    runtime: running ? { uptimeInSeconds: uptimeSeconds, ports: [] } : null,
    machine: {
      podHostId: `${pod.id}-${pod.machineId.slice(0, 8)}`,
      gpuDisplayName: pod.gpuTypeId ? gpuDisplayName(pod.gpuTypeId) : null,
      gpuTypeId: pod.gpuTypeId,
      dataCenterId: pod.dataCenterId,
      secureCloud: pod.cloudType === "SECURE",
    },
  };
}

export function gqlPodEntry(entry: PodEntry, now: number) {
  return entry.kind === "rented" ? gqlRentedPod(entry.pod, now) : gqlPod(entry.view);
}

/** A secret on GraphQL: never its value (the record has none). */
export function gqlSecret(secret: SecretRecord) {
  return {
    id: secret.id,
    name: secret.name,
    description: secret.description,
    createdAt: new Date(secret.createdAt).toISOString(),
    updatedAt: iso(secret.updatedAt),
  };
}
