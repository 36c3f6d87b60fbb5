import { DATA_CENTER_IDS } from "../../sdk/schemas/common";
import { ENDPOINT_DEFAULTS } from "../../sdk/schemas/endpoint";
import type { ServiceDeps } from "../deps";
import { definedOnly, inTransaction, sameEnv, storeOf } from "./common";
import { invalid, notFound, ServiceError } from "./errors";
import { gpuTypesOfPools, poolsOfGpuTypes } from "./gpu-pools";
import type { EndpointRecord } from "./records";

export type { EndpointRecord } from "./records";

/** Everything a caller may set on an endpoint. */
export type EndpointSettings = Omit<EndpointRecord, "id" | "accountId" | "version" | "createdAt">;
/** A change: absent (or undefined) fields are not part of it. */
export type EndpointChanges = Partial<EndpointSettings>;

/** Fields GraphQL's EndpointInput cannot express; a saveEndpoint full replace keeps them. */
const REST_ONLY_FIELDS = [
  "dataCenterIds",
  "networkVolumeIds",
  "minCudaVersion",
  "cpuFlavorIds",
  "vcpuCount",
] as const;

function defaultSettings(computeType: EndpointRecord["computeType"]): EndpointSettings {
  const gpu = computeType === "GPU";
  return {
    name: "",
    templateId: "",
    type: ENDPOINT_DEFAULTS.type,
    computeType,
    gpuIds: ENDPOINT_DEFAULTS.gpuIds,
    gpuTypeIds: gpu ? gpuTypesOfPools(ENDPOINT_DEFAULTS.gpuIds) : [],
    gpuCount: ENDPOINT_DEFAULTS.gpuCount,
    workersMin: ENDPOINT_DEFAULTS.workersMin,
    workersMax: ENDPOINT_DEFAULTS.workersMax,
    workersStandby: ENDPOINT_DEFAULTS.workersStandby,
    idleTimeout: ENDPOINT_DEFAULTS.idleTimeout,
    scalerType: ENDPOINT_DEFAULTS.scalerType,
    scalerValue: ENDPOINT_DEFAULTS.scalerValue,
    flashBootType: ENDPOINT_DEFAULTS.flashBootType,
    locations: null,
    dataCenterIds: [...DATA_CENTER_IDS],
    networkVolumeId: null,
    networkVolumeIds: [],
    executionTimeoutMs: ENDPOINT_DEFAULTS.executionTimeoutMs,
    env: {},
    modelName: null,
    hubReleaseId: null,
    allowedCudaVersions: [],
    minCudaVersion: null,
    instanceIds: [],
    cpuFlavorIds: [],
    vcpuCount: 2,
  };
}

/** Keeps the two GPU forms in step: whichever one the change sets decides the other. */
function withGpuChoice(settings: EndpointSettings, changes: EndpointChanges): EndpointSettings {
  if (changes.gpuTypeIds !== undefined && changes.gpuIds === undefined) {
    return { ...settings, gpuIds: poolsOfGpuTypes(changes.gpuTypeIds) ?? ENDPOINT_DEFAULTS.gpuIds };
  }
  if (changes.gpuIds !== undefined && changes.gpuTypeIds === undefined) {
    return { ...settings, gpuTypeIds: gpuTypesOfPools(changes.gpuIds) };
  }
  return settings;
}

/** References must exist in the same account (other accounts' ids read as missing). */
function checkSettings(deps: ServiceDeps, accountId: string, settings: EndpointSettings): void {
  const store = storeOf(deps);
  if (!store.templates.get(accountId, settings.templateId)) {
    throw invalid("templateId", `template ${settings.templateId} not found`);
  }
  for (const volumeId of [settings.networkVolumeId, ...settings.networkVolumeIds]) {
    if (volumeId && !store.volumes.get(accountId, volumeId)) {
      throw invalid("networkVolumeId", `network volume ${volumeId} not found`);
    }
  }
  if (settings.workersMin > settings.workersMax) {
    throw invalid(
      "workersMin",
      `must not exceed workersMax (${settings.workersMin} > ${settings.workersMax})`,
    );
  }
}

function refuseComputeTypeChange(existing: EndpointRecord, changes: EndpointChanges): void {
  if (changes.computeType !== undefined && changes.computeType !== existing.computeType) {
    throw invalid("computeType", "is not updatable; create a new endpoint instead");
  }
}

/** Stores the new settings of an existing endpoint, bumping version when template or env change. */
function store(deps: ServiceDeps, existing: EndpointRecord, settings: EndpointSettings): EndpointRecord {
  checkSettings(deps, existing.accountId, settings);
  const changed = settings.templateId !== existing.templateId || !sameEnv(settings.env, existing.env);
  const record: EndpointRecord = {
    ...settings,
    id: existing.id,
    accountId: existing.accountId,
    createdAt: existing.createdAt,
    version: existing.version + (changed ? 1 : 0),
  };
  storeOf(deps).putEndpoint(record);
  return record;
}

export function getEndpoint(deps: ServiceDeps, accountId: string, endpointId: string): EndpointRecord {
  const record = storeOf(deps).endpoints.get(accountId, endpointId);
  if (!record) throw notFound("endpoint", endpointId);
  return record;
}

export function listEndpoints(deps: ServiceDeps, accountId: string): EndpointRecord[] {
  return storeOf(deps).endpoints.list(accountId);
}

/** Every account's endpoints (the job plane's restart recovery). */
export function listAllEndpoints(deps: ServiceDeps): EndpointRecord[] {
  return storeOf(deps).endpoints.listAll();
}

/** Creates an endpoint; every field the change leaves out takes its default. */
export function createEndpoint(
  deps: ServiceDeps,
  accountId: string,
  changes: EndpointChanges,
): EndpointRecord {
  const record = inTransaction(deps, (s) => {
    const given = definedOnly(changes);
    const id = deps.ids.endpoint();
    const base = defaultSettings(given.computeType ?? "GPU");
    const settings = withGpuChoice({ ...base, name: `endpoint-${id}`, ...given }, given);
    checkSettings(deps, accountId, settings);
    const created: EndpointRecord = { ...settings, id, accountId, version: 0, createdAt: deps.clock.now() };
    s.putEndpoint(created);
    return created;
  });
  deps.events.emit("endpoint.saved", accountId, record.id);
  return record;
}

/** Lays a change over the settings `start` derives from the existing endpoint, and stores the result. */
function changeEndpoint(
  deps: ServiceDeps,
  accountId: string,
  endpointId: string,
  changes: EndpointChanges,
  start: (existing: EndpointRecord) => EndpointSettings,
): EndpointRecord {
  const record = inTransaction(deps, () => {
    const existing = getEndpoint(deps, accountId, endpointId);
    const given = definedOnly(changes);
    refuseComputeTypeChange(existing, given);
    return store(deps, existing, withGpuChoice({ ...start(existing), ...given }, given));
  });
  deps.events.emit("endpoint.saved", accountId, record.id);
  return record;
}

/** REST PATCH: absent fields are unchanged; 0, false and null are values. */
export function updateEndpoint(
  deps: ServiceDeps,
  accountId: string,
  endpointId: string,
  changes: EndpointChanges,
): EndpointRecord {
  return changeEndpoint(deps, accountId, endpointId, changes, (existing) => {
    const { id: _id, accountId: _a, version: _v, createdAt: _c, ...current } = existing;
    return current;
  });
}

/**
 * GraphQL saveEndpoint with an id: a FULL REPLACE, as the real service. Fields the change leaves out
 * go back to their defaults, except computeType (not updatable) and the REST-only fields GraphQL
 * cannot express (dataCenterIds, networkVolumeIds, minCudaVersion, cpuFlavorIds, vcpuCount).
 */
export function replaceEndpoint(
  deps: ServiceDeps,
  accountId: string,
  endpointId: string,
  changes: EndpointChanges,
): EndpointRecord {
  return changeEndpoint(deps, accountId, endpointId, changes, (existing) => {
    const base = defaultSettings(existing.computeType);
    for (const field of REST_ONLY_FIELDS) Object.assign(base, { [field]: existing[field] });
    return { ...base, name: existing.name };
  });
}

/** Refused unless workersMin and workersMax are both 0, so no running worker is cut off by accident. */
export function deleteEndpoint(deps: ServiceDeps, accountId: string, endpointId: string): void {
  inTransaction(deps, (s) => {
    const existing = getEndpoint(deps, accountId, endpointId);
    if (existing.workersMin !== 0 || existing.workersMax !== 0) {
      throw new ServiceError(
        "PRECONDITION",
        `endpoint ${endpointId} has workersMin=${existing.workersMin} and workersMax=${existing.workersMax}; set both to 0 before deleting it`,
        { field: "workersMax" },
      );
    }
    s.deleteEndpoint(accountId, endpointId);
  });
  deps.events.emit("endpoint.deleted", accountId, endpointId);
}

/** Bumps the version of every endpoint using a template whose content changed (a rolling release). */
export function releaseTemplateChange(deps: ServiceDeps, accountId: string, templateId: string): string[] {
  const s = storeOf(deps);
  const ids: string[] = [];
  for (const endpoint of s.endpointsUsingTemplate(accountId, templateId)) {
    s.putEndpoint({ ...endpoint, version: endpoint.version + 1 });
    ids.push(endpoint.id);
  }
  return ids;
}
