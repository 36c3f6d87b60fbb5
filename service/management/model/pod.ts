import { sameName } from "../../../sdk/schemas/common";
import { DATA_CENTER_IDS, GPU_TYPE_IDS, TEMPLATE_DEFAULTS, uniqueItems } from "../../../sdk/schemas/defaults";
import type { Clock } from "../../clock";
import { invalid, resourceNotFound, ServiceError, shownId } from "../../errors";
import type { Ids } from "../../ids";
import type { WorkerPod, WorkerRegistry } from "../../planes";
import type { ManagementStore } from "../store/store";
import { WORKER_USAGE_RETENTION_MS } from "./billing";
import {
  type CloudChoice,
  type CpuInstance,
  countryOf,
  cpuInstance,
  DEFAULT_CPU_INSTANCE,
  type GpuOffer,
  gpuOffer,
  isDataCenterId,
  isGpuTypeId,
  parseCpuInstance,
  publicTemplate,
} from "./catalogue";
import { definedOnly, sameEnv, startCommand } from "./common";
import type { EndpointRecord, PodRecord, TemplateRecord } from "./records";

export type { PodRecord } from "./records";

/** A serverless worker with what it belongs to. */
export interface PodView {
  worker: WorkerPod;
  endpoint: EndpointRecord | undefined;
  template: TemplateRecord | undefined;
}

/** One of the account's pods: a rented pod, or a serverless worker (the job plane's). */
export type PodEntry = { kind: "rented"; pod: PodRecord } | { kind: "worker"; view: PodView };

export interface PodFilter {
  id?: string | undefined;
  endpointId?: string | undefined;
  desiredStatus?: WorkerPod["desiredStatus"] | undefined;
  templateId?: string | undefined;
  imageName?: string | undefined;
  name?: string | undefined;
  computeType?: "GPU" | "CPU" | undefined;
  networkVolumeId?: string | undefined;
  /** Any of these GPU types; a worker's is its endpoint's first (the one it reports). */
  gpuTypeIds?: readonly string[] | undefined;
  /** Any of these data centers; a worker is in those of its endpoint, as billing counts it. */
  dataCenterIds?: readonly string[] | undefined;
  /** Any of these CPU flavors; a worker's are its CPU endpoint's. */
  cpuFlavorIds?: readonly string[] | undefined;
  /** As the real service, serverless workers are listed only when asked for. */
  includeWorkers?: boolean | undefined;
}

/** What a pod is created from (REST PodCreateInput and the GraphQL deploy inputs, read alike). */
export interface PodCreate {
  name?: string | undefined;
  computeType: "GPU" | "CPU";
  /** GPU pods: the types to rent, in order; the first on offer is taken. */
  gpuTypeIds?: readonly string[] | undefined;
  gpuCount?: number | undefined;
  cloudType?: CloudChoice | undefined;
  interruptible?: boolean | undefined;
  minVcpuCount?: number | undefined;
  minMemoryInGb?: number | undefined;
  /** CPU pods: an exact instance ("cpu3c-2-4"), or flavors and a vCPU count. */
  instanceId?: string | undefined;
  cpuFlavorIds?: readonly string[] | undefined;
  vcpuCount?: number | undefined;
  /** Where the pod may be placed (the first that fits); a network volume decides it. */
  dataCenterIds?: readonly string[] | undefined;
  countryCodes?: readonly string[] | undefined;
  imageName?: string | undefined;
  dockerEntrypoint?: string[] | undefined;
  dockerStartCmd?: string[] | undefined;
  /** GraphQL's spelling of the start command; when given, dockerStartCmd follows it (common.ts startCommand). */
  dockerArgs?: string | undefined;
  env?: Record<string, string> | undefined;
  ports?: string[] | undefined;
  containerDiskInGb?: number | undefined;
  volumeInGb?: number | undefined;
  volumeMountPath?: string | undefined;
  templateId?: string | undefined;
  networkVolumeId?: string | undefined;
  containerRegistryAuthId?: string | undefined;
  supportPublicIp?: boolean | undefined;
  startSsh?: boolean | undefined;
  startJupyter?: boolean | undefined;
  locked?: boolean | undefined;
  /**
   * Whose field names errors use: REST's (gpuTypeIds, dataCenterIds, countryCodes) or GraphQL's
   * deploy inputs' (gpuTypeId, dataCenterId, countryCode; the default), so an error names a field
   * the caller sent.
   */
  wire?: "rest" | "graphql" | undefined;
}

const PLACEMENT_FIELDS = {
  rest: { gpuType: "gpuTypeIds", dataCenter: "dataCenterIds", country: "countryCodes" },
  graphql: { gpuType: "gpuTypeId", dataCenter: "dataCenterId", country: "countryCode" },
} as const;

/** The countries that have data centers, for an error naming a country without one. */
const COUNTRIES = [...new Set(DATA_CENTER_IDS.map((id) => countryOf(id)))].sort();

/** A pod update: absent fields are unchanged. */
export interface PodChanges {
  name?: string | undefined;
  imageName?: string | undefined;
  dockerEntrypoint?: string[] | undefined;
  dockerStartCmd?: string[] | undefined;
  /** GraphQL's spelling of the start command; when given, dockerStartCmd follows it (common.ts startCommand). */
  dockerArgs?: string | undefined;
  env?: Record<string, string> | undefined;
  ports?: string[] | undefined;
  containerDiskInGb?: number | undefined;
  volumeInGb?: number | undefined;
  volumeMountPath?: string | undefined;
  /** null detaches the credentials. */
  containerRegistryAuthId?: string | null | undefined;
  locked?: boolean | undefined;
}

const DEFAULT_POD_NAME = "my pod";

/**
 * A worker's last lifecycle event; a worker that could not start says why, a stopped one when it
 * stopped (its state is the last it had while running: "idle since" would contradict EXITED).
 */
export function workerStatusChange(worker: WorkerPod): string {
  if (worker.failure !== undefined) return `failed to start: ${worker.failure}`;
  if (worker.desiredStatus !== "RUNNING") {
    const stopped = new Date(worker.stoppedAt ?? worker.lastStartedAt ?? worker.createdAt).toISOString();
    return `${worker.desiredStatus === "EXITED" ? "exited" : "terminated"} since ${stopped}`;
  }
  return `${worker.state} since ${new Date(worker.lastStartedAt ?? worker.createdAt).toISOString()}`;
}

export function podName(pod: PodView): string {
  return pod.endpoint ? `${pod.endpoint.name}-${pod.worker.id}` : pod.worker.id;
}

function workerMatches(pod: PodView, filter: PodFilter): boolean {
  const { worker, endpoint } = pod;
  if (filter.id !== undefined && worker.id !== filter.id) return false;
  if (filter.endpointId !== undefined && worker.endpointId !== filter.endpointId) return false;
  if (filter.desiredStatus !== undefined && worker.desiredStatus !== filter.desiredStatus) return false;
  if (filter.templateId !== undefined && worker.templateId !== filter.templateId) return false;
  if (filter.imageName !== undefined && worker.imageName !== filter.imageName) return false;
  if (filter.name !== undefined && !sameName(podName(pod), filter.name)) return false;
  if (filter.computeType !== undefined && endpoint?.computeType !== filter.computeType) return false;
  if (filter.networkVolumeId !== undefined && endpoint?.networkVolumeId !== filter.networkVolumeId)
    return false;
  const gpuTypeId = endpoint?.computeType === "GPU" ? endpoint.gpuTypeIds[0] : undefined;
  if (!anyOf(filter.gpuTypeIds, gpuTypeId ? [gpuTypeId] : [])) return false;
  if (!anyOf(filter.dataCenterIds, endpoint?.dataCenterIds ?? [])) return false;
  const cpuFlavorIds = endpoint?.computeType === "CPU" ? endpoint.cpuFlavorIds : [];
  return anyOf(filter.cpuFlavorIds, cpuFlavorIds);
}

/** A list filter: absent (or empty) lets everything through; else one of `values` must be in it. */
function anyOf(wanted: readonly string[] | undefined, values: readonly (string | null)[]): boolean {
  return !wanted?.length || values.some((value) => value !== null && wanted.includes(value));
}

function rentedMatches(pod: PodRecord, filter: PodFilter): boolean {
  if (filter.endpointId !== undefined) return false;
  if (filter.id !== undefined && pod.id !== filter.id) return false;
  if (filter.desiredStatus !== undefined && pod.desiredStatus !== filter.desiredStatus) return false;
  if (filter.templateId !== undefined && pod.templateId !== filter.templateId) return false;
  if (filter.imageName !== undefined && pod.imageName !== filter.imageName) return false;
  // Either spelling of a name stored before names were trimmed and composed.
  if (filter.name !== undefined && !sameName(pod.name, filter.name)) return false;
  if (filter.computeType !== undefined && pod.computeType !== filter.computeType) return false;
  if (filter.networkVolumeId !== undefined && pod.networkVolumeId !== filter.networkVolumeId) return false;
  return (
    anyOf(filter.gpuTypeIds, [pod.gpuTypeId]) &&
    anyOf(filter.dataCenterIds, [pod.dataCenterId]) &&
    anyOf(filter.cpuFlavorIds, [pod.cpuFlavorId])
  );
}

/** Runtime fields: changing any of them resets the pod (its container would be recreated). */
const RUNTIME_FIELDS = [
  "imageName",
  "dockerEntrypoint",
  "dockerStartCmd",
  "env",
  "ports",
  "containerDiskInGb",
  "volumeMountPath",
  "containerRegistryAuthId",
] as const;

function runtimeChanged(pod: PodRecord, next: PodRecord): boolean {
  return RUNTIME_FIELDS.some((field) => {
    const a = pod[field];
    const b = next[field];
    if (field === "env") return !sameEnv(pod.env, next.env);
    return Array.isArray(a) && Array.isArray(b) ? a.join("\u0000") !== b.join("\u0000") : a !== b;
  });
}

const roundUsd = (usd: number) => Math.round(usd * 1000) / 1000;

/**
 * The account's pods. Rented pods (GPU or CPU) are stored here and follow the real service's
 * lifecycle (desiredStatus RUNNING -> EXITED -> RUNNING ..., terminate deletes), billed per running
 * period; they run no container. Serverless workers are the job plane's and are read through the
 * WorkerRegistry.
 */
export class PodService {
  readonly #store: ManagementStore;
  readonly #clock: Clock;
  readonly #ids: Ids;
  readonly #workers: WorkerRegistry;

  constructor(deps: { store: ManagementStore; clock: Clock; ids: Ids; workers: WorkerRegistry }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#ids = deps.ids;
    this.#workers = deps.workers;
  }

  /** The service clock's now, ms (uptime in replies). */
  now(): number {
    return this.#clock.now();
  }

  /** Serverless workers, as pods with their endpoint and template. */
  workers(accountId: string, filter: PodFilter = {}): PodView[] {
    return this.#workers
      .list(accountId)
      .map((worker) => this.#view(accountId, worker))
      .filter((pod) => workerMatches(pod, filter));
  }

  /** Rented pods, then (with includeWorkers) serverless workers. */
  list(accountId: string, filter: PodFilter = {}): PodEntry[] {
    const rented: PodEntry[] = this.#store.pods
      .list(accountId)
      .filter((pod) => rentedMatches(pod, filter))
      .map((pod) => ({ kind: "rented", pod }));
    if (!filter.includeWorkers) return rented;
    return [
      ...rented,
      ...this.workers(accountId, filter).map((view): PodEntry => ({ kind: "worker", view })),
    ];
  }

  /** A rented pod or a serverless worker. */
  get(accountId: string, podId: string): PodEntry {
    const pod = this.#store.pods.get(accountId, podId);
    if (pod) return { kind: "rented", pod };
    const worker = this.#workers.list(accountId).find((w) => w.id === podId);
    if (!worker) throw resourceNotFound("pod", podId);
    return { kind: "worker", view: this.#view(accountId, worker) };
  }

  /** A rented pod; workers are managed through their endpoint and cannot be changed here. */
  rented(accountId: string, podId: string): PodRecord {
    const pod = this.#store.pods.get(accountId, podId);
    if (pod) return pod;
    if (this.#workers.list(accountId).some((w) => w.id === podId)) {
      throw new ServiceError(
        "UNSUPPORTED",
        `pod ${podId} is a serverless worker; change its endpoint's workers instead`,
      );
    }
    throw resourceNotFound("pod", podId);
  }

  create(accountId: string, input: PodCreate): PodRecord {
    return this.#store.transaction(() => {
      const now = this.#clock.now();
      const template = this.#template(accountId, input.templateId);
      const imageName = input.imageName || template?.imageName;
      if (!imageName) throw invalid("imageName", "is required (or a templateId whose image the pod takes)");
      const registryAuthId = input.containerRegistryAuthId ?? template?.containerRegistryAuthId ?? null;
      this.#checkRegistryAuth(accountId, registryAuthId);
      const dataCenterId = this.#placement(accountId, input);
      const compute = input.computeType === "CPU" ? this.#cpu(input) : this.#gpu(input);
      // The default disk shrinks to what a small CPU instance allows; an asked one must fit.
      const containerDiskInGb =
        input.containerDiskInGb ??
        template?.containerDiskInGb ??
        Math.min(TEMPLATE_DEFAULTS.containerDiskInGb, compute.diskLimitGb ?? Number.POSITIVE_INFINITY);
      if (compute.diskLimitGb !== undefined && containerDiskInGb > compute.diskLimitGb) {
        throw invalid(
          "containerDiskInGb",
          `a ${compute.instanceId} instance allows at most ${compute.diskLimitGb} GB of container disk`,
        );
      }
      const pod: PodRecord = {
        id: this.#ids.pod(),
        accountId,
        name: input.name || DEFAULT_POD_NAME,
        computeType: input.computeType,
        gpuTypeId: compute.gpuTypeId,
        gpuCount: compute.gpuCount,
        instanceId: compute.instanceId,
        cpuFlavorId: compute.cpuFlavorId,
        vcpuCount: compute.vcpuCount,
        memoryInGb: compute.memoryInGb,
        cloudType: compute.cloudType,
        interruptible: input.interruptible ?? false,
        dataCenterId,
        machineId: this.#ids.pod().slice(0, 12),
        imageName,
        dockerEntrypoint: input.dockerEntrypoint ?? [],
        // The template's start command unless one is given (either spelling).
        ...startCommand(template ?? { dockerStartCmd: [], dockerArgs: null }, input),
        env: { ...(template?.env ?? {}), ...(input.env ?? {}) },
        // A port given twice is one port (as a template's).
        ports: uniqueItems(input.ports ?? template?.ports ?? TEMPLATE_DEFAULTS.ports),
        containerDiskInGb,
        volumeInGb: input.volumeInGb ?? template?.volumeInGb ?? TEMPLATE_DEFAULTS.volumeInGb,
        volumeMountPath:
          input.volumeMountPath || template?.volumeMountPath || TEMPLATE_DEFAULTS.volumeMountPath,
        templateId: input.templateId ?? null,
        networkVolumeId: input.networkVolumeId ?? null,
        containerRegistryAuthId: registryAuthId ?? null,
        supportPublicIp: input.supportPublicIp ?? false,
        startSsh: input.startSsh ?? false,
        startJupyter: input.startJupyter ?? false,
        locked: input.locked ?? false,
        desiredStatus: "RUNNING",
        costPerHr: compute.costPerHr,
        createdAt: now,
        lastStartedAt: now,
        lastStatusChange: `Rented by User: ${new Date(now).toISOString()}`,
        lastStatusChangeAt: now,
      };
      this.#store.putPod(pod);
      this.#openUsage(pod, now);
      return pod;
    });
  }

  /**
   * REST PATCH and GraphQL podEditJob. volumeInGb can only grow. A change of the runtime (image,
   * command, env, ports, container disk, mount path, registry credentials) resets the pod: refused
   * while it is locked; a running pod starts again at once.
   */
  update(accountId: string, podId: string, changes: PodChanges): PodRecord {
    return this.#store.transaction(() => {
      const pod = this.rented(accountId, podId);
      const given = definedOnly(changes);
      if (given.ports) given.ports = uniqueItems(given.ports);
      if (given.volumeInGb !== undefined && given.volumeInGb < pod.volumeInGb) {
        throw invalid(
          "volumeInGb",
          `a pod volume can only grow (${pod.volumeInGb} GB now, ${given.volumeInGb} GB asked)`,
        );
      }
      if (given.containerRegistryAuthId !== undefined) {
        this.#checkRegistryAuth(accountId, given.containerRegistryAuthId);
      }
      const next: PodRecord = { ...pod, ...given, ...startCommand(pod, given) };
      if (runtimeChanged(pod, next)) {
        if (next.locked) refuseIfLocked(pod, "changing what it runs");
        const now = this.#clock.now();
        next.lastStatusChange = `Reset by update: ${new Date(now).toISOString()}`;
        next.lastStatusChangeAt = now;
        if (next.desiredStatus === "RUNNING") next.lastStartedAt = now;
      }
      this.#store.putPod(next);
      return next;
    });
  }

  /** RUNNING -> EXITED (no charge while stopped); a stopped pod stays so. Refused while locked. */
  stop(accountId: string, podId: string): PodRecord {
    return this.#store.transaction(() => {
      const pod = this.rented(accountId, podId);
      refuseIfLocked(pod, "stopping it");
      if (pod.desiredStatus === "EXITED") return pod;
      const now = this.#clock.now();
      const next: PodRecord = { ...pod, desiredStatus: "EXITED", ...this.#status("Stopped by user", now) };
      this.#store.putPod(next);
      this.#store.closePodUsage(accountId, podId, now);
      this.#store.pruneUsage(now - WORKER_USAGE_RETENTION_MS);
      return next;
    });
  }

  /**
   * EXITED -> RUNNING (REST start, GraphQL podResume). `gpuCount` (GPU pods) rents that many GPUs of
   * the pod's type at its current price; a running pod is left as it is.
   */
  start(accountId: string, podId: string, gpuCount?: number): PodRecord {
    return this.#store.transaction(() => {
      const pod = this.rented(accountId, podId);
      const count = pod.computeType === "GPU" && gpuCount !== undefined ? gpuCount : pod.gpuCount;
      if (pod.desiredStatus === "RUNNING") {
        if (count !== pod.gpuCount) {
          throw new ServiceError("PRECONDITION", `pod ${podId} is running; stop it to change its gpuCount`, {
            field: "gpuCount",
          });
        }
        return pod;
      }
      let costPerHr = pod.costPerHr;
      if (pod.computeType === "GPU" && pod.gpuTypeId && isGpuTypeId(pod.gpuTypeId)) {
        if (count < 1) throw invalid("gpuCount", "a GPU pod needs at least 1 GPU");
        const offer = gpuOffer(pod.gpuTypeId, count, pod.cloudType, pod.interruptible);
        if (!offer) {
          throw invalid(
            "gpuCount",
            `${pod.gpuTypeId} is not offered with ${count} GPUs in ${pod.cloudType} cloud`,
          );
        }
        costPerHr = roundUsd(offer.usdPerGpuHour * count);
      }
      const now = this.#clock.now();
      const next: PodRecord = {
        ...pod,
        gpuCount: count,
        costPerHr,
        desiredStatus: "RUNNING",
        lastStartedAt: now,
        ...this.#status("Started by user", now),
      };
      this.#store.putPod(next);
      this.#openUsage(next, now);
      return next;
    });
  }

  /** Restarts a running pod (a new lastStartedAt); refused unless RUNNING. */
  restart(accountId: string, podId: string): PodRecord {
    return this.#store.transaction(() => {
      const pod = this.rented(accountId, podId);
      if (pod.desiredStatus !== "RUNNING") {
        throw new ServiceError(
          "PRECONDITION",
          `pod ${podId} is ${pod.desiredStatus}; only a running pod restarts`,
          {
            field: "desiredStatus",
          },
        );
      }
      const now = this.#clock.now();
      const next: PodRecord = { ...pod, lastStartedAt: now, ...this.#status("Restarted by user", now) };
      this.#store.putPod(next);
      return next;
    });
  }

  /** Resets the container disk and (re)starts the pod; refused while locked. */
  reset(accountId: string, podId: string): PodRecord {
    return this.#store.transaction(() => {
      const pod = this.rented(accountId, podId);
      refuseIfLocked(pod, "resetting it");
      const now = this.#clock.now();
      const next: PodRecord = {
        ...pod,
        desiredStatus: "RUNNING",
        lastStartedAt: now,
        ...this.#status("Reset by user", now),
      };
      this.#store.putPod(next);
      if (pod.desiredStatus !== "RUNNING") this.#openUsage(next, now);
      return next;
    });
  }

  /** Terminates the pod: it is gone (404 after); its billed periods stay. */
  terminate(accountId: string, podId: string): void {
    this.#store.transaction(() => {
      this.rented(accountId, podId);
      const now = this.#clock.now();
      this.#store.closePodUsage(accountId, podId, now);
      this.#store.pruneUsage(now - WORKER_USAGE_RETENTION_MS);
      this.#store.pods.delete(accountId, podId);
    });
  }

  #status(message: string, now: number) {
    return { lastStatusChange: `${message}: ${new Date(now).toISOString()}`, lastStatusChangeAt: now };
  }

  #openUsage(pod: PodRecord, now: number): void {
    this.#store.openPodUsage(pod.accountId, pod.id, pod.gpuTypeId ?? pod.cpuFlavorId, pod.costPerHr, now);
  }

  /** The account's template, or a public one (runpod-ubuntu); refused when neither exists. */
  #template(accountId: string, templateId: string | undefined) {
    if (templateId === undefined) return undefined;
    const template = this.#store.templates.get(accountId, templateId) ?? publicTemplate(templateId);
    if (!template) throw invalid("templateId", `template ${shownId(templateId)} not found`);
    return template;
  }

  #checkRegistryAuth(accountId: string, authId: string | null | undefined): void {
    if (authId && !this.#store.registryAuths.get(accountId, authId)) {
      throw invalid("containerRegistryAuthId", `container registry auth ${shownId(authId)} not found`);
    }
  }

  /** The data center: the network volume's (which must be among those allowed), else the first allowed. */
  #placement(accountId: string, input: PodCreate): string {
    const fields = PLACEMENT_FIELDS[input.wire ?? "graphql"];
    for (const id of input.dataCenterIds ?? []) {
      if (!isDataCenterId(id)) {
        throw invalid(
          fields.dataCenter,
          `unknown data center "${id}"; expected one of ${DATA_CENTER_IDS.join(", ")}`,
        );
      }
    }
    const countries = input.countryCodes?.length ? input.countryCodes : undefined;
    const allowed = (input.dataCenterIds?.length ? input.dataCenterIds : DATA_CENTER_IDS).filter(
      (id) => !countries || countries.includes(countryOf(id)),
    );
    if (input.networkVolumeId) {
      const volume = this.#store.volumes.get(accountId, input.networkVolumeId);
      if (!volume)
        throw invalid("networkVolumeId", `network volume ${shownId(input.networkVolumeId)} not found`);
      if (!allowed.includes(volume.dataCenterId)) {
        throw invalid(
          "networkVolumeId",
          `network volume ${volume.id} is in ${volume.dataCenterId}, which is not among the data centers asked (${allowed.join(", ") || "none"})`,
        );
      }
      return volume.dataCenterId;
    }
    const first = allowed[0];
    if (!first) {
      const asked = input.dataCenterIds?.length ? ` among ${input.dataCenterIds.join(", ")}` : "";
      throw invalid(
        fields.country,
        `no data center in ${countries?.join(", ")}${asked}; data centers are in ${COUNTRIES.join(", ")}`,
      );
    }
    return first;
  }

  #gpu(input: PodCreate) {
    const field = PLACEMENT_FIELDS[input.wire ?? "graphql"].gpuType;
    const types = input.gpuTypeIds ?? [];
    if (types.length === 0) throw invalid(field, "a GPU pod needs a GPU type");
    for (const id of types) {
      if (!isGpuTypeId(id))
        throw invalid(field, `unknown GPU type "${id}"; expected one of ${GPU_TYPE_IDS.join(", ")}`);
    }
    const gpuCount = input.gpuCount ?? 1;
    const cloud = input.cloudType ?? "SECURE";
    let offer: GpuOffer | undefined;
    for (const id of types) {
      offer = isGpuTypeId(id) ? gpuOffer(id, gpuCount, cloud, input.interruptible) : undefined;
      if (offer) break;
    }
    if (!offer) {
      throw invalid(field, `none of ${types.join(", ")} is offered with ${gpuCount} GPUs in ${cloud} cloud`);
    }
    return {
      gpuTypeId: offer.gpuTypeId as string | null,
      gpuCount,
      instanceId: null as string | null,
      cpuFlavorId: null as string | null,
      vcpuCount: Math.max(input.minVcpuCount ?? 0, 2 * gpuCount),
      memoryInGb: Math.max(input.minMemoryInGb ?? 0, 8 * gpuCount),
      cloudType: offer.cloudType,
      costPerHr: roundUsd(offer.usdPerGpuHour * gpuCount),
      diskLimitGb: undefined as number | undefined,
    };
  }

  #cpu(input: PodCreate) {
    let instance: CpuInstance;
    if (input.instanceId) instance = parseCpuInstance(input.instanceId);
    else if (input.cpuFlavorIds?.length || input.vcpuCount !== undefined)
      instance = cpuInstance(input.cpuFlavorIds?.[0] ?? "cpu3c", input.vcpuCount ?? 2);
    else instance = parseCpuInstance(DEFAULT_CPU_INSTANCE);
    return {
      gpuTypeId: null,
      gpuCount: 0,
      instanceId: instance.instanceId as string | null,
      cpuFlavorId: instance.cpuFlavorId as string | null,
      vcpuCount: instance.vcpuCount,
      memoryInGb: instance.memoryInGb,
      cloudType: "SECURE" as const,
      costPerHr: instance.usdPerHour,
      diskLimitGb: instance.diskLimitGb as number | undefined,
    };
  }

  #view(accountId: string, worker: WorkerPod): PodView {
    return {
      worker,
      endpoint: this.#store.endpoints.get(accountId, worker.endpointId),
      template: this.#store.templates.get(accountId, worker.templateId),
    };
  }
}

/** A locked pod refuses what would interrupt it: PRECONDITION naming `locked` and the fix. */
function refuseIfLocked(pod: PodRecord, action: string): void {
  if (!pod.locked) return;
  throw new ServiceError("PRECONDITION", `pod ${pod.id} is locked; unlock it before ${action}`, {
    field: "locked",
  });
}
