import type { z } from "zod";
import type { ComputeType, EndpointType, FlashBootType, ScalerType } from "../../../sdk/schemas/common";
import type { StorageType } from "../../../sdk/schemas/network-volume";

type Enum<T extends z.ZodType> = z.infer<T>;

/**
 * An endpoint as the service stores it: the union of what REST and GraphQL can set, in one shape.
 * Both wires read and write this record, so what one writes the other reads.
 */
export interface EndpointRecord {
  id: string;
  accountId: string;
  name: string;
  templateId: string;
  type: Enum<typeof EndpointType>;
  computeType: Enum<typeof ComputeType>;
  /** GraphQL pool list, e.g. "AMPERE_48,-NVIDIA RTX A6000"; kept in step with gpuTypeIds. */
  gpuIds: string;
  /** REST GPU type names in priority order; kept in step with gpuIds. */
  gpuTypeIds: string[];
  gpuCount: number;
  workersMin: number;
  workersMax: number;
  workersStandby: number;
  /** Seconds. */
  idleTimeout: number;
  scalerType: Enum<typeof ScalerType>;
  scalerValue: number;
  flashBootType: Enum<typeof FlashBootType>;
  /** GraphQL region restriction ("US,FR"); null = any. */
  locations: string | null;
  dataCenterIds: string[];
  networkVolumeId: string | null;
  /** Extra volumes for multi-region endpoints (REST). */
  networkVolumeIds: string[];
  executionTimeoutMs: number;
  env: Record<string, string>;
  modelName: string | null;
  hubReleaseId: string | null;
  allowedCudaVersions: string[];
  minCudaVersion: string | null;
  instanceIds: string[];
  cpuFlavorIds: string[];
  vcpuCount: number;
  /** Bumped when templateId, the template's content or env changes. */
  version: number;
  /** ms since the epoch */
  createdAt: number;
}

/**
 * The start command as GraphQL's dockerArgs last wrote it, kept verbatim (any string); dockerStartCmd
 * beside it is its argv (docker-args.ts dockerStartCmdOf). null: the command was set as an argv (REST
 * dockerStartCmd, or stored before this field existed), and GraphQL shows dockerStartCmd formatted.
 */
export type DockerArgs = string | null;

export interface TemplateRecord {
  id: string;
  accountId: string;
  name: string;
  imageName: string;
  category: "NVIDIA" | "AMD" | "CPU";
  isServerless: boolean;
  isPublic: boolean;
  containerDiskInGb: number;
  volumeInGb: number;
  volumeMountPath: string;
  dockerEntrypoint: string[];
  dockerStartCmd: string[];
  /** See DockerArgs. */
  dockerArgs: DockerArgs;
  env: Record<string, string>;
  ports: string[];
  readme: string;
  containerRegistryAuthId: string | null;
  /** startSsh, startJupyter and startScript: for pods; GraphQL shows and sets them, REST does not. */
  startSsh: boolean;
  startJupyter: boolean;
  startScript: string;
  createdAt: number;
}

export interface NetworkVolumeRecord {
  id: string;
  accountId: string;
  name: string;
  size: number;
  dataCenterId: string;
  /** Chosen at creation (GraphQL isNextGenStorage) and never changed; GraphQL shows it, REST does not. */
  storageType: StorageType;
  createdAt: number;
}

/** The password is stored for workers pulling private images; no wire ever returns it. */
export interface RegistryAuthRecord {
  id: string;
  accountId: string;
  name: string;
  username: string;
  password: string;
  createdAt: number;
}

export interface VolumeUsageRow {
  volumeId: string;
  sizeGb: number;
  fromMs: number;
  untilMs: number | null;
}

/**
 * A rented pod (GPU or CPU). It runs no container on this service: it holds its settings and its
 * lifecycle (desiredStatus), and is billed while RUNNING. TERMINATED pods are deleted.
 */
export interface PodRecord {
  id: string;
  accountId: string;
  name: string;
  computeType: "GPU" | "CPU";
  /** GPU pods: the rented GPU type; null for CPU pods. */
  gpuTypeId: string | null;
  /** 0 for CPU pods. */
  gpuCount: number;
  /** CPU pods: flavor-vcpu-memory, e.g. "cpu3c-2-4"; null for GPU pods. */
  instanceId: string | null;
  cpuFlavorId: string | null;
  vcpuCount: number;
  memoryInGb: number;
  cloudType: "SECURE" | "COMMUNITY";
  interruptible: boolean;
  dataCenterId: string;
  machineId: string;
  imageName: string;
  dockerEntrypoint: string[];
  dockerStartCmd: string[];
  /** See DockerArgs. */
  dockerArgs: DockerArgs;
  env: Record<string, string>;
  ports: string[];
  containerDiskInGb: number;
  volumeInGb: number;
  volumeMountPath: string;
  templateId: string | null;
  networkVolumeId: string | null;
  containerRegistryAuthId: string | null;
  supportPublicIp: boolean;
  startSsh: boolean;
  startJupyter: boolean;
  /** A locked pod cannot be stopped or reset. */
  locked: boolean;
  desiredStatus: "RUNNING" | "EXITED";
  /** USD per hour while running. */
  costPerHr: number;
  createdAt: number;
  lastStartedAt: number | null;
  /** What happened last, e.g. "Stopped by user". */
  lastStatusChange: string;
  lastStatusChangeAt: number;
}

/** One running period of a pod, at its price then. */
export interface PodUsageRow {
  podId: string;
  gpuTypeId: string | null;
  usdPerHour: number;
  fromMs: number;
  untilMs: number | null;
}

/** What a serverless worker is billed at and filtered by, taken when it was created. */
export interface WorkerBilling {
  endpointId: string;
  templateId: string;
  imageName: string;
  /** The endpoint's first GPU type then; null for none. */
  gpuTypeId: string | null;
  gpuCount: number;
  /** The endpoint's data centers then. */
  dataCenterIds: string[];
  computeType: "GPU" | "CPU";
  usdPerGpuHour: number;
}

/**
 * A stopped serverless worker's running time within one UTC hour (`hourMs`), kept for billing.
 * `podId` null: the time of several workers of the endpoint in that hour, merged (`billedMs` is then
 * their sum, spread over `fromMs`..`untilMs`).
 */
export interface WorkerUsageRow extends WorkerBilling {
  podId: string | null;
  hourMs: number;
  fromMs: number;
  untilMs: number;
  billedMs: number;
}

/** A secret as the service shows it: the value is stored apart and never part of this record. */
export interface SecretRecord {
  id: string;
  accountId: string;
  name: string;
  description: string | null;
  createdAt: number;
  updatedAt: number | null;
}
