import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";

/** One named, ordered schema change. Each part of the service owns its own list. */
export interface Migration {
  name: string;
  sql: string;
}

/**
 * Opens the embedded store: a SQLite file in WAL mode, or ":memory:". Applies each migration once,
 * in order, recording it by name, so parts of the service can add tables independently.
 */
export function openDatabase(path: string, migrations: readonly Migration[]): DatabaseSync {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)");
  const applied = new Set(
    (db.prepare("SELECT name FROM migrations").all() as { name: string }[]).map((row) => row.name),
  );
  const record = db.prepare("INSERT INTO migrations (name, applied_at) VALUES (?, ?)");
  for (const migration of migrations) {
    if (applied.has(migration.name)) continue;
    transaction(db, () => {
      db.exec(migration.sql);
      record.run(migration.name, Date.now());
    });
  }
  return db;
}

/** Runs `fn` in one transaction: all of it is written, or none of it. Nested calls join the outer one. */
export function transaction<T>(db: DatabaseSync, fn: () => T): T {
  if (db.isTransaction) return fn();
  db.exec("BEGIN IMMEDIATE");
  try {
    const result = fn();
    db.exec("COMMIT");
    return result;
  } catch (error) {
    db.exec("ROLLBACK");
    throw error;
  }
}
