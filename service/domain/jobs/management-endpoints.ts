import type { ServiceDeps } from "../../deps";
import { type EndpointRecord, getEndpoint, listAllEndpoints } from "../endpoint";
import { ServiceError } from "../errors";
import { getTemplate } from "../template";
import type { EndpointDirectory, EndpointSettings } from "./endpoints";

/** The management plane's endpoint and template records, as the job plane reads them. */
export function managementEndpoints(deps: ServiceDeps): EndpointDirectory {
  const settingsOf = (record: EndpointRecord): EndpointSettings => {
    const template = orUndefined(() => getTemplate(deps, record.accountId, record.templateId));
    return {
      id: record.id,
      accountId: record.accountId,
      type: record.type,
      workersMin: record.workersMin,
      workersMax: record.workersMax,
      idleTimeout: record.idleTimeout,
      scalerType: record.scalerType,
      scalerValue: record.scalerValue,
      flashBootType: record.flashBootType,
      executionTimeoutMs: record.executionTimeoutMs,
      modelName: record.modelName,
      gpuCount: record.gpuCount,
      templateId: record.templateId,
      imageName: template?.imageName ?? "",
      env: { ...(template?.env ?? {}), ...record.env },
      version: record.version,
    };
  };
  return {
    get(accountId, endpointId) {
      const record = orUndefined(() => getEndpoint(deps, accountId, endpointId));
      return record ? settingsOf(record) : undefined;
    },
    listAll() {
      return listAllEndpoints(deps).map(settingsOf);
    },
  };
}

function orUndefined<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    if (error instanceof ServiceError && error.code === "NOT_FOUND") return undefined;
    throw error;
  }
}
