import { notFound, ServiceError } from "../../errors";
import type { WorkerPod, WorkerRegistry } from "../../planes";
import type { ManagementStore } from "../store/store";
import type { EndpointRecord, TemplateRecord } from "./records";

/** A pod with what it belongs to. On this service every pod is a serverless worker of an endpoint. */
export interface PodView {
  worker: WorkerPod;
  endpoint: EndpointRecord | undefined;
  template: TemplateRecord | undefined;
}

export interface PodFilter {
  id?: string | undefined;
  endpointId?: string | undefined;
  desiredStatus?: WorkerPod["desiredStatus"] | undefined;
  templateId?: string | undefined;
  imageName?: string | undefined;
  name?: string | undefined;
  computeType?: "GPU" | "CPU" | undefined;
  networkVolumeId?: string | undefined;
  /** As the real service, serverless workers are listed only when asked for. */
  includeWorkers?: boolean | undefined;
}

export function podName(pod: PodView): string {
  return pod.endpoint ? `${pod.endpoint.name}-${pod.worker.id}` : pod.worker.id;
}

function matches(pod: PodView, filter: PodFilter): boolean {
  const { worker, endpoint } = pod;
  if (filter.id !== undefined && worker.id !== filter.id) return false;
  if (filter.endpointId !== undefined && worker.endpointId !== filter.endpointId) return false;
  if (filter.desiredStatus !== undefined && worker.desiredStatus !== filter.desiredStatus) return false;
  if (filter.templateId !== undefined && worker.templateId !== filter.templateId) return false;
  if (filter.imageName !== undefined && worker.imageName !== filter.imageName) return false;
  if (filter.name !== undefined && podName(pod) !== filter.name) return false;
  if (filter.computeType !== undefined && endpoint?.computeType !== filter.computeType) return false;
  if (filter.networkVolumeId !== undefined && endpoint?.networkVolumeId !== filter.networkVolumeId)
    return false;
  return true;
}

/** The account's pods: the job plane's workers, with their endpoint and template. */
export class PodService {
  readonly #store: ManagementStore;
  readonly #workers: WorkerRegistry;

  constructor(deps: { store: ManagementStore; workers: WorkerRegistry }) {
    this.#store = deps.store;
    this.#workers = deps.workers;
  }

  list(accountId: string, filter: PodFilter = {}): PodView[] {
    if (!filter.includeWorkers) return [];
    return this.#workers
      .list(accountId)
      .map((worker) => this.#view(accountId, worker))
      .filter((pod) => matches(pod, filter));
  }

  get(accountId: string, podId: string): PodView {
    const worker = this.#workers.list(accountId).find((w) => w.id === podId);
    if (!worker) throw notFound("pod", podId);
    return this.#view(accountId, worker);
  }

  /** Pods other than serverless workers do not exist here: say so instead of pretending. */
  notImplemented(operation: string): never {
    throw new ServiceError(
      "NOT_IMPLEMENTED",
      `${operation} is not implemented by this local service (only serverless workers exist as pods)`,
    );
  }

  #view(accountId: string, worker: WorkerPod): PodView {
    return {
      worker,
      endpoint: this.#store.endpoints.get(accountId, worker.endpointId),
      template: this.#store.templates.get(accountId, worker.templateId),
    };
  }
}
