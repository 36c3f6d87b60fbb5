import type { Migration } from "../../db";

/**
 * Tables of the management plane. Each resource is one JSON document (`data`) keyed by
 * (account_id, id), with the columns the rules query on (names, references) kept beside it, so a
 * rule such as "template name unique per account" is a UNIQUE index rather than code.
 */
export const managementMigrations: Migration[] = [
  {
    name: "management-001-resources",
    sql: `
      CREATE TABLE mgmt_templates (
        account_id TEXT NOT NULL,
        id TEXT NOT NULL,
        name TEXT NOT NULL,
        registry_auth_id TEXT,
        created_at INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (account_id, id),
        UNIQUE (account_id, name)
      );
      CREATE TABLE mgmt_endpoints (
        account_id TEXT NOT NULL,
        id TEXT NOT NULL,
        template_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (account_id, id)
      );
      CREATE INDEX mgmt_endpoints_template ON mgmt_endpoints (account_id, template_id);
      CREATE TABLE mgmt_endpoint_volumes (
        account_id TEXT NOT NULL,
        endpoint_id TEXT NOT NULL,
        volume_id TEXT NOT NULL,
        PRIMARY KEY (account_id, endpoint_id, volume_id)
      );
      CREATE INDEX mgmt_endpoint_volumes_volume ON mgmt_endpoint_volumes (account_id, volume_id);
      CREATE TABLE mgmt_network_volumes (
        account_id TEXT NOT NULL,
        id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (account_id, id)
      );
      -- Size history of every volume, kept after deletion, for storage billing.
      CREATE TABLE mgmt_volume_usage (
        account_id TEXT NOT NULL,
        volume_id TEXT NOT NULL,
        size_gb INTEGER NOT NULL,
        from_ms INTEGER NOT NULL,
        until_ms INTEGER
      );
      CREATE INDEX mgmt_volume_usage_account ON mgmt_volume_usage (account_id, volume_id);
      CREATE TABLE mgmt_registry_auths (
        account_id TEXT NOT NULL,
        id TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (account_id, id),
        UNIQUE (account_id, name)
      );
    `,
  },
  {
    name: "management-002-users-pods-secrets",
    sql: `
      -- Per-account settings (the SSH public key pods would get).
      CREATE TABLE mgmt_user_settings (
        account_id TEXT NOT NULL PRIMARY KEY,
        pub_key TEXT NOT NULL DEFAULT ''
      );
      -- Rented pods (serverless workers are the job plane's and are not stored here).
      CREATE TABLE mgmt_pods (
        account_id TEXT NOT NULL,
        id TEXT NOT NULL,
        template_id TEXT,
        network_volume_id TEXT,
        registry_auth_id TEXT,
        created_at INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (account_id, id)
      );
      CREATE INDEX mgmt_pods_template ON mgmt_pods (account_id, template_id);
      CREATE INDEX mgmt_pods_volume ON mgmt_pods (account_id, network_volume_id);
      CREATE INDEX mgmt_pods_auth ON mgmt_pods (account_id, registry_auth_id);
      -- Running periods of every pod at its price then, kept after termination, for billing.
      CREATE TABLE mgmt_pod_usage (
        account_id TEXT NOT NULL,
        pod_id TEXT NOT NULL,
        gpu_type_id TEXT,
        usd_per_hour REAL NOT NULL,
        from_ms INTEGER NOT NULL,
        until_ms INTEGER
      );
      CREATE INDEX mgmt_pod_usage_account ON mgmt_pod_usage (account_id, pod_id);
      -- Secrets: the value has its own column, which no reply ever selects.
      CREATE TABLE mgmt_secrets (
        account_id TEXT NOT NULL,
        id TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT,
        value TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER,
        PRIMARY KEY (account_id, id),
        UNIQUE (account_id, name)
      );
    `,
  },
  {
    // One row: a known text sealed with the store key, to tell a wrong key at open (sealing.ts).
    name: "management-003-sealing",
    sql: `
      CREATE TABLE mgmt_sealing (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        check_value TEXT NOT NULL
      );
    `,
  },
  {
    // Fields added to stored documents: templates' startScript (and startSsh/startJupyter, stored
    // since pods), volumes' storageType. json_insert only adds what a document lacks.
    name: "management-004-template-start-volume-storage",
    sql: `
      UPDATE mgmt_templates SET data = json_insert(data,
        '$.startSsh', json('false'), '$.startJupyter', json('false'), '$.startScript', '');
      UPDATE mgmt_network_volumes SET data = json_insert(data, '$.storageType', 'MOOSE_FS');
    `,
  },
  {
    // Running time of serverless workers that stopped (the job plane keeps no history), for billing:
    // one row per worker per UTC hour it ran in; past a cap per endpoint and hour, a worker's time
    // is added to a merged row (pod_id NULL). Rows past the retention are deleted (model/billing.ts).
    name: "management-005-worker-usage",
    sql: `
      CREATE TABLE mgmt_worker_usage (
        account_id TEXT NOT NULL,
        endpoint_id TEXT NOT NULL,
        pod_id TEXT,
        template_id TEXT NOT NULL,
        image_name TEXT NOT NULL,
        gpu_type_id TEXT,
        gpu_count INTEGER NOT NULL,
        data_center_ids TEXT NOT NULL,
        compute_type TEXT NOT NULL,
        usd_per_gpu_hour REAL NOT NULL,
        hour_ms INTEGER NOT NULL,
        from_ms INTEGER NOT NULL,
        until_ms INTEGER NOT NULL,
        billed_ms INTEGER NOT NULL
      );
      CREATE INDEX mgmt_worker_usage_endpoint ON mgmt_worker_usage (account_id, endpoint_id, hour_ms);
      CREATE INDEX mgmt_worker_usage_account ON mgmt_worker_usage (account_id, hour_ms);
      CREATE INDEX mgmt_worker_usage_hour ON mgmt_worker_usage (hour_ms);
    `,
  },
  {
    // GraphQL's dockerArgs kept as written beside the argv (records.ts DockerArgs). Stored commands
    // were set as argvs: null, so GraphQL shows them formatted from dockerStartCmd as before.
    name: "management-006-docker-args",
    sql: `
      UPDATE mgmt_templates SET data = json_insert(data, '$.dockerArgs', json('null'));
      UPDATE mgmt_pods SET data = json_insert(data, '$.dockerArgs', json('null'));
    `,
  },
  {
    // Rewrites of stored documents that SQL cannot express, each done once at the next start
    // (ManagementStore.rewriteOnce): lists stored before they were kept canonical (an endpoint's
    // gpuTypeIds, gpuIds "AMPERE_16, AMPERE_16", a template's or pod's ports given twice).
    name: "management-007-pending-rewrites",
    sql: `
      CREATE TABLE mgmt_pending_rewrites (name TEXT NOT NULL PRIMARY KEY);
      INSERT INTO mgmt_pending_rewrites (name) VALUES ('canonical-lists');
    `,
  },
];
