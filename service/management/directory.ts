import type { EndpointDirectory, EndpointSettings, ResolvedEnv, SecretDirectory } from "../planes";
import type { EndpointRecord } from "./model/records";
import { resolveSecretReferences, secretReferences } from "./model/secret";
import type { ManagementStore } from "./store/store";

/**
 * The management plane's endpoint and template records as the job plane reads them: one flat
 * settings object per endpoint (the template's image; template env under the endpoint's).
 */
export class EndpointRecords implements EndpointDirectory {
  readonly #store: ManagementStore;

  constructor(store: ManagementStore) {
    this.#store = store;
  }

  get(accountId: string, endpointId: string): EndpointSettings | undefined {
    const record = this.#store.endpoints.get(accountId, endpointId);
    return record ? this.#settingsOf(record) : undefined;
  }

  listAll(): EndpointSettings[] {
    return this.#store.endpoints.listAll().map((record) => this.#settingsOf(record));
  }

  #settingsOf(record: EndpointRecord): EndpointSettings {
    const template = this.#store.templates.get(record.accountId, record.templateId);
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
  }
}

/** The account's secret values, read when a worker starts (the job plane's SecretDirectory). */
export class SecretValues implements SecretDirectory {
  readonly #store: ManagementStore;

  constructor(store: ManagementStore) {
    this.#store = store;
  }

  resolveEnv(accountId: string, env: Record<string, string>): ResolvedEnv {
    if (secretReferences(env).length === 0) return { ok: true, env };
    return resolveSecretReferences(env, this.#store.secretValues(accountId));
  }
}
