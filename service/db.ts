import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  realpathSync,
  type Stats,
  statfsSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve, sep } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { type CheckpointPolicy, WalCheckpointer } from "./db-checkpoint";
import { processExists } from "./service-address";

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
 * The store could not be opened or created at `path` (the CLI's --data): `reason` says why in words
 * (no stack trace is needed to act on it), `message` names the path too.
 */
export class StoreOpenError extends Error {
  readonly path: string;
  readonly reason: string;
  constructor(path: string, reason: string, options?: ErrorOptions) {
    super(`the store ${path} cannot be opened: ${reason}`, options);
    this.name = "StoreOpenError";
    this.path = path;
    this.reason = reason;
  }
}

/**
 * Kernel file systems whose files are not storage: a directory cannot be made there (Node's recursive
 * mkdir under /proc loops forever on its ENOENT), and a file there is no place for a database.
 */
const PSEUDO_FILE_SYSTEMS = ["/proc", "/sys", "/dev"];

/** The first bytes of every SQLite database file. */
const SQLITE_HEADER = Buffer.from("SQLite format 3\0", "latin1");

/** A WAL file left larger than this when SQLite starts it over is cut back to it. */
export const WAL_SIZE_LIMIT = 8 * 1024 * 1024;

/**
 * Free space the store keeps for the rows to come (releaseFreePages gives back only the rest): a
 * service whose jobs come and expire at a steady rate reuses it instead of giving pages back and
 * growing the file again every sweep.
 */
export const FREE_SPACE_KEPT = 8 * 1024 * 1024;

/**
 * An existing store without incremental auto-vacuum (written before it) is switched by a VACUUM at
 * open, which rewrites its live rows (a copy in the temporary directory, then through the WAL): only
 * while they are at most this large, so a start is never held for long (64 MB: about a second). A
 * larger one starts as it is, and is switched at a later start once its rows have expired.
 */
export const VACUUM_AT_OPEN_LIMIT = 64 * 1024 * 1024;

/** SQLite's `auto_vacuum` setting: free pages move to the file's end and are cut off on demand. */
const AUTO_VACUUM_INCREMENTAL = 2;

/**
 * The service's connection to its store. For a file, SQLite's auto-checkpoint is off and a
 * `WalCheckpointer` copies the WAL back off the event loop (`transaction` tells it of each commit);
 * `close` ends it first, leaving the WAL truncated. ":memory:" has no WAL and no checkpointer.
 */
export class StoreDatabase extends DatabaseSync {
  readonly checkpointer: WalCheckpointer | null;
  /** Releases the store's lock file (storeLock), once closed. */
  release: () => void = () => {};
  #begin: StatementSync | null = null;
  #commit: StatementSync | null = null;

  /** The file as opened (or ":memory:"). */
  readonly path: string;

  constructor(path: string, checkpoint: Partial<CheckpointPolicy> | false = {}) {
    super(path);
    this.path = path;
    this.checkpointer =
      path === ":memory:" || checkpoint === false ? null : new WalCheckpointer(path, this, checkpoint);
  }

  /** BEGIN IMMEDIATE and COMMIT, prepared once (`transaction` runs them for every flush). */
  get begin(): StatementSync {
    this.#begin ??= this.prepare("BEGIN IMMEDIATE");
    return this.#begin;
  }

  get commit(): StatementSync {
    this.#commit ??= this.prepare("COMMIT");
    return this.#commit;
  }

  /**
   * Gives back to the file system at most `maxPages` of the store's free pages (those left by deleted
   * rows) beyond FREE_SPACE_KEPT, in one short transaction: the file shrinks once the checkpointer has
   * copied it back. Bounded, so each call holds the event loop briefly (the job plane's sweep calls it
   * again while pages remain). Returns how many pages it gave back; 0 for a store without incremental
   * auto-vacuum (see VACUUM_AT_OPEN_LIMIT) or ":memory:".
   */
  releaseFreePages(maxPages: number): number {
    const setting = this.prepare("PRAGMA auto_vacuum").get() as { auto_vacuum: number };
    if (setting.auto_vacuum !== AUTO_VACUUM_INCREMENTAL) return 0;
    const { page_size: pageSize } = this.prepare("PRAGMA page_size").get() as { page_size: number };
    const free = this.#freePages();
    const pages = Math.min(Math.floor(maxPages), free - Math.ceil(FREE_SPACE_KEPT / pageSize));
    if (pages <= 0) return 0;
    transaction(this, () => this.exec(`PRAGMA incremental_vacuum(${pages})`));
    const released = free - this.#freePages();
    this.checkpointer?.wrote(released * pageSize);
    return released;
  }

  #freePages(): number {
    return (this.prepare("PRAGMA freelist_count").get() as { freelist_count: number }).freelist_count;
  }

  override close(): void {
    try {
      // A last checkpoint that fails (a full disk, a damaged file) leaves the WAL for the next open;
      // the connection is still closed and the lock released.
      if (this.isOpen) this.checkpointer?.close();
    } finally {
      if (this.isOpen) super.close();
      this.release();
      this.release = () => {};
    }
  }
}

export interface OpenDatabaseOptions {
  /** When checkpoints are asked for (tests use small figures); false: SQLite's auto-checkpoint. */
  checkpoint?: Partial<CheckpointPolicy> | false;
  /** What the open did to the file that an operator should know (a store switched to auto-vacuum). */
  log?: (message: string) => void;
  /** The most live bytes a store without auto-vacuum is rewritten at open to switch it (tests use small figures). */
  vacuumAtOpenLimit?: number;
}

/**
 * Opens the embedded store: a SQLite file in WAL mode, or ":memory:". Applies each migration once,
 * in order, recording it by name, so parts of the service can add tables independently. A store
 * holding a migration not in `migrations` (a newer version's) is refused: pass every part's list.
 *
 * Durability: `synchronous = NORMAL` in WAL mode, so a commit is written to the WAL before it returns
 * (an ended process loses nothing committed) but not fsynced; a power loss or OS crash may lose the
 * last commits, never the file's consistency. Checkpoints (which fsync) run on the checkpointer's
 * thread, not inside a commit.
 */
export function openDatabase(
  path: string,
  migrations: readonly Migration[],
  options: OpenDatabaseOptions = {},
): StoreDatabase {
  if (path === ":memory:")
    return migrated(new StoreDatabase(path, options.checkpoint ?? {}), migrations, options);
  let db: StoreDatabase | null = null;
  let release: (() => void) | null = null;
  try {
    prepareStoreFile(path);
    release = storeLock(path);
    db = new StoreDatabase(path, options.checkpoint ?? {});
    db.release = release;
    return migrated(db, migrations, options);
  } catch (error) {
    // Closing must not replace the reason the store did not open (a damaged file fails its checkpoint too).
    try {
      if (db?.isOpen) db.close();
      else release?.();
    } catch {
      release?.();
    }
    // Named with the path: SQLite's and the file system's own messages ("file is not a database") do not say which file.
    if (error instanceof StoreOpenError) throw error;
    throw new StoreOpenError(path, reasonOf(error), { cause: error });
  }
}

/**
 * One service per store file. A second service on the same file would requeue the first's running
 * jobs as if it had stopped, run them again, and start its own workers for every endpoint; it is
 * refused, naming the first.
 *
 * What excludes it is a lock the kernel holds for this process: `<file>.lock.sqlite`, an empty SQLite
 * file held in an exclusive transaction while the store is open (SQLite's fcntl lock; node has no
 * flock). The kernel drops it when the process dies however it dies, so there is no stale lock to take
 * over: the pid file this replaced could be taken over by two services at once, each removing the
 * other's. The file is never removed (a service could lock a removed file while the next one creates
 * another); this process must never open and close it through node:fs, which would drop the lock.
 *
 * `<file>.lock` still holds the pid of the process that has the store open (0600, removed on close),
 * then what tells that process from a later one given the same pid (processIdentity): it names the
 * holder in the refusal, and excludes an older runpodkit (which knows only that file) both ways.
 * The same process may open its store again (tests reopen one in-process to play a restart): they
 * share the lock, released with the last close.
 */
function storeLock(path: string): () => void {
  const key = realpathSync(path);
  const shared = heldLocks.get(key);
  if (shared) {
    shared.count++;
    return once(() => shared.release());
  }
  const lock = `${path}.lock`;
  const kernel = kernelLock(path, lock);
  try {
    pidLock(lock);
  } catch (error) {
    kernel.close();
    throw error;
  }
  const own = String(process.pid);
  const held = {
    count: 1,
    release: () => {
      if (--held.count > 0) return;
      heldLocks.delete(key);
      try {
        if (readFileSync(lock, "utf8").split("\n")[0]?.trim() === own) unlinkSync(lock);
      } catch {
        // Already gone.
      } finally {
        // Last: the next service may take the store once this is closed.
        kernel.close();
      }
    },
  };
  heldLocks.set(key, held);
  return once(() => held.release());
}

/** The store locks this process holds, by the store's real path, with how many opens share each. */
const heldLocks = new Map<string, { count: number; release: () => void }>();

/** `fn`, run at most once however often it is called. */
function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}

/** How long a start waits for the kernel's lock (see kernelLock). */
const KERNEL_LOCK_WAIT_MS = 1000;

/** SQLite's "database is locked": another connection holds the lock asked for. */
const SQLITE_BUSY = 5;

/**
 * Takes the kernel's lock on `<path>.lock.sqlite` for this process (see storeLock), or refuses,
 * naming the holder from the pid file `lock` where it tells.
 */
function kernelLock(path: string, lock: string): DatabaseSync {
  const file = `${lock}.sqlite`;
  // The timeout: of two services starting at the same moment, each may hold SQLite's shared lock as
  // it asks for the exclusive one; the one refused drops its shared lock, and the other, waiting for
  // that, takes it. Without it both are refused. A refused start waits this long.
  const db = new DatabaseSync(file);
  try {
    // A pragma, not the constructor's `timeout` option, which the lowest supported Node may lack.
    db.exec(`PRAGMA busy_timeout = ${KERNEL_LOCK_WAIT_MS}`);
    // No journal file: BEGIN EXCLUSIVE made `<lock>.sqlite-journal` (0644, by the umask), left beside
    // the store by a killed service. The transaction writes nothing to journal.
    db.exec("PRAGMA journal_mode = MEMORY");
    // Never ended, so held until close.
    db.exec("BEGIN EXCLUSIVE");
    // SQLite creates it with the umask's mode; it holds nothing, but the store's files are all 0600.
    chmodSync(file, STORE_FILE_MODE);
    return db;
  } catch (error) {
    db.close();
    const errcode = (error as { errcode?: unknown } | null)?.errcode;
    // Matched by words too: an older node:sqlite may not give the code.
    const busy =
      typeof errcode === "number"
        ? (errcode & 0xff) === SQLITE_BUSY
        : /database is locked/.test(error instanceof Error ? error.message : "");
    if (busy) {
      const holder = recordedHolder(lock);
      throw new Error(
        `it is in use by another runpodkit service${holder ? ` (pid ${holder})` : ""}: stop that one, or give this one another --data (two services on one store would run each other's jobs again)`,
      );
    }
    throw new StoreOpenError(path, `its lock file ${file} cannot be used: ${reasonOf(error)}`, {
      cause: error,
    });
  }
}

/**
 * Writes this process's pid and identity to the pid file `lock`, under the kernel's lock: a file
 * there is a killed service's, unless it names a live process (an older runpodkit, which takes no
 * kernel lock), which is refused as the kernel's lock refuses.
 */
function pidLock(lock: string): void {
  const holder = recordedHolder(lock, true);
  if (holder !== null && holder !== process.pid) {
    throw new Error(
      `it is in use by another runpodkit service (pid ${holder}): stop that one, or give this one another --data (two services on one store would run each other's jobs again)`,
    );
  }
  try {
    unlinkSync(lock);
  } catch {
    // None there.
  }
  // wx: not through a symlink planted there meanwhile.
  const fd = openSync(lock, "wx", STORE_FILE_MODE);
  try {
    writeSync(fd, `${process.pid}\n${processIdentity(process.pid)}\n${KERNEL_LOCKED}\n`);
  } finally {
    closeSync(fd);
  }
}

/**
 * The pid file's third line where the kernel's lock guarded its writer: found by a process holding
 * that lock, it is a killed service's, whatever its pid is now (where no identity tells, a pid given
 * again would otherwise refuse every start).
 */
const KERNEL_LOCKED = "kernel-locked";

/**
 * The pid the pid file `lock` names, while that process is still the one that wrote it; else null.
 * `unlockedOnly`: null for a file a kernel-locked service wrote.
 */
function recordedHolder(lock: string, unlockedOnly = false): number | null {
  try {
    const [pid = "", recorded = "", marker = ""] = readFileSync(lock, "utf8").split("\n");
    if (unlockedOnly && marker.trim() === KERNEL_LOCKED) return null;
    const holder = Number(pid.trim());
    return Number.isInteger(holder) && holder > 0 && holds(holder, recorded.trim()) ? holder : null;
  } catch {
    return null;
  }
}

/**
 * Is the lock's process still the one that took it? Its pid alive is not enough: a lock left by a
 * killed service names a pid the system gives again, to any process (after a reboot, most likely;
 * that one refused every start until the lock was deleted by hand). Where the lock recorded an
 * identity and this system tells one, they must match; elsewhere the pid alone decides.
 */
function holds(pid: number, recorded: string): boolean {
  if (!processExists(pid)) return false;
  if (recorded === "") return true;
  const now = processIdentity(pid);
  return now === "" || now === recorded;
}

/**
 * The boot and the start time of process `pid` (Linux /proc: boot_id, and field 22 of its stat, in
 * clock ticks since boot): no two processes of one boot share both. "" where /proc does not tell.
 */
function processIdentity(pid: number): string {
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command (which may hold spaces and parentheses): state is field 3.
    const started = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    return boot && started && /^\d+$/.test(started) ? `${boot} ${started}` : "";
  } catch {
    return "";
  }
}

/** The store's settings, then each migration not yet applied. */
function migrated(
  db: StoreDatabase,
  migrations: readonly Migration[],
  options: OpenDatabaseOptions,
): StoreDatabase {
  // A new file: free pages can be given back (releaseFreePages). Only before its first table.
  const empty = db.prepare("SELECT count(*) AS n FROM sqlite_schema").get() as { n: number };
  if (empty.n === 0) db.exec("PRAGMA auto_vacuum = INCREMENTAL");
  // Deleted rows (credentials among them) are overwritten, not left in free pages.
  db.exec("PRAGMA secure_delete = ON");
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  if (db.checkpointer) {
    db.exec("PRAGMA wal_autocheckpoint = 0");
    db.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT}`);
  }
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)");
  const applied = new Set(
    (db.prepare("SELECT name FROM migrations").all() as { name: string }[]).map((row) => row.name),
  );
  // A store a newer runpodkit migrated has tables or meanings this version does not know: writing it
  // would leave rows the newer one misreads. Refused before anything is applied, the file left as it is.
  const known = new Set(migrations.map((migration) => migration.name));
  const unknown = [...applied].filter((name) => !known.has(name)).sort();
  if (unknown.length > 0) {
    // openDatabase names the path (as --data gave it).
    throw new Error(
      `it was written by a newer runpodkit (migration${unknown.length === 1 ? "" : "s"} ${unknown.slice(0, 5).join(", ")}${unknown.length > 5 ? `, ... (${unknown.length})` : ""} unknown to this version): run that version or a later one on it, or give this one another --data`,
    );
  }
  const record = db.prepare("INSERT INTO migrations (name, applied_at) VALUES (?, ?)");
  for (const migration of migrations) {
    if (applied.has(migration.name)) continue;
    transaction(db, () => {
      db.exec(migration.sql);
      record.run(migration.name, Date.now());
    });
  }
  if (db.checkpointer) {
    switchToIncrementalVacuum(
      db,
      options.vacuumAtOpenLimit ?? VACUUM_AT_OPEN_LIMIT,
      options.log ?? (() => {}),
    );
  }
  return db;
}

/**
 * A store created before incremental auto-vacuum kept every page its deleted rows left (a burst of
 * 200,000 jobs: 115 MB, however long after they expired). SQLite changes the setting only by a
 * VACUUM, which rewrites the live rows: done here, at open, while they are small (VACUUM_AT_OPEN_LIMIT);
 * the WAL it fills is copied back and cut to nothing before the service answers anything.
 */
function switchToIncrementalVacuum(db: StoreDatabase, limit: number, log: (message: string) => void): void {
  const read = (pragma: string) => Number(Object.values(db.prepare(`PRAGMA ${pragma}`).get() ?? {})[0]);
  if (read("auto_vacuum") === AUTO_VACUUM_INCREMENTAL) return;
  const pageSize = read("page_size");
  const pages = read("page_count");
  const live = (pages - read("freelist_count")) * pageSize;
  const mb = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MB`;
  if (live > limit) {
    log(
      `store: its free space is not given back yet (the file predates auto-vacuum, and its ${mb(live)} of rows are more than a start rewrites, ${mb(limit)}); a start once they have expired switches it`,
    );
    return;
  }
  // VACUUM writes the live rows into the WAL, beside the store, and into a temporary copy (in the
  // temporary directory: the same disk when the store is under /tmp). On a disk without that room (a
  // small tmpfs) it fails once it has filled it: not tried.
  const storeDir = dirname(resolve(db.path));
  const need = live * (sameDevice(storeDir, tmpdir()) ? 2 : 1) + 1024 * 1024;
  const room = freeBytes(storeDir);
  if (room !== null && room < need) {
    log(
      `store: its free space is not given back yet (the file predates auto-vacuum; switching it needs ${mb(need)} free on its disk, which has ${mb(room)}); a later start switches it`,
    );
    return;
  }
  try {
    db.exec("PRAGMA auto_vacuum = INCREMENTAL");
    db.exec("VACUUM");
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    log(
      `store: switched to auto-vacuum (its free space is given back from now on): ${mb(pages * pageSize)} -> ${mb(read("page_count") * pageSize)}`,
    );
  } catch (error) {
    // A full disk after all: the store works as before; the next start tries again. The WAL frames
    // the VACUUM wrote are cut off, so its space is the disk's again.
    try {
      db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch {
      // Left for the checkpointer.
    }
    log(`store: could not be switched to auto-vacuum: ${reasonOf(error)}`);
  }
}

function sameDevice(a: string, b: string): boolean {
  try {
    return statSync(a).dev === statSync(b).dev;
  } catch {
    return true;
  }
}

/** Bytes free on the file system holding `dir` for this user; null where it cannot be told. */
function freeBytes(dir: string): number | null {
  try {
    const stats = statfsSync(dir);
    return stats.bavail * stats.bsize;
  } catch {
    return null;
  }
}

/**
 * Makes the store private before SQLite opens it: a directory it creates is 0700 (an existing one is
 * left as it is: it may be shared, like /tmp), and the file, with its -wal and -shm files, is 0600,
 * created so or narrowed on open. SQLite gives the WAL files it creates the database file's mode.
 */
function prepareStoreFile(path: string): void {
  const absolute = resolve(path);
  const pseudo = PSEUDO_FILE_SYSTEMS.find(
    (root) => absolute === root || absolute.startsWith(`${root}${sep}`),
  );
  if (pseudo) {
    throw new StoreOpenError(
      path,
      `${pseudo} is a kernel file system, not storage: give a file on a disk (or :memory: to keep nothing)`,
    );
  }
  makeStoreDirectory(path, dirname(absolute));
  const existing = statOrNull(absolute);
  if (existing && !existing.isFile()) {
    throw new StoreOpenError(
      path,
      `it is ${kindOf(existing)}, not a file: give the path of a file to create or reuse${existing.isDirectory() ? ` (e.g. ${join(absolute, "runpodkit.sqlite")})` : ""}`,
    );
  }
  const fd = openSync(path, "a+", STORE_FILE_MODE);
  try {
    // A file that is neither empty nor SQLite's (a mistyped --data) is left exactly as it was.
    const head = Buffer.alloc(SQLITE_HEADER.length);
    const read = readSync(fd, head, 0, head.length, 0);
    if (read > 0 && (read < SQLITE_HEADER.length || !head.equals(SQLITE_HEADER))) {
      throw new Error(
        "it is not a SQLite database (the store is a SQLite file the service creates, or :memory:)",
      );
    }
  } finally {
    closeSync(fd);
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (existsSync(file)) chmodSync(file, STORE_FILE_MODE);
  }
}

/**
 * The store's directory and any missing parents, made one level at a time (0700): each step fails at
 * once with its reason, where a recursive mkdir may loop (under /proc) or say only EEXIST of a parent
 * that is a regular file. An existing directory is left as it is (it may be shared, like /tmp).
 */
function makeStoreDirectory(path: string, dir: string): void {
  const missing: string[] = [];
  let at = dir;
  for (;;) {
    const stats = statOrNull(at);
    if (stats) {
      if (!stats.isDirectory()) {
        throw new StoreOpenError(
          path,
          `${at} is ${kindOf(stats)}, not a directory, so nothing can be created under it`,
        );
      }
      break;
    }
    missing.unshift(at);
    const parent = dirname(at);
    if (parent === at) break;
    at = parent;
  }
  for (const each of missing) {
    try {
      mkdirSync(each, { mode: STORE_DIR_MODE });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST" && statOrNull(each)?.isDirectory()) continue;
      throw new StoreOpenError(path, `the directory ${each} cannot be created: ${reasonOf(error)}`, {
        cause: error,
      });
    }
    chmodSync(each, STORE_DIR_MODE);
  }
}

function statOrNull(path: string): Stats | null {
  try {
    return statSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return null;
    // ENOTDIR: a parent is a file; the walk up names it. EACCES: a parent cannot be searched.
    if (code === "ENOTDIR") return null;
    throw error;
  }
}

function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return "a directory";
  if (stats.isFile()) return "a regular file";
  if (stats.isFIFO()) return "a FIFO (named pipe)";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return "a device";
  return "not a regular file";
}

/** A file-system error in words, with its code: "permission denied (EACCES)". */
function reasonOf(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const words: Record<string, string> = {
    EACCES: "permission denied: the service's user may not write there",
    EPERM: "operation not permitted",
    EROFS: "the file system is read-only",
    ENOSPC: "no space left on the device",
    ENAMETOOLONG: "the path is too long",
    ELOOP: "too many symbolic links",
  };
  // What to do instead, where the store's place cannot be fixed by retrying.
  const elsewhere = "give a file where it may (or :memory: to keep nothing)";
  const fixes: Record<string, string> = {
    EACCES: elsewhere,
    EPERM: elsewhere,
    EROFS: "give a file on a writable one (or :memory: to keep nothing)",
    ENOSPC: "free space there, or give a file on another disk",
  };
  if (typeof code === "string" && words[code])
    return `${words[code]} (${code})${fixes[code] ? `: ${fixes[code]}` : ""}`;
  const sqlite = sqliteReason(error);
  if (sqlite) return sqlite;
  return error instanceof Error ? error.message : String(error);
}

/** SQLite's primary result codes the store's errors are explained for. */
const SQLITE_CORRUPT = 11;
const SQLITE_FULL = 13;
const SQLITE_NOTADB = 26;

/**
 * A SQLite error an operator can act on, in words: a damaged file (truncated, overwritten) or a full
 * disk. Null for any other error.
 */
export function sqliteReason(error: unknown): string | null {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  if (typeof errcode !== "number") return null;
  const said = (error as { errstr?: unknown }).errstr;
  const errstr = typeof said === "string" ? said : "";
  // Extended result codes carry the primary one in their low byte.
  const primary = errcode & 0xff;
  if (primary === SQLITE_CORRUPT || primary === SQLITE_NOTADB) {
    return `the file is damaged (${errstr}; truncated or overwritten?): the service leaves it as it is; restore it from a backup, or move it and its -wal and -shm files aside to start an empty store`;
  }
  if (primary === SQLITE_FULL) return `the disk holding it is full (${errstr}): free space there`;
  return null;
}

/**
 * Runs `fn` in one transaction: all of it is written, or none of it. Nested calls join the outer one.
 * Each commit is counted by the store's WAL checkpointer.
 */
export function transaction<T>(db: DatabaseSync, fn: () => T): T {
  if (db.isTransaction) return fn();
  const store = db instanceof StoreDatabase ? db : null;
  if (store) store.begin.run();
  else db.exec("BEGIN IMMEDIATE");
  try {
    const result = fn();
    if (store) {
      store.commit.run();
      store.checkpointer?.committed();
    } else db.exec("COMMIT");
    return result;
  } catch (error) {
    // SQLite has already rolled back after some failures (SQLITE_FULL, SQLITE_IOERR): a ROLLBACK then
    // throws "no transaction is active", which would hide the reason (the disk is full).
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}
