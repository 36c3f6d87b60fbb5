import { NEXT_GEN_STORAGE_TYPE, STANDARD_STORAGE_TYPE } from "../../../sdk/schemas/defaults";
import type { Clock } from "../../clock";
import { invalid, resourceNotFound, ServiceError } from "../../errors";
import type { Ids } from "../../ids";
import type { ManagementStore } from "../store/store";
import { WORKER_USAGE_RETENTION_MS } from "./billing";
import type { NetworkVolumeRecord } from "./records";

export type { NetworkVolumeRecord } from "./records";

export interface NetworkVolumeCreate {
  name: string;
  size: number;
  dataCenterId: string;
  /** GraphQL only: the storage, for good (no update changes it). Default: standard storage. */
  isNextGenStorage?: boolean | null | undefined;
}

/** Absent fields are unchanged; dataCenterId is fixed at creation. */
export interface NetworkVolumeChanges {
  name?: string | undefined;
  size?: number | undefined;
}

/** The rules of network volumes. Every size a volume had is kept (storage billing reads it). */
export class NetworkVolumeService {
  readonly #store: ManagementStore;
  readonly #clock: Clock;
  readonly #ids: Ids;

  constructor(deps: { store: ManagementStore; clock: Clock; ids: Ids }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#ids = deps.ids;
  }

  get(accountId: string, volumeId: string): NetworkVolumeRecord {
    const record = this.#store.volumes.get(accountId, volumeId);
    if (!record) throw resourceNotFound("network volume", volumeId);
    return record;
  }

  /** The volume, or undefined when the account has none of that id. */
  find(accountId: string, volumeId: string): NetworkVolumeRecord | undefined {
    return this.#store.volumes.get(accountId, volumeId);
  }

  list(accountId: string): NetworkVolumeRecord[] {
    return this.#store.volumes.list(accountId);
  }

  create(accountId: string, input: NetworkVolumeCreate): NetworkVolumeRecord {
    return this.#store.transaction(() => {
      const now = this.#clock.now();
      const { isNextGenStorage, ...fields } = input;
      const record: NetworkVolumeRecord = {
        ...fields,
        storageType: isNextGenStorage ? NEXT_GEN_STORAGE_TYPE : STANDARD_STORAGE_TYPE,
        id: this.#ids.networkVolume(),
        accountId,
        createdAt: now,
      };
      this.#store.putVolume(record, undefined, now);
      return record;
    });
  }

  /** A volume can only grow: data on it would not fit a smaller one. The same size is no change. */
  update(accountId: string, volumeId: string, changes: NetworkVolumeChanges): NetworkVolumeRecord {
    return this.#store.transaction(() => {
      const existing = this.get(accountId, volumeId);
      if (changes.size !== undefined && changes.size < existing.size) {
        throw invalid(
          "size",
          `a network volume can only grow (${existing.size} GB now, ${changes.size} GB asked)`,
        );
      }
      const record: NetworkVolumeRecord = {
        ...existing,
        name: changes.name ?? existing.name,
        size: changes.size ?? existing.size,
      };
      const now = this.#clock.now();
      this.#store.putVolume(record, existing.size, now);
      this.#store.pruneUsage(now - WORKER_USAGE_RETENTION_MS);
      return record;
    });
  }

  /** Refused while an endpoint or a pod has the volume attached. */
  delete(accountId: string, volumeId: string): void {
    this.#store.transaction(() => {
      this.get(accountId, volumeId);
      const users = this.#store.endpointIdsUsingVolume(accountId, volumeId);
      if (users.length > 0) {
        throw new ServiceError(
          "IN_USE",
          `network volume ${volumeId} is attached to endpoint(s) ${users.join(", ")}; detach it first`,
          { field: "networkVolumeId" },
        );
      }
      const pods = this.#store.podIdsUsing(accountId, "network_volume_id", volumeId);
      if (pods.length > 0) {
        throw new ServiceError(
          "IN_USE",
          `network volume ${volumeId} is attached to pod(s) ${pods.join(", ")}; terminate them first`,
          { field: "networkVolumeId" },
        );
      }
      const now = this.#clock.now();
      this.#store.deleteVolume(accountId, volumeId, now);
      this.#store.pruneUsage(now - WORKER_USAGE_RETENTION_MS);
    });
  }
}
