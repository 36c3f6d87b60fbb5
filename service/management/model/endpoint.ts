import {
  canonicalCommaList,
  DATA_CENTER_IDS,
  ENDPOINT_DEFAULTS,
  splitCommaList,
  uniqueItems,
  volumeGivenTwice,
} from "../../../sdk/schemas/defaults";
import {
  GPU_ENDPOINT_NEEDS_A_TYPE,
  GPU_IDS_NOT_POOLS,
  gpuTypesOfPools,
  poolsOfGpuTypes,
  sameGpuTypes,
} from "../../../sdk/schemas/gpu-pools";
import type { Clock } from "../../clock";
import { invalid, resourceNotFound, ServiceError, shownId } from "../../errors";
import type { Ids } from "../../ids";
import type { ServiceEventBus } from "../../planes";
import type { ManagementStore } from "../store/store";
import { countryOf, parseCpuInstance } from "./catalogue";
import { definedOnly, sameEnv } from "./common";
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

/**
 * Keeps the two GPU forms in step: whichever one the change sets decides the other. REST types that
 * pools cannot describe read as gpuIds "" (GPU_IDS_NOT_POOLS) on a GPU endpoint, never as another
 * choice. gpuIds naming the same set of types as the endpoint has keep its gpuTypeIds' order (the
 * priority), so a GraphQL read-then-save changes nothing.
 */
function withGpuChoice(
  settings: EndpointSettings,
  changes: EndpointChanges,
  existing?: EndpointRecord,
): EndpointSettings {
  if (changes.gpuTypeIds !== undefined && changes.gpuIds === undefined) {
    const pools = poolsOfGpuTypes(changes.gpuTypeIds);
    // A CPU endpoint has no GPU choice to describe: its gpuIds stay what they were.
    if (pools === undefined && settings.computeType === "CPU") return settings;
    return { ...settings, gpuIds: pools ?? GPU_IDS_NOT_POOLS };
  }
  if (changes.gpuIds !== undefined && changes.gpuTypeIds === undefined) {
    // A CPU endpoint's workers take no GPU: gpuIds (GraphQL always sends one) names no types for it.
    if (settings.computeType === "CPU") return settings;
    const types = gpuTypesOfPools(changes.gpuIds);
    const kept = existing && sameGpuTypes(types, existing.gpuTypeIds) ? existing.gpuTypeIds : types;
    return { ...settings, gpuTypeIds: kept };
  }
  return settings;
}

/** The list fields of an endpoint: each a set of choices (or a priority order), every item once. */
const LIST_FIELDS = [
  "gpuTypeIds",
  "dataCenterIds",
  "networkVolumeIds",
  "allowedCudaVersions",
  "cpuFlavorIds",
  "instanceIds",
] as const;

/**
 * A change in the one spelling the endpoint is stored in, whichever wire it came by: each list item
 * once (the first kept), and the comma lists gpuIds and locations trimmed and without repeats
 * (`" US , CZ,US"` is `"US,CZ"`; locations naming nothing is null, any region). A repeat changes
 * no choice, so dropping it loses nothing, and every reader sees the same value for the same choice.
 */
function canonicalChanges(changes: EndpointChanges): EndpointChanges {
  const out: EndpointChanges = { ...changes };
  for (const field of LIST_FIELDS) {
    const list = changes[field];
    if (list !== undefined) out[field] = uniqueItems(list);
  }
  if (changes.gpuIds !== undefined) out.gpuIds = canonicalCommaList(changes.gpuIds);
  if (typeof changes.locations === "string") out.locations = canonicalCommaList(changes.locations) || null;
  return out;
}

/**
 * An endpoint stored before its lists were kept canonical, in the canonical spelling; undefined when
 * it already is. A repeat changes no choice, so the endpoint means what it meant.
 */
export function canonicalEndpoint(record: EndpointRecord): EndpointRecord | undefined {
  const canonical = { ...record, ...canonicalChanges(record) };
  return JSON.stringify(canonical) === JSON.stringify(record) ? undefined : canonical;
}

/** Whether a field differs between the stored endpoint and the new settings (always, on create). */
function differs(
  existing: EndpointRecord | undefined,
  settings: EndpointSettings,
  field: keyof EndpointSettings,
) {
  return existing === undefined || JSON.stringify(existing[field]) !== JSON.stringify(settings[field]);
}

function refuseComputeTypeChange(existing: EndpointRecord, changes: EndpointChanges): void {
  if (changes.computeType !== undefined && changes.computeType !== existing.computeType) {
    throw invalid("computeType", "is not updatable; create a new endpoint instead");
  }
}

/**
 * The rules of endpoints, for REST and GraphQL alike. Every change is written in one transaction,
 * then announced (endpoint.saved / endpoint.deleted) so the job plane applies it.
 */
export class EndpointService {
  readonly #store: ManagementStore;
  readonly #clock: Clock;
  readonly #ids: Ids;
  readonly #events: ServiceEventBus;

  constructor(deps: { store: ManagementStore; clock: Clock; ids: Ids; events: ServiceEventBus }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#ids = deps.ids;
    this.#events = deps.events;
  }

  get(accountId: string, endpointId: string): EndpointRecord {
    const record = this.#store.endpoints.get(accountId, endpointId);
    if (!record) throw resourceNotFound("endpoint", endpointId);
    return record;
  }

  list(accountId: string): EndpointRecord[] {
    return this.#store.endpoints.list(accountId);
  }

  /** Creates an endpoint; every field the change leaves out takes its default. */
  create(accountId: string, changes: EndpointChanges): EndpointRecord {
    const record = this.#store.transaction(() => {
      const given = canonicalChanges(definedOnly(changes));
      const id = this.#ids.endpoint();
      const base = defaultSettings(given.computeType ?? "GPU");
      const settings = withGpuChoice({ ...base, name: `endpoint-${id}`, ...given }, given);
      this.#check(accountId, settings);
      const created: EndpointRecord = {
        ...settings,
        id,
        accountId,
        version: 0,
        createdAt: this.#clock.now(),
      };
      this.#store.putEndpoint(created);
      return created;
    });
    this.#events.emit("endpoint.saved", accountId, record.id);
    return record;
  }

  /** REST PATCH: absent fields are unchanged; 0, false and null are values. */
  update(accountId: string, endpointId: string, changes: EndpointChanges): EndpointRecord {
    return this.#change(accountId, endpointId, changes, (existing) => {
      const { id: _id, accountId: _a, version: _v, createdAt: _c, ...current } = existing;
      return current;
    });
  }

  /**
   * GraphQL saveEndpoint with an id: a FULL REPLACE, as the real service. Fields the change leaves out
   * go back to their defaults, except computeType (not updatable), the REST-only fields GraphQL
   * cannot express (dataCenterIds, cpuFlavorIds, vcpuCount), and networkVolumeIds and minCudaVersion,
   * which older GraphQL clients never send: kept unless the input gives them (null clears).
   */
  replace(accountId: string, endpointId: string, changes: EndpointChanges): EndpointRecord {
    return this.#change(accountId, endpointId, changes, (existing) => {
      const base = defaultSettings(existing.computeType);
      for (const field of REST_ONLY_FIELDS) Object.assign(base, { [field]: existing[field] });
      return { ...base, name: existing.name };
    });
  }

  /** Refused unless workersMin and workersMax are both 0, so no running worker is cut off by accident. */
  delete(accountId: string, endpointId: string): void {
    this.#store.transaction(() => {
      const existing = this.get(accountId, endpointId);
      if (existing.workersMin !== 0 || existing.workersMax !== 0) {
        throw new ServiceError(
          "PRECONDITION",
          `endpoint ${endpointId} has workersMin=${existing.workersMin} and workersMax=${existing.workersMax}; set both to 0 before deleting it`,
          { field: "workersMax" },
        );
      }
      this.#store.deleteEndpoint(accountId, endpointId);
    });
    this.#events.emit("endpoint.deleted", accountId, endpointId);
  }

  /**
   * A template's runtime changed: bumps the version of every endpoint using it (a rolling release).
   * Runs inside the template's transaction; returns the endpoints to announce once it has committed.
   */
  releaseTemplate(accountId: string, templateId: string): string[] {
    const ids: string[] = [];
    for (const endpoint of this.#store.endpointsUsingTemplate(accountId, templateId)) {
      this.#store.putEndpoint({ ...endpoint, version: endpoint.version + 1 });
      ids.push(endpoint.id);
    }
    return ids;
  }

  /** Lays a change over the settings `start` derives from the existing endpoint, and stores the result. */
  #change(
    accountId: string,
    endpointId: string,
    changes: EndpointChanges,
    start: (existing: EndpointRecord) => EndpointSettings,
  ): EndpointRecord {
    const record = this.#store.transaction(() => {
      const existing = this.get(accountId, endpointId);
      const given = canonicalChanges(definedOnly(changes));
      refuseComputeTypeChange(existing, given);
      return this.#save(existing, withGpuChoice({ ...start(existing), ...given }, given, existing));
    });
    this.#events.emit("endpoint.saved", accountId, record.id);
    return record;
  }

  /** Stores the new settings of an existing endpoint, bumping version when template or env change. */
  #save(existing: EndpointRecord, settings: EndpointSettings): EndpointRecord {
    this.#check(existing.accountId, settings, existing);
    const changed = settings.templateId !== existing.templateId || !sameEnv(settings.env, existing.env);
    const record: EndpointRecord = {
      ...settings,
      id: existing.id,
      accountId: existing.accountId,
      createdAt: existing.createdAt,
      version: existing.version + (changed ? 1 : 0),
    };
    this.#store.putEndpoint(record);
    return record;
  }

  /**
   * References must exist in the same account (other accounts' ids read as missing). The GPU choice
   * and the volumes' data centers are checked when they (or the data centers) change, so an endpoint
   * stored before these rules can still be scaled down and deleted.
   */
  #check(accountId: string, settings: EndpointSettings, existing?: EndpointRecord): void {
    const template = this.#store.templates.get(accountId, settings.templateId);
    if (!template) throw invalid("templateId", `template ${shownId(settings.templateId)} not found`);
    // The spec's templateId is "the serverless template to use"; a pod template (isServerless false)
    // describes pods. Checked when the template changes, so an endpoint stored before this rule can
    // still be scaled down and deleted.
    if (!template.isServerless && differs(existing, settings, "templateId")) {
      throw invalid(
        "templateId",
        `template ${template.id} ("${template.name}") is a pod template (isServerless: false); an endpoint needs a serverless template: create one with isServerless: true`,
      );
    }
    if (
      settings.computeType === "GPU" &&
      settings.gpuTypeIds.length === 0 &&
      differs(existing, settings, "gpuTypeIds")
    ) {
      throw invalid("gpuTypeIds", GPU_ENDPOINT_NEEDS_A_TYPE);
    }
    if (settings.instanceIds.length > 0 && differs(existing, settings, "instanceIds")) {
      if (settings.computeType !== "CPU") {
        throw invalid(
          "instanceIds",
          'CPU instance ids are only for CPU endpoints (computeType "CPU"); a GPU endpoint chooses its GPUs with gpuIds',
        );
      }
      for (const id of settings.instanceIds) parseCpuInstance(id, "instanceIds");
    }
    const placed = ["networkVolumeId", "networkVolumeIds", "dataCenterIds", "locations"] as const;
    const placementChanged = placed.some((field) => differs(existing, settings, field));
    const dataCenters = settings.dataCenterIds.filter(
      (id) => settings.locations === null || splitCommaList(settings.locations).includes(countryOf(id)),
    );
    const single = settings.networkVolumeId;
    if (single && settings.networkVolumeIds.includes(single) && placementChanged) {
      throw invalid("networkVolumeIds", volumeGivenTwice(shownId(single)));
    }
    const volumes = [
      ...(settings.networkVolumeId ? [["networkVolumeId", settings.networkVolumeId] as const] : []),
      ...settings.networkVolumeIds.map((id) => ["networkVolumeIds", id] as const),
    ];
    const volumeIn = new Map<string, string>();
    for (const [field, volumeId] of volumes) {
      const volume = this.#store.volumes.get(accountId, volumeId);
      if (!volume) throw invalid(field, `network volume ${shownId(volumeId)} not found`);
      // A worker mounts the one volume of its data center.
      const other = volumeIn.get(volume.dataCenterId);
      if (other !== undefined && other !== volume.id && placementChanged) {
        throw invalid(
          field,
          `network volumes ${other} and ${volume.id} are both in ${volume.dataCenterId}; an endpoint takes at most one per data center`,
        );
      }
      volumeIn.set(volume.dataCenterId, volume.id);
      // Workers run only in the endpoint's data centers, and mount a volume only where it is.
      if (placementChanged && !dataCenters.includes(volume.dataCenterId)) {
        throw invalid(
          field,
          `network volume ${volume.id} is in ${volume.dataCenterId}, which is not among the endpoint's data centers (${describeDataCenters(settings, dataCenters)})`,
        );
      }
    }
    if (settings.workersMin > settings.workersMax) {
      throw invalid(
        "workersMin",
        `must not exceed workersMax (${settings.workersMin} > ${settings.workersMax})`,
      );
    }
  }
}

/** "EU-RO-1, EU-CZ-1", or with locations "EU-CZ-1: dataCenterIds within locations CZ". */
function describeDataCenters(settings: EndpointSettings, dataCenters: readonly string[]): string {
  const list = dataCenters.join(", ") || "none";
  return settings.locations === null ? list : `${list}: dataCenterIds within locations ${settings.locations}`;
}
