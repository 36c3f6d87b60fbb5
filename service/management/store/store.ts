import { rmSync } from "node:fs";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { sameName } from "../../../sdk/schemas/common";
import { sqliteReason, transaction } from "../../db";
import { ServiceError } from "../../errors";
import type {
  EndpointRecord,
  NetworkVolumeRecord,
  PodRecord,
  PodUsageRow,
  RegistryAuthRecord,
  SecretRecord,
  TemplateRecord,
  VolumeUsageRow,
  WorkerUsageRow,
} from "../model/records";
import { Sealer, STORE_KEY_ENV, StoreKeyError } from "./sealing";

interface DataRow {
  data: string;
}

/** How a record's secrets are stored: sealed on the way in, opened on the way out. */
interface SecretFields<T> {
  seal(record: T): T;
  /** `legacy`: a value still in plain text (stored before sealing existed) is taken as it is. */
  open(record: T, legacy?: boolean): T;
  /** True when the stored record still has a secret in plain text. */
  hasPlain(record: T): boolean;
}

const NO_SECRETS: SecretFields<never> = {
  seal: (record) => record,
  open: (record) => record,
  hasPlain: () => false,
};

function opener(sealer: Sealer, legacy: boolean | undefined) {
  return (value: string, what: string) =>
    legacy && !Sealer.isSealed(value) ? value : sealer.open(value, what);
}

/** Records whose `env` values are secret (templates, endpoints); the names stay readable. */
function envSecrets<T extends { id: string; env: Record<string, string> }>(
  sealer: Sealer,
  kind: string,
): SecretFields<T> {
  /** Each env value mapped; a record stored without `env` (older documents) stays as it is. */
  const mapEnv = (record: T, fn: (name: string, value: string) => string): T => {
    const env = record.env as Record<string, string> | undefined;
    if (env === undefined) return record;
    return {
      ...record,
      env: Object.fromEntries(Object.entries(env).map(([name, value]) => [name, fn(name, value)])),
    };
  };
  return {
    seal: (record) => mapEnv(record, (_, value) => sealer.seal(value)),
    open: (record, legacy) => {
      const open = opener(sealer, legacy);
      return mapEnv(record, (name, value) => open(value, `${kind} ${record.id} env ${name}`));
    },
    hasPlain: (record) => Object.values(record.env ?? {}).some((value) => !Sealer.isSealed(value)),
  };
}

function passwordSecret(sealer: Sealer): SecretFields<RegistryAuthRecord> {
  return {
    seal: (record) => ({ ...record, password: sealer.seal(record.password) }),
    open: (record, legacy) => ({
      ...record,
      password: opener(sealer, legacy)(record.password, `registry auth ${record.id} password`),
    }),
    hasPlain: (record) => !Sealer.isSealed(record.password),
  };
}

/** Statements of one JSON-document table keyed by (account_id, id). */
class DocumentTable<T extends { id: string; accountId: string }> {
  readonly #secrets: SecretFields<T>;
  readonly #get: StatementSync;
  readonly #list: StatementSync;
  readonly #listAll: StatementSync;
  readonly #delete: StatementSync;
  readonly #rewrite: StatementSync;

  constructor(db: DatabaseSync, table: string, secrets: SecretFields<T> = NO_SECRETS) {
    this.#secrets = secrets;
    this.#get = db.prepare(`SELECT data FROM ${table} WHERE account_id = ? AND id = ?`);
    this.#list = db.prepare(`SELECT data FROM ${table} WHERE account_id = ? ORDER BY created_at, id`);
    this.#listAll = db.prepare(`SELECT data FROM ${table} ORDER BY account_id, created_at, id`);
    this.#delete = db.prepare(`DELETE FROM ${table} WHERE account_id = ? AND id = ?`);
    this.#rewrite = db.prepare(`UPDATE ${table} SET data = ? WHERE account_id = ? AND id = ?`);
  }

  /** A stored document, its secrets opened. */
  read(data: string): T {
    return this.#secrets.open(JSON.parse(data) as T);
  }

  /** The document to store, its secrets sealed. */
  write(record: T): string {
    return JSON.stringify(this.#secrets.seal(record));
  }

  get(accountId: string, id: string): T | undefined {
    const row = this.#get.get(accountId, id) as DataRow | undefined;
    return row ? this.read(row.data) : undefined;
  }

  list(accountId: string): T[] {
    return (this.#list.all(accountId) as unknown as DataRow[]).map((row) => this.read(row.data));
  }

  listAll(): T[] {
    return (this.#listAll.all() as unknown as DataRow[]).map((row) => this.read(row.data));
  }

  /** Stores what `change` makes of each document that it changes (undefined: unchanged); returns how many. */
  rewrite(change: (record: T) => T | undefined): number {
    let rewritten = 0;
    for (const row of this.#listAll.all() as unknown as DataRow[]) {
      const changed = change(this.read(row.data));
      if (changed === undefined) continue;
      this.#rewrite.run(this.write(changed), changed.accountId, changed.id);
      rewritten++;
    }
    return rewritten;
  }

  /** Seals the secrets of rows stored in plain text; returns how many rows it rewrote. */
  sealPlainRows(): number {
    let rewritten = 0;
    for (const row of this.#listAll.all() as unknown as DataRow[]) {
      const stored = JSON.parse(row.data) as T;
      if (!this.#secrets.hasPlain(stored)) continue;
      this.#rewrite.run(this.write(this.#secrets.open(stored, true)), stored.accountId, stored.id);
      rewritten++;
    }
    return rewritten;
  }

  delete(accountId: string, id: string): boolean {
    return Number(this.#delete.run(accountId, id).changes) > 0;
  }
}

/**
 * All store access of the management plane. Opened once per service (its statements are prepared
 * here); every call takes the account id. Registry passwords, template, endpoint and pod env values and
 * secret values are sealed in the file (sealing.ts); the sealer's key is checked against the store
 * when it opens.
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
  readonly #templateNames: StatementSync;
  readonly #templatesUsingAuth: StatementSync;
  readonly #putVolume: StatementSync;
  readonly #closeUsage: StatementSync;
  readonly #openUsage: StatementSync;
  readonly #usage: StatementSync;
  readonly #putAuth: StatementSync;
  readonly #authByName: StatementSync;
  readonly #authNames: StatementSync;
  readonly #pubKey: StatementSync;
  readonly #putPubKey: StatementSync;
  readonly #putPod: StatementSync;
  readonly #podsUsing: Record<"template_id" | "network_volume_id" | "registry_auth_id", StatementSync>;
  readonly #closePodUsage: StatementSync;
  readonly #openPodUsage: StatementSync;
  readonly #podUsage: StatementSync;
  readonly #workerUsageRows: StatementSync;
  readonly #mergeWorkerUsage: StatementSync;
  readonly #insertWorkerUsage: StatementSync;
  readonly #workerUsage: StatementSync;
  readonly #pruneWorkerUsage: StatementSync;
  readonly #prunePodUsage: StatementSync;
  readonly #pruneVolumeUsage: StatementSync;
  readonly #extendWorkerUsage: StatementSync;
  readonly #secretSelect: string;
  readonly #secretById: StatementSync;
  readonly #secretByName: StatementSync;
  readonly #secrets: StatementSync;
  readonly #insertSecret: StatementSync;
  readonly #updateSecretValue: StatementSync;
  readonly #updateSecretDescription: StatementSync;
  readonly #deleteSecret: StatementSync;
  readonly #secretValues: StatementSync;
  readonly #sealer: Sealer;

  constructor(db: DatabaseSync, sealer: Sealer) {
    this.#db = db;
    this.#sealer = sealer;
    this.endpoints = new DocumentTable(db, "mgmt_endpoints", envSecrets<EndpointRecord>(sealer, "endpoint"));
    this.templates = new DocumentTable(db, "mgmt_templates", envSecrets<TemplateRecord>(sealer, "template"));
    this.volumes = new DocumentTable(db, "mgmt_network_volumes");
    this.registryAuths = new DocumentTable(db, "mgmt_registry_auths", passwordSecret(sealer));
    this.pods = new DocumentTable(db, "mgmt_pods", envSecrets<PodRecord>(sealer, "pod"));
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
    this.#templateNames = db.prepare("SELECT id, name FROM mgmt_templates WHERE account_id = ?");
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
    this.#authNames = db.prepare("SELECT id, name FROM mgmt_registry_auths WHERE account_id = ?");
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
    this.#workerUsageRows = db.prepare(
      "SELECT count(*) AS n FROM mgmt_worker_usage WHERE account_id = ? AND endpoint_id = ? AND hour_ms = ?",
    );
    this.#mergeWorkerUsage = db.prepare(
      `UPDATE mgmt_worker_usage SET from_ms = min(from_ms, ?), until_ms = max(until_ms, ?),
         billed_ms = billed_ms + ?
       WHERE account_id = ? AND endpoint_id = ? AND hour_ms = ? AND pod_id IS NULL AND template_id = ?
         AND image_name = ? AND gpu_type_id IS ? AND gpu_count = ? AND data_center_ids = ?
         AND compute_type = ? AND usd_per_gpu_hour = ?`,
    );
    this.#insertWorkerUsage = db.prepare(
      `INSERT INTO mgmt_worker_usage (account_id, endpoint_id, pod_id, template_id, image_name, gpu_type_id,
         gpu_count, data_center_ids, compute_type, usd_per_gpu_hour, hour_ms, from_ms, until_ms, billed_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#workerUsage = db.prepare(
      `SELECT endpoint_id AS endpointId, pod_id AS podId, template_id AS templateId, image_name AS imageName,
         gpu_type_id AS gpuTypeId, gpu_count AS gpuCount, data_center_ids AS dataCenterIds,
         compute_type AS computeType, usd_per_gpu_hour AS usdPerGpuHour, hour_ms AS hourMs, from_ms AS fromMs,
         until_ms AS untilMs, billed_ms AS billedMs
       FROM mgmt_worker_usage WHERE account_id = ? AND hour_ms >= ? AND hour_ms < ? ORDER BY hour_ms, from_ms`,
    );
    this.#pruneWorkerUsage = db.prepare("DELETE FROM mgmt_worker_usage WHERE hour_ms < ?");
    // Ended periods only: a running pod's, or a volume's current size, is billed until now.
    this.#prunePodUsage = db.prepare(
      "DELETE FROM mgmt_pod_usage WHERE until_ms IS NOT NULL AND until_ms < ?",
    );
    this.#pruneVolumeUsage = db.prepare(
      "DELETE FROM mgmt_volume_usage WHERE until_ms IS NOT NULL AND until_ms < ?",
    );
    this.#extendWorkerUsage = db.prepare(
      `UPDATE mgmt_worker_usage SET until_ms = ?, billed_ms = billed_ms + ?
       WHERE account_id = ? AND endpoint_id = ? AND pod_id = ? AND hour_ms = ? AND until_ms = ?`,
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
    checkKey(db, sealer);
    this.#sealPlainRows();
  }

  /**
   * Runs a rewrite of stored documents that a migration left pending (migrations.ts
   * management-007-pending-rewrites), in one transaction with its removal from the list: once.
   */
  rewriteOnce(name: string, rewrite: () => void): void {
    this.transaction(() => {
      if (
        Number(this.#db.prepare("DELETE FROM mgmt_pending_rewrites WHERE name = ?").run(name).changes) === 0
      ) {
        return;
      }
      rewrite();
    });
  }

  /**
   * The migration to sealed secrets: rows stored in plain text (before sealing existed) are sealed,
   * then the file is rebuilt (VACUUM) and the WAL emptied, so no plain copy stays in free pages.
   */
  #sealPlainRows(): void {
    const rewritten = this.transaction(
      () =>
        this.templates.sealPlainRows() +
        this.endpoints.sealPlainRows() +
        this.registryAuths.sealPlainRows() +
        this.pods.sealPlainRows() +
        this.#sealPlainSecretValues(),
    );
    if (rewritten === 0) return;
    this.#db.exec("VACUUM");
    this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }

  /** Seals secret values stored in plain text; returns how many it rewrote. */
  #sealPlainSecretValues(): number {
    const rows = this.#db.prepare("SELECT account_id, id, value FROM mgmt_secrets").all() as {
      account_id: string;
      id: string;
      value: string;
    }[];
    const seal = this.#db.prepare("UPDATE mgmt_secrets SET value = ? WHERE account_id = ? AND id = ?");
    let rewritten = 0;
    for (const row of rows) {
      if (Sealer.isSealed(row.value)) continue;
      seal.run(this.#sealer.seal(row.value), row.account_id, row.id);
      rewritten++;
    }
    return rewritten;
  }

  /** Runs `fn` in one transaction: all of a change is written, or none. Nested calls join the outer one. */
  transaction<T>(fn: () => T): T {
    try {
      return transaction(this.#db, fn);
    } catch (error) {
      // A store that refuses writes (its disk full, its file damaged) is the service's state, not a
      // bug of the request: 503 naming the store and why, never a 500 "Internal server error".
      const why = sqliteReason(error);
      if (why === null) throw error;
      throw new ServiceError(
        "UNAVAILABLE",
        `the store ${this.#db.location() ?? ":memory:"} could not write the change: ${why}; try again`,
        // The SQLite error, for a failure at start (index.ts startFailure); replies never show it.
        { retryAfterMs: 1_000, cause: error },
      );
    }
  }

  putEndpoint(record: EndpointRecord): void {
    const { accountId, id } = record;
    this.#putEndpoint.run(accountId, id, record.templateId, record.createdAt, this.endpoints.write(record));
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
    return (this.#endpointsUsingTemplate.all(accountId, templateId) as unknown as DataRow[]).map((row) =>
      this.endpoints.read(row.data),
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
      this.templates.write(record),
    );
  }

  /**
   * The template named `name` as written, else the one whose name is the same in the canonical
   * spelling (canonicalName: " web " and "web", NFD and NFC are one name; names stored before that
   * rule keep their spelling).
   */
  templateByName(accountId: string, name: string): TemplateRecord | undefined {
    const row = this.#templateByName.get(accountId, name) as DataRow | undefined;
    if (row) return this.templates.read(row.data);
    const id = idOfName(this.#templateNames.all(accountId) as unknown as NameRow[], name);
    return id === undefined ? undefined : this.templates.get(accountId, id);
  }

  templateIdsUsingAuth(accountId: string, authId: string): string[] {
    return (this.#templatesUsingAuth.all(accountId, authId) as { id: string }[]).map((row) => row.id);
  }

  /** Stores the volume and, when its size is new, starts a new usage period at `now`. */
  putVolume(record: NetworkVolumeRecord, previousSize: number | undefined, now: number): void {
    this.#putVolume.run(record.accountId, record.id, record.createdAt, this.volumes.write(record));
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
    this.#putAuth.run(
      record.accountId,
      record.id,
      record.name,
      record.createdAt,
      this.registryAuths.write(record),
    );
  }

  /** The registry auth named `name`, as templateByName finds a template. */
  registryAuthByName(accountId: string, name: string): RegistryAuthRecord | undefined {
    const row = this.#authByName.get(accountId, name) as DataRow | undefined;
    if (row) return this.registryAuths.read(row.data);
    const id = idOfName(this.#authNames.all(accountId) as unknown as NameRow[], name);
    return id === undefined ? undefined : this.registryAuths.get(accountId, id);
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
      this.pods.write(record),
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

  /**
   * Adds a worker's time within one hour (at its stop, or at a checkpoint while it runs): to its own
   * row of the hour when the time continues it, else as its own row while the endpoint has fewer than
   * `podRowsCap` rows in that hour, else to the hour's merged row of the same billing (pod_id NULL).
   */
  addWorkerUsage(accountId: string, row: WorkerUsageRow, podRowsCap: number): void {
    const dataCenterIds = JSON.stringify(row.dataCenterIds);
    const billing = [
      row.templateId,
      row.imageName,
      row.gpuTypeId,
      row.gpuCount,
      dataCenterIds,
      row.computeType,
      row.usdPerGpuHour,
    ] as const;
    // A checkpointed worker's row of this hour grows (one row per worker and hour, not per checkpoint).
    if (row.podId !== null) {
      const extended = this.#extendWorkerUsage.run(
        row.untilMs,
        row.billedMs,
        accountId,
        row.endpointId,
        row.podId,
        row.hourMs,
        row.fromMs,
      );
      if (Number(extended.changes) > 0) return;
    }
    const { n } = this.#workerUsageRows.get(accountId, row.endpointId, row.hourMs) as { n: number };
    if (n >= podRowsCap) {
      const merged = this.#mergeWorkerUsage.run(
        row.fromMs,
        row.untilMs,
        row.billedMs,
        accountId,
        row.endpointId,
        row.hourMs,
        ...billing,
      );
      if (Number(merged.changes) > 0) return;
    }
    this.#insertWorkerUsage.run(
      accountId,
      row.endpointId,
      n >= podRowsCap ? null : row.podId,
      ...billing,
      row.hourMs,
      row.fromMs,
      row.untilMs,
      row.billedMs,
    );
  }

  /** The account's stopped workers' time in the hours from `fromHourMs` until `untilMs`. */
  workerUsage(accountId: string, fromHourMs: number, untilMs: number): WorkerUsageRow[] {
    const rows = this.#workerUsage.all(accountId, fromHourMs, untilMs) as unknown as (Omit<
      WorkerUsageRow,
      "dataCenterIds"
    > & { dataCenterIds: string })[];
    return rows.map((row) => ({ ...row, dataCenterIds: JSON.parse(row.dataCenterIds) as string[] }));
  }

  /**
   * Deletes billed time before `before` (all accounts): the workers' time of the hours before it, and
   * the rented pods' running periods and volumes' sizes that ended before it.
   */
  pruneUsage(before: number): void {
    this.#pruneWorkerUsage.run(before);
    this.#prunePodUsage.run(before);
    this.#pruneVolumeUsage.run(before);
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
      this.#sealer.seal(value),
      record.createdAt,
    );
  }

  updateSecretValue(accountId: string, id: string, value: string, now: number): void {
    this.#updateSecretValue.run(this.#sealer.seal(value), now, accountId, id);
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
    return new Map(rows.map((row) => [row.name, this.#sealer.open(row.value, `secret ${row.name} value`)]));
  }
}

/** Known text sealed into every store: opening it proves the key is the store's. */
const KEY_CHECK = "runpodkit store key check";

/** Refuses a key the store's secrets were not sealed with, before any secret is read. */
function checkKey(db: DatabaseSync, sealer: Sealer): void {
  const row = db.prepare("SELECT check_value FROM mgmt_sealing WHERE id = 1").get() as
    | { check_value: string }
    | undefined;
  if (!row) {
    db.prepare("INSERT INTO mgmt_sealing (id, check_value) VALUES (1, ?)").run(sealer.seal(KEY_CHECK));
    return;
  }
  let opened: string | undefined;
  try {
    opened = sealer.open(row.check_value, "the store's key check");
  } catch {
    opened = undefined;
  }
  if (opened !== KEY_CHECK && sealer.createdFile) {
    // The key file was made just now, for a store that has secrets: its own key file is missing.
    rmSync(sealer.createdFile, { force: true });
    throw new StoreKeyError(
      `opening the store: its key file ${sealer.createdFile} is missing (its secrets were sealed with it); restore it, or give the key in ${STORE_KEY_ENV}`,
    );
  }
  if (opened !== KEY_CHECK) {
    throw new StoreKeyError(
      `opening the store: its secrets were sealed with another key than the one from ${sealer.source} (give the store's own key file or ${STORE_KEY_ENV})`,
    );
  }
}

interface NameRow {
  id: string;
  name: string;
}

/** The id of the row whose name is `name` in the canonical spelling (the first such, by the store's order). */
function idOfName(rows: readonly NameRow[], name: string): string | undefined {
  return rows.find((row) => sameName(row.name, name))?.id;
}
