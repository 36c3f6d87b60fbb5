import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";

/** One named, ordered schema change. Each part of the service owns its own list. */
export interface Migration {
  name: string;
  sql: string;
}

/** The store file, its WAL and shared-memory files: readable and writable by the service's user only. */
export const STORE_FILE_MODE = 0o600;
/** A directory the service creates for its store. */
export const STORE_DIR_MODE = 0o700;

/**
 * Opens the embedded store: a SQLite file in WAL mode, or ":memory:". Applies each migration once,
 * in order, recording it by name, so parts of the service can add tables independently.
 */
export function openDatabase(path: string, migrations: readonly Migration[]): DatabaseSync {
  if (path !== ":memory:") prepareStoreFile(path);
  const db = new DatabaseSync(path);
  // Deleted rows (credentials among them) are overwritten, not left in free pages.
  db.exec("PRAGMA secure_delete = ON");
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

/**
 * Makes the store private before SQLite opens it: a directory it creates is 0700 (an existing one is
 * left as it is: it may be shared, like /tmp), and the file, with its -wal and -shm files, is 0600,
 * created so or narrowed on open. SQLite gives the WAL files it creates the database file's mode.
 */
function prepareStoreFile(path: string): void {
  const dir = dirname(path);
  if (mkdirSync(dir, { recursive: true, mode: STORE_DIR_MODE }) !== undefined) chmodSync(dir, STORE_DIR_MODE);
  closeSync(openSync(path, "a", STORE_FILE_MODE));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (existsSync(file)) chmodSync(file, STORE_FILE_MODE);
  }
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
