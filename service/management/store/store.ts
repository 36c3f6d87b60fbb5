import type { DatabaseSync, StatementSync } from "node:sqlite";
import { transaction } from "../../db";
import type {
  EndpointRecord,
  NetworkVolumeRecord,
  PodRecord,
  PodUsageRow,
  RegistryAuthRecord,
  SecretRecord,
  TemplateRecord,
  VolumeUsageRow,
} from "../model/records";

interface DataRow {
  data: string;
}

/** Statements of one JSON-document table keyed by (account_id, id). */
class DocumentTable<T extends { id: string; accountId: string }> {
  readonly #get: StatementSync;
  readonly #list: StatementSync;
  readonly #listAll: StatementSync;
  readonly #delete: StatementSync;

  constructor(db: DatabaseSync, table: string) {
    this.#get = db.prepare(`SELECT data FROM ${table} WHERE account_id = ? AND id = ?`);
    this.#list = db.prepare(`SELECT data FROM ${table} WHERE account_id = ? ORDER BY created_at, id`);
    this.#listAll = db.prepare(`SELECT data FROM ${table} ORDER BY account_id, created_at, id`);
    this.#delete = db.prepare(`DELETE FROM ${table} WHERE account_id = ? AND id = ?`);
  }

  get(accountId: string, id: string): T | undefined {
    const row = this.#get.get(accountId, id) as DataRow | undefined;
    return row ? (JSON.parse(row.data) as T) : undefined;
  }

  list(accountId: string): T[] {
    return (this.#list.all(accountId) as unknown as DataRow[]).map((row) => JSON.parse(row.data) as T);
  }

  listAll(): T[] {
    return (this.#listAll.all() as unknown as DataRow[]).map((row) => JSON.parse(row.data) as T);
  }

  delete(accountId: string, id: string): boolean {
    return Number(this.#delete.run(accountId, id).changes) > 0;
  }
}

/**
 * All store access of the management plane. Opened once per service (its statements are prepared
 * here); every call takes the account id.
 */
export class ManagementStore {
  readonly #db: DatabaseSync;
  readonly endpoints: DocumentTable<EndpointRecord>;
  readonly templates: DocumentTable<TemplateRecord>;
  readonly volumes: DocumentTable<NetworkVolumeRecord>;
  readonly registryAuths: DocumentTable<RegistryAuthRecord>;
  readonly pods: DocumentTable<PodRecord>;
  readonly #putEndpoint: StatementSync;
  readonly #clearEndpointVolumes: StatementSync;
  readonly #addEndpointVolume: StatementSync;
  readonly #endpointsUsingTemplate: StatementSync;
  readonly #endpointsUsingVolume: StatementSync;
  readonly #putTemplate: StatementSync;
  readonly #templateByName: StatementSync;
  readonly #templatesUsingAuth: StatementSync;
  readonly #putVolume: StatementSync;
  readonly #closeUsage: StatementSync;
  readonly #openUsage: StatementSync;
  readonly #usage: StatementSync;
  readonly #putAuth: StatementSync;
  readonly #authByName: StatementSync;
  readonly #pubKey: StatementSync;
  readonly #putPubKey: StatementSync;
  readonly #putPod: StatementSync;
  readonly #podsUsing: Record<"template_id" | "network_volume_id" | "registry_auth_id", StatementSync>;
  readonly #closePodUsage: StatementSync;
  readonly #openPodUsage: StatementSync;
  readonly #podUsage: StatementSync;
  readonly #secretSelect: string;
  readonly #secretById: StatementSync;
  readonly #secretByName: StatementSync;
  readonly #secrets: StatementSync;
  readonly #insertSecret: StatementSync;
  readonly #updateSecretValue: StatementSync;
  readonly #updateSecretDescription: StatementSync;
  readonly #deleteSecret: StatementSync;
  readonly #secretValues: StatementSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.endpoints = new DocumentTable(db, "mgmt_endpoints");
    this.templates = new DocumentTable(db, "mgmt_templates");
    this.volumes = new DocumentTable(db, "mgmt_network_volumes");
    this.registryAuths = new DocumentTable(db, "mgmt_registry_auths");
    this.pods = new DocumentTable(db, "mgmt_pods");
    this.#putEndpoint = db.prepare(
      `INSERT INTO mgmt_endpoints (account_id, id, template_id, created_at, data) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (account_id, id) DO UPDATE SET template_id = excluded.template_id, data = excluded.data`,
    );
    this.#clearEndpointVolumes = db.prepare(
      "DELETE FROM mgmt_endpoint_volumes WHERE account_id = ? AND endpoint_id = ?",
    );
    this.#addEndpointVolume = db.prepare(
      "INSERT OR IGNORE INTO mgmt_endpoint_volumes (account_id, endpoint_id, volume_id) VALUES (?, ?, ?)",
    );
    this.#endpointsUsingTemplate = db.prepare(
      "SELECT data FROM mgmt_endpoints WHERE account_id = ? AND template_id = ? ORDER BY created_at, id",
    );
    this.#endpointsUsingVolume = db.prepare(
      "SELECT endpoint_id FROM mgmt_endpoint_volumes WHERE account_id = ? AND volume_id = ? ORDER BY endpoint_id",
    );
    this.#putTemplate = db.prepare(
      `INSERT INTO mgmt_templates (account_id, id, name, registry_auth_id, created_at, data) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (account_id, id) DO UPDATE SET name = excluded.name,
         registry_auth_id = excluded.registry_auth_id, data = excluded.data`,
    );
    this.#templateByName = db.prepare("SELECT data FROM mgmt_templates WHERE account_id = ? AND name = ?");
    this.#templatesUsingAuth = db.prepare(
      "SELECT id FROM mgmt_templates WHERE account_id = ? AND registry_auth_id = ? ORDER BY id",
    );
    this.#putVolume = db.prepare(
      `INSERT INTO mgmt_network_volumes (account_id, id, created_at, data) VALUES (?, ?, ?, ?)
       ON CONFLICT (account_id, id) DO UPDATE SET data = excluded.data`,
    );
    this.#closeUsage = db.prepare(
      "UPDATE mgmt_volume_usage SET until_ms = ? WHERE account_id = ? AND volume_id = ? AND until_ms IS NULL",
    );
    this.#openUsage = db.prepare(
      "INSERT INTO mgmt_volume_usage (account_id, volume_id, size_gb, from_ms, until_ms) VALUES (?, ?, ?, ?, NULL)",
    );
    this.#usage = db.prepare(
      `SELECT volume_id AS volumeId, size_gb AS sizeGb, from_ms AS fromMs, until_ms AS untilMs
       FROM mgmt_volume_usage WHERE account_id = ? ORDER BY from_ms, volume_id`,
    );
    this.#putAuth = db.prepare(
      `INSERT INTO mgmt_registry_auths (account_id, id, name, created_at, data) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (account_id, id) DO UPDATE SET name = excluded.name, data = excluded.data`,
    );
    this.#authByName = db.prepare("SELECT data FROM mgmt_registry_auths WHERE account_id = ? AND name = ?");
    this.#pubKey = db.prepare("SELECT pub_key FROM mgmt_user_settings WHERE account_id = ?");
    this.#putPubKey = db.prepare(
      `INSERT INTO mgmt_user_settings (account_id, pub_key) VALUES (?, ?)
       ON CONFLICT (account_id) DO UPDATE SET pub_key = excluded.pub_key`,
    );
    this.#putPod = db.prepare(
      `INSERT INTO mgmt_pods (account_id, id, template_id, network_volume_id, registry_auth_id, created_at, data)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (account_id, id) DO UPDATE SET template_id = excluded.template_id,
         network_volume_id = excluded.network_volume_id, registry_auth_id = excluded.registry_auth_id,
         data = excluded.data`,
    );
    const podsUsing = (column: string) =>
      db.prepare(`SELECT id FROM mgmt_pods WHERE account_id = ? AND ${column} = ? ORDER BY id`);
    this.#podsUsing = {
      template_id: podsUsing("template_id"),
      network_volume_id: podsUsing("network_volume_id"),
      registry_auth_id: podsUsing("registry_auth_id"),
    };
    this.#closePodUsage = db.prepare(
      "UPDATE mgmt_pod_usage SET until_ms = ? WHERE account_id = ? AND pod_id = ? AND until_ms IS NULL",
    );
    this.#openPodUsage = db.prepare(
      `INSERT INTO mgmt_pod_usage (account_id, pod_id, gpu_type_id, usd_per_hour, from_ms, until_ms)
       VALUES (?, ?, ?, ?, ?, NULL)`,
    );
    this.#podUsage = db.prepare(
      `SELECT pod_id AS podId, gpu_type_id AS gpuTypeId, usd_per_hour AS usdPerHour, from_ms AS fromMs,
         until_ms AS untilMs FROM mgmt_pod_usage WHERE account_id = ? ORDER BY from_ms, pod_id`,
    );
    // Every read of a secret names its columns: the value is read only by secretValues().
    this.#secretSelect = `SELECT id, account_id AS accountId, name, description, created_at AS createdAt,
      updated_at AS updatedAt FROM mgmt_secrets`;
    this.#secretById = db.prepare(`${this.#secretSelect} WHERE account_id = ? AND id = ?`);
    this.#secretByName = db.prepare(`${this.#secretSelect} WHERE account_id = ? AND name = ?`);
    this.#secrets = db.prepare(`${this.#secretSelect} WHERE account_id = ? ORDER BY created_at, id`);
    this.#insertSecret = db.prepare(
      `INSERT INTO mgmt_secrets (account_id, id, name, description, value, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, NULL)`,
    );
    this.#updateSecretValue = db.prepare(
      "UPDATE mgmt_secrets SET value = ?, updated_at = ? WHERE account_id = ? AND id = ?",
    );
    this.#updateSecretDescription = db.prepare(
      "UPDATE mgmt_secrets SET description = ?, updated_at = ? WHERE account_id = ? AND id = ?",
    );
    this.#deleteSecret = db.prepare("DELETE FROM mgmt_secrets WHERE account_id = ? AND id = ?");
    this.#secretValues = db.prepare("SELECT name, value FROM mgmt_secrets WHERE account_id = ?");
  }

  /** Runs `fn` in one transaction: all of a change is written, or none. Nested calls join the outer one. */
  transaction<T>(fn: () => T): T {
    return transaction(this.#db, fn);
  }

  putEndpoint(record: EndpointRecord): void {
    const { accountId, id } = record;
    this.#putEndpoint.run(accountId, id, record.templateId, record.createdAt, JSON.stringify(record));
    this.#clearEndpointVolumes.run(accountId, id);
    const volumes = new Set([
      ...(record.networkVolumeId ? [record.networkVolumeId] : []),
      ...record.networkVolumeIds,
    ]);
    for (const volumeId of volumes) this.#addEndpointVolume.run(accountId, id, volumeId);
  }

  deleteEndpoint(accountId: string, id: string): boolean {
    this.#clearEndpointVolumes.run(accountId, id);
    return this.endpoints.delete(accountId, id);
  }

  endpointsUsingTemplate(accountId: string, templateId: string): EndpointRecord[] {
    return (this.#endpointsUsingTemplate.all(accountId, templateId) as unknown as DataRow[]).map(
      (row) => JSON.parse(row.data) as EndpointRecord,
    );
  }

  endpointIdsUsingVolume(accountId: string, volumeId: string): string[] {
    return (this.#endpointsUsingVolume.all(accountId, volumeId) as { endpoint_id: string }[]).map(
      (row) => row.endpoint_id,
    );
  }

  putTemplate(record: TemplateRecord): void {
    this.#putTemplate.run(
      record.accountId,
      record.id,
      record.name,
      record.containerRegistryAuthId,
      record.createdAt,
      JSON.stringify(record),
    );
  }

  templateByName(accountId: string, name: string): TemplateRecord | undefined {
    const row = this.#templateByName.get(accountId, name) as DataRow | undefined;
    return row ? (JSON.parse(row.data) as TemplateRecord) : undefined;
  }

  templateIdsUsingAuth(accountId: string, authId: string): string[] {
    return (this.#templatesUsingAuth.all(accountId, authId) as { id: string }[]).map((row) => row.id);
  }

  /** Stores the volume and, when its size is new, starts a new usage period at `now`. */
  putVolume(record: NetworkVolumeRecord, previousSize: number | undefined, now: number): void {
    this.#putVolume.run(record.accountId, record.id, record.createdAt, JSON.stringify(record));
    if (previousSize === record.size) return;
    this.#closeUsage.run(now, record.accountId, record.id);
    this.#openUsage.run(record.accountId, record.id, record.size, now);
  }

  /** Deletes the volume; its usage history stays (it was billed). */
  deleteVolume(accountId: string, id: string, now: number): boolean {
    this.#closeUsage.run(now, accountId, id);
    return this.volumes.delete(accountId, id);
  }

  volumeUsage(accountId: string): VolumeUsageRow[] {
    return this.#usage.all(accountId) as unknown as VolumeUsageRow[];
  }

  putRegistryAuth(record: RegistryAuthRecord): void {
    this.#putAuth.run(record.accountId, record.id, record.name, record.createdAt, JSON.stringify(record));
  }

  registryAuthByName(accountId: string, name: string): RegistryAuthRecord | undefined {
    const row = this.#authByName.get(accountId, name) as DataRow | undefined;
    return row ? (JSON.parse(row.data) as RegistryAuthRecord) : undefined;
  }

  pubKey(accountId: string): string {
    const row = this.#pubKey.get(accountId) as { pub_key: string } | undefined;
    return row?.pub_key ?? "";
  }

  putPubKey(accountId: string, pubKey: string): void {
    this.#putPubKey.run(accountId, pubKey);
  }

  putPod(record: PodRecord): void {
    this.#putPod.run(
      record.accountId,
      record.id,
      record.templateId,
      record.networkVolumeId,
      record.containerRegistryAuthId,
      record.createdAt,
      JSON.stringify(record),
    );
  }

  /** Ids of the pods referencing a template, network volume or registry auth. */
  podIdsUsing(
    accountId: string,
    column: "template_id" | "network_volume_id" | "registry_auth_id",
    id: string,
  ): string[] {
    return (this.#podsUsing[column].all(accountId, id) as { id: string }[]).map((row) => row.id);
  }

  /** Ends the pod's running period (if one is open) at `now`. */
  closePodUsage(accountId: string, podId: string, now: number): void {
    this.#closePodUsage.run(now, accountId, podId);
  }

  /** Starts a running period at `now` (closing any open one first). */
  openPodUsage(accountId: string, podId: string, gpuTypeId: string | null, usdPerHour: number, now: number) {
    this.#closePodUsage.run(now, accountId, podId);
    this.#openPodUsage.run(accountId, podId, gpuTypeId, usdPerHour, now);
  }

  podUsage(accountId: string): PodUsageRow[] {
    return this.#podUsage.all(accountId) as unknown as PodUsageRow[];
  }

  secret(accountId: string, id: string): SecretRecord | undefined {
    return this.#secretById.get(accountId, id) as SecretRecord | undefined;
  }

  secretByName(accountId: string, name: string): SecretRecord | undefined {
    return this.#secretByName.get(accountId, name) as SecretRecord | undefined;
  }

  secrets(accountId: string): SecretRecord[] {
    return this.#secrets.all(accountId) as unknown as SecretRecord[];
  }

  insertSecret(record: SecretRecord, value: string): void {
    this.#insertSecret.run(
      record.accountId,
      record.id,
      record.name,
      record.description,
      value,
      record.createdAt,
    );
  }

  updateSecretValue(accountId: string, id: string, value: string, now: number): void {
    this.#updateSecretValue.run(value, now, accountId, id);
  }

  updateSecretDescription(accountId: string, id: string, description: string, now: number): void {
    this.#updateSecretDescription.run(description, now, accountId, id);
  }

  deleteSecret(accountId: string, id: string): boolean {
    return Number(this.#deleteSecret.run(accountId, id).changes) > 0;
  }

  /** The account's secret values by name: read only to start workers, never for a reply. */
  secretValues(accountId: string): Map<string, string> {
    const rows = this.#secretValues.all(accountId) as { name: string; value: string }[];
    return new Map(rows.map((row) => [row.name, row.value]));
  }
}
