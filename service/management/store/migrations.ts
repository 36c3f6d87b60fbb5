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
    // One row: a known text sealed with the store key, to tell a wrong key at open (sealing.ts).
    name: "management-002-sealing",
    sql: `
      CREATE TABLE mgmt_sealing (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        check_value TEXT NOT NULL
      );
    `,
  },
];
