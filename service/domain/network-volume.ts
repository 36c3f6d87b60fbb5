import type { ServiceDeps } from "../deps";
import { inTransaction, storeOf } from "./common";
import { invalid, notFound, ServiceError } from "./errors";
import type { NetworkVolumeRecord } from "./records";

export type { NetworkVolumeRecord } from "./records";

export interface NetworkVolumeCreate {
  name: string;
  size: number;
  dataCenterId: string;
}

/** Absent fields are unchanged; dataCenterId is fixed at creation. */
export interface NetworkVolumeChanges {
  name?: string | undefined;
  size?: number | undefined;
}

export function getNetworkVolume(
  deps: ServiceDeps,
  accountId: string,
  volumeId: string,
): NetworkVolumeRecord {
  const record = storeOf(deps).volumes.get(accountId, volumeId);
  if (!record) throw notFound("network volume", volumeId);
  return record;
}

export function listNetworkVolumes(deps: ServiceDeps, accountId: string): NetworkVolumeRecord[] {
  return storeOf(deps).volumes.list(accountId);
}

export function createNetworkVolume(
  deps: ServiceDeps,
  accountId: string,
  input: NetworkVolumeCreate,
): NetworkVolumeRecord {
  return inTransaction(deps, (s) => {
    const now = deps.clock.now();
    const record: NetworkVolumeRecord = { ...input, id: deps.ids.networkVolume(), accountId, createdAt: now };
    s.putVolume(record, undefined, now);
    return record;
  });
}

/** A volume can only grow: data on it would not fit a smaller one. The same size is no change. */
export function updateNetworkVolume(
  deps: ServiceDeps,
  accountId: string,
  volumeId: string,
  changes: NetworkVolumeChanges,
): NetworkVolumeRecord {
  return inTransaction(deps, (s) => {
    const existing = getNetworkVolume(deps, accountId, volumeId);
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
    s.putVolume(record, existing.size, deps.clock.now());
    return record;
  });
}

/** Refused while an endpoint has the volume attached. */
export function deleteNetworkVolume(deps: ServiceDeps, accountId: string, volumeId: string): void {
  inTransaction(deps, (s) => {
    getNetworkVolume(deps, accountId, volumeId);
    const users = s.endpointIdsUsingVolume(accountId, volumeId);
    if (users.length > 0) {
      throw new ServiceError(
        "IN_USE",
        `network volume ${volumeId} is attached to endpoint(s) ${users.join(", ")}; detach it first`,
        { field: "networkVolumeId" },
      );
    }
    s.deleteVolume(accountId, volumeId, deps.clock.now());
  });
}
