import type { DatabaseSync, SQLInputValue, StatementSync } from "node:sqlite";
import { JOB_STATUSES, type JobPolicy, type JobStatus, type S3Config } from "../../../sdk/schemas/job";
import type { Clock, Timer } from "../../clock";
import { type Migration, StoreDatabase, sqliteReason, transaction } from "../../db";
import type { WalCheckpointer } from "../../db-checkpoint";
import { ServiceError } from "../../errors";
import { emptied, without } from "../book/collections";
import type { JobMemory } from "../book/memory";
import { expiresAt, type InputSource, isTerminal, type Job, type JobKind, jobFrom } from "../model/job";
import { hashOf, RowIndex } from "./row-index";

/**
 * The job plane's table. Rows are keyed by a sequence number the store assigns in increasing order,
 * not by the random job id: inserts then append to the end of the B-tree instead of touching a random
 * page each (an order of magnitude less write work per job). Ids are resolved through an in-memory
 * index (id hash -> seq, `RowIndex`) rebuilt from the table at start, 12-24 bytes per kept job outside
 * the V8 heap.
 */
export const jobMigrations: Migration[] = [
  {
    name: "jobs-002-sequential-rows",
    sql: `
      DROP TABLE IF EXISTS jobs;
      CREATE TABLE jobs (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        account_id TEXT NOT NULL,
        endpoint_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        input TEXT NOT NULL,
        webhook TEXT,
        policy TEXT,
        s3_config TEXT,
        execution_timeout_ms INTEGER NOT NULL,
        ttl_ms INTEGER NOT NULL,
        low_priority INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        queued_at INTEGER NOT NULL,
        started_at INTEGER,
        completed_at INTEGER,
        worker_id TEXT,
        output TEXT,
        error TEXT,
        retries INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      -- Expiry times grow with time, so this index is appended to as well.
      CREATE INDEX jobs_by_expiry ON jobs (expires_at);
    `,
  },
  {
    // The id's hash as the row index keeps it (hashOf), written with the row, so the scan at start
    // reads numbers instead of the id's text. Rows written before it have none (NULL): the scan
    // hashes their id as before.
    name: "jobs-003-id-hash",
    sql: "ALTER TABLE jobs ADD COLUMN id_hash INTEGER;",
  },
  {
    // The requeues after lost workers since the job's submission or its client's last /retry (the
    // budget maxRetries bounds), apart from `retries`, which counts client retries too. Rows written
    // before kept one count for both: it stands for both, as it did.
    name: "jobs-004-lost-worker-retries",
    sql: `ALTER TABLE jobs ADD COLUMN lost_retries INTEGER NOT NULL DEFAULT 0;
      UPDATE jobs SET lost_retries = retries;`,
  },
  {
    // The columns the scan at start reads (JobStore.#scan) first, the input and output last: SQLite
    // reads a row's columns in order, so a column after a large input or output was read by walking
    // its overflow pages, and a start read every byte of the table (320 kept jobs of 10 MB: 3.2 GB,
    // 23-98 s). Rebuilt once, in place.
    name: "jobs-005-scan-columns-first",
    sql: `
      CREATE TABLE jobs_new (
        seq INTEGER PRIMARY KEY,
        id_hash INTEGER,
        status TEXT NOT NULL,
        low_priority INTEGER NOT NULL,
        endpoint_id TEXT NOT NULL,
        retries INTEGER NOT NULL,
        queued_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        lost_retries INTEGER NOT NULL DEFAULT 0,
        kind TEXT NOT NULL,
        execution_timeout_ms INTEGER NOT NULL,
        ttl_ms INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        started_at INTEGER,
        completed_at INTEGER,
        id TEXT NOT NULL,
        account_id TEXT NOT NULL,
        worker_id TEXT,
        webhook TEXT,
        policy TEXT,
        s3_config TEXT,
        error TEXT,
        input TEXT NOT NULL,
        output TEXT
      );
      INSERT INTO jobs_new (seq, id_hash, status, low_priority, endpoint_id, retries, queued_at,
        expires_at, lost_retries, kind, execution_timeout_ms, ttl_ms, created_at, started_at,
        completed_at, id, account_id, worker_id, webhook, policy, s3_config, error, input, output)
      SELECT seq, id_hash, status, low_priority, endpoint_id, retries, queued_at,
        expires_at, lost_retries, kind, execution_timeout_ms, ttl_ms, created_at, started_at,
        completed_at, id, account_id, worker_id, webhook, policy, s3_config, error, input, output
      FROM jobs;
      DROP TABLE jobs;
      ALTER TABLE jobs_new RENAME TO jobs;
      CREATE INDEX jobs_by_expiry ON jobs (expires_at);
    `,
  },
];

/** A row's latest time (submitted, queued, started, finished): no later than now on a clock that never went back. */
const LATEST_TIME_SQL = "max(created_at, queued_at, coalesce(started_at, 0), coalesce(completed_at, 0))";

interface JobRow {
  seq: number;
  id: string;
  account_id: string;
  endpoint_id: string;
  kind: string;
  status: string;
  /** null: a large input, left in the store (read with readInput). */
  input: string | null;
  webhook: string | null;
  policy: string | null;
  s3_config: string | null;
  execution_timeout_ms: number;
  ttl_ms: number;
  low_priority: number;
  created_at: number;
  queued_at: number;
  started_at: number | null;
  completed_at: number | null;
  worker_id: string | null;
  /** null: no output, or a large one left in the store (`output_stored`; read with readOutput). */
  output: string | null;
  output_stored: number;
  error: string | null;
  retries: number;
  lost_retries: number;
}

/** A row removed by expiry, enough to keep the health counters right. */
export interface RemovedJob {
  id: string;
  endpointId: string;
  status: JobStatus;
  retries: number;
}

/** Per endpoint and status: how many retained jobs, and their retries. */
export interface StoredCounts {
  endpointId: string;
  status: JobStatus;
  count: number;
  retries: number;
  /** How many of them are lowPriority (from the scan at start only). */
  lowPriority?: number;
}

/** What the store held at start (see JobStore.startup). */
export interface StoreStartup {
  counts: StoredCounts[];
  /** Rows of the jobs that were running. */
  running: number[];
  /** Each endpoint's queued rows, in queue order. */
  queues: Map<string, number[]>;
}

/** The most index entries the scan at start makes room for ahead (see RowIndex.reserve). */
const RESERVE_AT_START = 1 << 20;

const TERMINAL_SQL = "('COMPLETED','FAILED','CANCELLED','TIMED_OUT')";

/** How long a job's move to IN_PROGRESS may wait for its end before it is written on its own. */
export const START_WRITE_DELAY_MS = 1_000;
/** Ended /runsync jobs whose rows wait are written together once this many wait. */
export const ENDED_SYNC_BATCH = 64;
/** An ended /runsync job's row larger than this (input and output JSON, characters) is written at once. */
export const ENDED_SYNC_MAX_CHARS = 64 * 1024;

/**
 * The durable copy of jobs. Writes are marked and flushed together once per event-loop turn in one
 * transaction (a job changed several times in a turn is written once); `flushed()` lets a caller wait
 * until its change is on disk, which /run does before answering. Reads of jobs changed but not yet
 * flushed answer the pending Job itself (the one object the job plane changes).
 *
 * With a clock, a written job's move to IN_PROGRESS is not a write of its own: it waits for the
 * job's next change (most jobs end within it: one row update instead of two), at most
 * `START_WRITE_DELAY_MS`, after which every such mark waiting is written. So does a /runsync job's
 * whole row (`kind` "sync"): its client learns nothing of it (not even its id) before its end or
 * the end of its hold. A hold that ends first writes it before the id is answered (JobService.runSync,
 * `writeWaiting`). A job that ends within its hold is answered with its result at once while its row
 * still waits: it is written with the rows waiting when the delay passes, or with the other ended
 * ones once `ENDED_SYNC_BATCH` of them wait (one transaction for many /runsync jobs instead of one
 * each); a row over `ENDED_SYNC_MAX_CHARS` is written at once. What a crash (not a graceful stop,
 * which writes everything) may lose is only those: a job started less than the delay before the
 * crash is read back IN_QUEUE without a retry counted, and runs again like one that was running (see
 * JobPlane's restart recovery); a /runsync job younger than that is gone: one still running with its
 * client's connection, one that ended after its result was answered (only a later /status of it
 * misses it). Every other change is written in the turn it was made.
 */
export class JobStore implements InputSource {
  readonly #db: DatabaseSync;
  /** Told how many bytes of inputs and outputs each flush wrote (a file store's WAL checkpointer). */
  readonly #checkpointer: WalCheckpointer | null;
  /** Bytes of inputs and outputs the current flush writes. */
  #flushBytes = 0;
  readonly #upsert: StatementSync;
  readonly #update: StatementSync;
  readonly #updateKeepingOutput: StatementSync;
  readonly #input: StatementSync;
  readonly #output: StatementSync;
  /** Outputs longer than this (JSON text) leave memory once written; read back when used. */
  readonly #spillOutput: number;
  /** Jobs whose large output this flush writes: released from memory once it commits. */
  readonly #writtenOutputs = new Set<Job>();
  readonly #delete: StatementSync;
  readonly #get: StatementSync;
  readonly #live: StatementSync;
  readonly #expire: StatementSync;
  readonly #counts: StatementSync;
  readonly #byEndpoint: StatementSync;
  readonly #recent: StatementSync;
  readonly #recentBefore: StatementSync;
  /**
   * Row of every stored job, by job id: reads of jobs not in memory (finished ones kept for their
   * retention, queued ones left in the store).
   */
  readonly #rows = new RowIndex();
  /** Jobs given a row (`storeRow`) whose row is not written yet, by row. */
  #unwritten = new Map<number, Job>();
  /**
   * New /run jobs whose first write the database refused: the /run waiting for it answers 503 and
   * withdraws the job (JobService), and remove() logs that it is not kept.
   */
  #refusedRuns = new Set<string>();
  /** What the scan at start found, until the job plane takes it (`startup`). */
  #startup: StoreStartup | null;
  /**
   * The time of the scan at start: finished rows that had expired by then were skipped (neither
   * indexed nor counted), and the sweep deletes them without reporting them as removed.
   */
  readonly #scannedAt: number;
  readonly #expiredQueued: StatementSync;
  readonly #deleteQueued: StatementSync;
  #nextSeq: number;
  /** One copy of each account and endpoint id for all the jobs read back (rows give fresh strings). */
  readonly #shared = new Map<string, string>();
  #dirty = new Map<string, Job>();
  /** The reason of the last write the database refused (see lastFailure). */
  #lastFailure: string | null = null;
  #deleted = new Map<string, Job>();
  #scheduled: Promise<void> | null = null;
  /**
   * Jobs whose write waits for their next change (see above): written jobs' moves to IN_PROGRESS,
   * and new /runsync jobs (their rows not written yet).
   */
  readonly #waiting = new Map<string, Job>();
  /**
   * Ended /runsync jobs whose rows are not written yet (waiting, or marked for the next flush), with
   * their output's JSON: computed once, for the size check and for the write.
   */
  readonly #endedSync = new Map<Job, string | null>();
  readonly #clock: Clock | undefined;
  #waitTimer: Timer | null = null;
  readonly #log: (message: string) => void;
  /** The memory budget; large inputs leave memory once written (none without it). */
  readonly #memory: JobMemory | undefined;
  /** Seals each job's s3Config (its bucket's secret key) in the file; none: written as JSON. */
  readonly #sealing: ValueSealing | null;

  constructor(
    db: DatabaseSync,
    options: {
      log?: (message: string) => void;
      memory?: JobMemory;
      clock?: Clock;
      sealing?: ValueSealing;
    } = {},
  ) {
    this.#db = db;
    this.#clock = options.clock;
    this.#sealing = options.sealing ?? null;
    this.#checkpointer = db instanceof StoreDatabase ? db.checkpointer : null;
    this.#log = options.log ?? (() => {});
    this.#memory = options.memory;
    // Large inputs are not read back with their row: they are read when used (readInput).
    const spill = options.memory?.options.spillInputBytes ?? Number.MAX_SAFE_INTEGER;
    this.#spillOutput = options.memory?.options.spillOutputBytes ?? Number.MAX_SAFE_INTEGER;
    const spillOut = Math.floor(Math.min(this.#spillOutput, Number.MAX_SAFE_INTEGER));
    const columns = `seq, id, account_id, endpoint_id, kind, status,
      CASE WHEN length(input) > ${Math.floor(spill)} THEN NULL ELSE input END AS input,
      webhook, policy, s3_config, execution_timeout_ms, ttl_ms, low_priority, created_at, queued_at,
      started_at, completed_at, worker_id,
      CASE WHEN length(output) > ${spillOut} THEN NULL ELSE output END AS output,
      coalesce(length(output) > ${spillOut}, 0) AS output_stored, error, retries, lost_retries`;
    this.#upsert = db.prepare(`
      INSERT INTO jobs (seq, id, account_id, endpoint_id, kind, status, input, webhook, policy, s3_config,
        execution_timeout_ms, ttl_ms, low_priority, created_at, queued_at, started_at, completed_at,
        worker_id, output, error, retries, lost_retries, expires_at, id_hash)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (seq) DO UPDATE SET status = excluded.status, ttl_ms = excluded.ttl_ms,
        queued_at = excluded.queued_at, started_at = excluded.started_at,
        completed_at = excluded.completed_at, worker_id = excluded.worker_id, output = excluded.output,
        error = excluded.error, retries = excluded.retries, lost_retries = excluded.lost_retries,
        expires_at = excluded.expires_at`);
    // A row already written changes only in these columns: its input is never bound again.
    this.#update = db.prepare(`
      UPDATE jobs SET status = ?, ttl_ms = ?, queued_at = ?, started_at = ?, completed_at = ?,
        worker_id = ?, error = ?, retries = ?, lost_retries = ?, expires_at = ?, output = ?
      WHERE seq = ?`);
    // The same, for a job whose output was left in the store: the stored output stays.
    this.#updateKeepingOutput = db.prepare(`
      UPDATE jobs SET status = ?, ttl_ms = ?, queued_at = ?, started_at = ?, completed_at = ?,
        worker_id = ?, error = ?, retries = ?, lost_retries = ?, expires_at = ?
      WHERE seq = ?`);
    this.#input = db.prepare("SELECT input FROM jobs WHERE seq = ?");
    this.#output = db.prepare("SELECT output FROM jobs WHERE seq = ?");
    this.#delete = db.prepare("DELETE FROM jobs WHERE seq = ?");
    this.#get = db.prepare(`SELECT ${columns} FROM jobs WHERE seq = ?`);
    this.#live = db.prepare(
      `SELECT ${columns} FROM jobs WHERE status IN ('IN_QUEUE', 'IN_PROGRESS') ORDER BY queued_at, seq`,
    );
    // At most a batch a statement: a restart after days (or a burst's results expiring together)
    // deleted every row in one statement, holding the event loop for seconds (6 s for 200,000).
    this.#expire = db.prepare(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE expires_at <= ? AND status IN ${TERMINAL_SQL}
         ORDER BY expires_at LIMIT ?)
       RETURNING seq, id, endpoint_id AS endpointId, status, retries, expires_at AS expiresAt`,
    );
    this.#counts = db.prepare(
      `SELECT endpoint_id AS endpointId, status, COUNT(*) AS count, SUM(retries) AS retries
       FROM jobs GROUP BY endpoint_id, status`,
    );
    this.#byEndpoint = db.prepare("DELETE FROM jobs WHERE endpoint_id = ? RETURNING seq, id");
    this.#recent = db.prepare(`SELECT ${columns} FROM jobs WHERE endpoint_id = ? ORDER BY seq DESC LIMIT ?`);
    this.#recentBefore = db.prepare(
      `SELECT ${columns} FROM jobs WHERE endpoint_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
    );
    this.#expiredQueued = db.prepare(
      `SELECT ${columns} FROM jobs WHERE expires_at <= ? AND status = 'IN_QUEUE' ORDER BY expires_at LIMIT ?`,
    );
    this.#deleteQueued = db.prepare(
      `DELETE FROM jobs WHERE endpoint_id = ? AND status = 'IN_QUEUE'
       RETURNING seq, id, low_priority AS lowPriority, retries`,
    );
    // Finished jobs whose results had expired by the start are left out of the scan: a restart after
    // days read, indexed and counted each of them (200,000: 0.3-0.5 s) only for the first sweep to
    // delete them, and /health counted them until it did.
    this.#scannedAt = options.clock?.now() ?? Number.MIN_SAFE_INTEGER;
    this.#startup = this.#scan();
    const max = db.prepare("SELECT MAX(seq) AS last FROM jobs").get() as { last: number | null };
    this.#nextSeq = (max.last ?? 0) + 1;
  }

  /**
   * Marks the job's current state to be written at the next flush. A new job gets its row now
   * (`storeRow`), so the queue can refer to it by row before it is written.
   */
  save(job: Job): void {
    if (job.storeRow === 0) {
      job.storeRow = this.#nextSeq++;
      this.#unwritten.set(job.storeRow, job);
      if (job.kind === "sync" && this.#clock) {
        this.#wait(job, this.#clock);
        return;
      }
    } else if (
      job.kind === "sync" &&
      this.#clock &&
      isTerminal(job) &&
      this.#waiting.has(job.id) &&
      this.#unwritten.has(job.storeRow)
    ) {
      this.#endedSyncWaits(job, this.#clock);
      return;
    } else if (job.status === "IN_PROGRESS" && this.#clock && !this.#dirty.has(job.id)) {
      // A start, not a progress value (those are written as they come: a large one leaves memory);
      // of a written job, or of a /runsync job still waiting for its first write.
      const written = !this.#unwritten.has(job.storeRow);
      if ((written || this.#waiting.has(job.id)) && job.outputInMemory && job.output === undefined) {
        this.#wait(job, this.#clock);
        return;
      }
    }
    if (this.#endedSync.size > 0) this.#endedSync.delete(job);
    this.#mark(job);
  }

  #mark(job: Job): void {
    this.#waiting.delete(job.id);
    this.#deleted.delete(job.id);
    this.#dirty.set(job.id, job);
    this.#schedule();
  }

  #wait(job: Job, clock: Clock): void {
    this.#waiting.set(job.id, job);
    this.#waitTimer ??= clock.setTimer(START_WRITE_DELAY_MS, this.#writeAllWaiting);
  }

  /**
   * A /runsync job ended while its row waits: the row goes on waiting (see the class comment) unless
   * it is large; once `ENDED_SYNC_BATCH` ended rows wait, they are all written at the next flush.
   */
  #endedSyncWaits(job: Job, clock: Clock): void {
    let output: string | null;
    try {
      output = job.outputInMemory ? json(job.output) : null;
    } catch {
      // A value no row holds: the write finds it again, and drops and logs the change (#flushEach).
      this.#mark(job);
      return;
    }
    this.#endedSync.set(job, output);
    const inputChars = job.inputInMemory ? job.inputText.length : 0;
    if (inputChars + (output?.length ?? 0) > ENDED_SYNC_MAX_CHARS) {
      this.#mark(job);
      return;
    }
    this.#wait(job, clock);
    if (this.#endedSync.size < ENDED_SYNC_BATCH) return;
    for (const ended of this.#endedSync.keys()) this.#unwait(ended);
    this.#schedule();
  }

  /** The job's change waiting (see above), if any, is written at the next flush. */
  writeWaiting(job: Job): void {
    if (this.#unwait(job)) this.#schedule();
  }

  /** Moves the job's waiting change, if any, to those the next flush writes. */
  #unwait(job: Job): boolean {
    if (!this.#waiting.delete(job.id)) return false;
    this.#dirty.set(job.id, job);
    return true;
  }

  /** The writes waiting (IN_PROGRESS marks, new /runsync rows) are due: written at the next flush. */
  readonly #writeAllWaiting = (): void => {
    this.#waitTimer = null;
    if (this.#waiting.size === 0) return;
    this.#takeWaiting();
    this.#schedule();
  };

  #takeWaiting(): void {
    for (const [id, job] of this.#waiting) this.#dirty.set(id, job);
    this.#waiting.clear();
    this.#waitTimer?.cancel();
    this.#waitTimer = null;
  }

  /** Marks the job to be deleted at the next flush. */
  remove(job: Job): void {
    if (this.#refusedRuns.delete(job.id) && this.#unwritten.has(job.storeRow)) {
      this.#log(`job store: job ${job.id} is not kept: its write was refused and its /run answered 503`);
    }
    this.#waiting.delete(job.id);
    this.#endedSync.delete(job);
    this.#dirty.delete(job.id);
    this.#deleted.set(job.id, job);
    this.#schedule();
  }

  /**
   * Is a change of this job still waiting for the flush? (Not an IN_PROGRESS mark waiting: the job's
   * row is written, and reads here answer the job in memory. A /runsync job's row waiting is.)
   */
  isPending(id: string): boolean {
    if (this.#dirty.has(id) || this.#deleted.has(id)) return true;
    const waiting = this.#waiting.get(id);
    return waiting !== undefined && this.#unwritten.has(waiting.storeRow);
  }

  /**
   * Why the last write the database refused failed, naming the store's file ("the store <file>: the
   * disk holding it is full ..."), for the 503 a refused /run answers.
   */
  get lastFailure(): string {
    const file = this.#db.location();
    return `the store ${file ?? ":memory:"}: ${this.#lastFailure ?? "the write failed"}`;
  }

  /** Resolves once everything marked so far is written. */
  flushed(): Promise<void> {
    return this.#scheduled ?? Promise.resolve();
  }

  /**
   * Writes everything marked, now, in one transaction, IN_PROGRESS marks waiting included (every read
   * or delete by SQL calls this first). Never throws: when the transaction fails, each change is
   * written on its own; a change that cannot be written (a value no row can hold) is logged and
   * dropped, and one the database refuses (busy, full) is logged and kept for the next flush.
   */
  flush(): void {
    if (this.#waiting.size > 0) this.#takeWaiting();
    this.#flushMarked();
  }

  /** The flush of each event-loop turn: what is marked, not the IN_PROGRESS marks waiting. */
  #flushMarked(): void {
    if (this.#dirty.size === 0 && this.#deleted.size === 0) return;
    try {
      transaction(this.#db, () => {
        for (const job of this.#deleted.values()) this.#writeDelete(job);
        for (const job of this.#dirty.values()) this.#write(job);
      });
      for (const job of this.#dirty.values()) {
        this.#unwritten = without(this.#unwritten, job.storeRow);
        this.#endedSync.delete(job);
        this.#spill(job);
      }
      // New maps rather than clear(): see emptied.
      this.#deleted = emptied(this.#deleted, () => new Map());
      this.#dirty = emptied(this.#dirty, () => new Map());
      this.#wrote();
    } catch {
      this.#writtenOutputs.clear();
      this.#flushEach();
    }
  }

  /** The flush, one change per transaction; see flush(). */
  #flushEach(): void {
    for (const [id, job] of this.#deleted) {
      if (this.#attempt(id, "delete", () => transaction(this.#db, () => this.#writeDelete(job)))) {
        this.#deleted.delete(id);
      }
    }
    for (const [id, job] of this.#dirty) {
      let write: () => void;
      try {
        write = this.#writer(job);
      } catch (error) {
        this.#log(`job store: the change of job ${id} cannot be written and is dropped: ${reason(error)}`);
        this.#dirty.delete(id);
        this.#endedSync.delete(job);
        // A later change writes the row whole (see #writer), while its input is at hand.
        this.#unwritten.delete(job.storeRow);
        continue;
      }
      // A new /run's job is not retried: its /run, waiting for this flush, is refused (503) instead.
      const refusedRun = job.kind === "async" && this.#unwritten.has(job.storeRow);
      const outcome = refusedRun
        ? "its /run is answered 503 and the job not kept, unless a flush before that answer writes it"
        : undefined;
      if (
        this.#attempt(id, refusedRun ? "first write" : "write", () => transaction(this.#db, write), outcome)
      ) {
        this.#refusedRuns.delete(id);
        this.#dirty.delete(id);
        this.#unwritten.delete(job.storeRow);
        this.#endedSync.delete(job);
        this.#spill(job);
      } else if (refusedRun) this.#refusedRuns.add(id);
      this.#writtenOutputs.clear();
    }
    this.#wrote();
  }

  #wrote(): void {
    if (this.#flushBytes === 0) return;
    this.#checkpointer?.wrote(this.#flushBytes);
    this.#flushBytes = 0;
  }

  /**
   * Runs one write; false (logged) when the database refuses it: kept for the next flush, or what
   * `outcome` says happens instead.
   */
  #attempt(
    id: string,
    what: string,
    write: () => void,
    outcome = "it is retried at the next flush",
  ): boolean {
    try {
      write();
      return true;
    } catch (error) {
      this.#lastFailure = sqliteReason(error) ?? reason(error);
      this.#log(`job store: the ${what} of job ${id} failed (${this.#lastFailure}): ${outcome}`);
      return false;
    }
  }

  #writeDelete(job: Job): void {
    const seq = job.storeRow || this.#rowOf(job.id);
    if (!seq) return;
    this.#rows.delete(job.id, seq);
    if (this.#unwritten.delete(seq)) return;
    this.#delete.run(seq);
  }

  #write(job: Job): void {
    this.#writer(job)();
  }

  /**
   * The write of a job's current state, its values computed now (they may throw: a value no row
   * holds): an insert of the whole row the first time, then an update of what changes.
   */
  #writer(job: Job): () => void {
    const keepsOutput = !job.outputInMemory;
    const ended = this.#endedSync.get(job);
    const output = keepsOutput ? null : ended !== undefined ? ended : json(job.output);
    const changes = changedValues(job);
    const insert = this.#unwritten.has(job.storeRow) ? rowValues(job, output, this.#sealing) : null;
    return () => {
      if (insert === null) {
        if (keepsOutput) this.#updateKeepingOutput.run(...changes, job.storeRow);
        else {
          const updated = this.#update.run(...changes, output, job.storeRow);
          // The row is gone (deleted by expiry while the job was in memory): written whole again,
          // when its input is still at hand.
          if (Number(updated.changes) === 0 && job.inputInMemory) {
            this.#upsert.run(job.storeRow, ...rowValues(job, output, this.#sealing));
          }
        }
      } else {
        this.#upsert.run(job.storeRow, ...insert);
        this.#rows.add(job.id, job.storeRow);
      }
      if (output !== null && output.length > this.#spillOutput) this.#writtenOutputs.add(job);
      this.#flushBytes += (insert === null ? 0 : job.inputText.length) + (output?.length ?? 0);
    };
  }

  /**
   * A large input or output, now in the store, leaves memory (an input also the memory budget); so
   * does a finished job's input, which only the console reads again: finished jobs kept for fast
   * reads hold their result, not their input.
   */
  #spill(job: Job): void {
    if (this.#writtenOutputs.delete(job)) job.releaseOutput(this);
    if (isTerminal(job) && job.inputInMemory && job.heldBytes === 0) {
      job.releaseInput(this);
      return;
    }
    const memory = this.#memory;
    if (!memory?.spills(job) || this.#unwritten.has(job.storeRow)) return;
    job.releaseInput(this);
    memory.release(job);
  }

  /** The input text of a job whose input was left in the store. */
  readInput(job: Job): string {
    const row = this.#input.get(job.storeRow) as { input: string } | undefined;
    if (!row) throw new ServiceError("NOT_FOUND", `job ${job.id}: its input is no longer stored`);
    return row.input;
  }

  /** The output text of a job whose output was left in the store. */
  readOutput(job: Job): string {
    const row = this.#output.get(job.storeRow) as { output: string | null } | undefined;
    if (!row || row.output === null) {
      throw new ServiceError("NOT_FOUND", `job ${job.id}: its output is no longer stored`);
    }
    return row.output;
  }

  /** The job `id` as stored, or its pending state when a change is not written yet. */
  get(id: string): Job | undefined {
    const pending = this.#dirty.get(id) ?? this.#waiting.get(id);
    if (pending) return pending;
    if (this.#deleted.has(id)) return undefined;
    const row = this.#rowById(id);
    return row ? jobOf(row, this.#shared, this, this.#sealing) : undefined;
  }

  /** The job of row `seq` as stored, or its pending state (see get). */
  atRow(seq: number): Job | undefined {
    const unwritten = this.#unwritten.get(seq);
    if (unwritten) return this.#deleted.has(unwritten.id) ? undefined : unwritten;
    const row = this.#get.get(seq) as JobRow | undefined;
    if (!row) return undefined;
    const pending = this.#dirty.get(row.id) ?? this.#waiting.get(row.id);
    if (pending) return pending;
    if (this.#deleted.has(row.id)) return undefined;
    return jobOf(row, this.#shared, this, this.#sealing);
  }

  /**
   * What was stored at start, once (then released): counts, running jobs' rows, and each endpoint's
   * queued rows in queue order. Read in one pass over the table with the id index.
   */
  startup(): StoreStartup {
    const found = this.#startup ?? { counts: [], running: [], queues: new Map() };
    this.#startup = null;
    return found;
  }

  /**
   * One pass over the table, in batches of rows as arrays (a third of the time of objects; one array
   * of a million rows would grow V8's heap for good; batches of 1,000 rather than 10,000: a batch is
   * live while it is read, and every young-generation collection on the way copies it): the id index, counts, running jobs, and the
   * queues. Jobs never requeued entered their queue in row order; the few requeued ones (retried,
   * or back from a lost worker) are sorted by when they re-entered and merged in.
   *
   * The rows are read as numbers where they can be: the id's hash (rows written before the id_hash
   * column give their id, hashed here), the status with lowPriority as one code, and the endpoint
   * only where it differs from the last one of the previous batch (rows come in runs of one endpoint),
   * so most rows cost no string at all.
   */
  #scan(): StoreStartup {
    const rows = this.#db.prepare(
      `SELECT seq, coalesce(id_hash, id), ${STATUS_CODE_SQL} + 8 * low_priority,
         CASE endpoint_id WHEN ? THEN NULL ELSE endpoint_id END, retries, queued_at, ${LATEST_TIME_SQL}
       FROM jobs WHERE seq > ? AND (expires_at > ? OR status NOT IN ${TERMINAL_SQL})
       ORDER BY seq LIMIT 1000`,
    );
    rows.setReturnArrays(true);
    // The index gets one entry a row: room for the span of row numbers (capped), trimmed after.
    const span = this.#db.prepare("SELECT MAX(seq) - MIN(seq) + 1 AS rows FROM jobs").get() as {
      rows: number | null;
    };
    this.#rows.reserve(Math.min(span.rows ?? 0, RESERVE_AT_START));
    type Row = [number, number | string, number, string | null, number, number, number];
    const counts = new Map<string, StoredCounts[]>();
    const running: number[] = [];
    type Queue = { seqs: number[]; queuedAt: number[]; requeued: [number, number][] };
    const queued = new Map<string, Queue>();
    // Rows come in runs of one endpoint and status (a burst of /run, a batch finishing): the entry
    // and queue of the previous row are reused while both match, so most rows cost no map lookups.
    let lastEndpoint: string | null = null;
    let lastCode = -1;
    /** A row's latest time is after the clock's time now: the clock went back (see #redate). */
    let future = false;
    // Without a clock (a store read on its own) no time is "now".
    const now = this.#clock === undefined ? Number.POSITIVE_INFINITY : this.#scannedAt;
    let entry: StoredCounts | undefined;
    let queue: Queue | undefined;
    for (let after = 0; ; ) {
      // NULL in the endpoint column: the endpoint of the last row of the previous batch.
      const batchEndpoint: string | null = lastEndpoint;
      // Plain `?` in the order they appear: Node 22.19's node:sqlite refuses numbered ones (`?2`)
      // out of order ("column index out of range").
      const batch = rows.all(batchEndpoint, after, this.#scannedAt) as unknown as Row[];
      for (const [seq, idOrHash, code, endpointOrNull, retries, queuedAt, latest] of batch) {
        if (latest > now) future = true;
        this.#rows.addHash(typeof idOrHash === "number" ? idOrHash : hashOf(idOrHash), seq);
        const endpoint: string = endpointOrNull ?? (batchEndpoint as string);
        const status = code & 7;
        if (entry === undefined || endpoint !== lastEndpoint || status !== lastCode) {
          const endpointId = shared(this.#shared, endpoint);
          let byStatus = counts.get(endpointId);
          if (!byStatus) {
            byStatus = [];
            counts.set(endpointId, byStatus);
          }
          entry = byStatus[status];
          if (!entry) {
            const name = STATUS_BY_CODE[status] ?? ("UNKNOWN" as JobStatus);
            entry = { endpointId, status: name, count: 0, retries: 0, lowPriority: 0 };
            byStatus[status] = entry;
          }
          queue = undefined;
          if (status === IN_QUEUE_CODE) {
            queue = queued.get(endpointId);
            if (!queue) {
              queue = { seqs: [], queuedAt: [], requeued: [] };
              queued.set(endpointId, queue);
            }
          }
          lastEndpoint = endpointId;
          lastCode = status;
        }
        entry.count++;
        entry.retries += retries;
        if (code >= 8) entry.lowPriority = (entry.lowPriority ?? 0) + 1;
        if (status === IN_PROGRESS_CODE) running.push(seq);
        else if (queue) {
          if (retries === 0) {
            queue.seqs.push(seq);
            queue.queuedAt.push(queuedAt);
          } else queue.requeued.push([seq, queuedAt]);
        }
      }
      const last = batch.at(-1);
      if (!last) break;
      after = last[0];
    }
    this.#rows.trim();
    if (future) this.#redate(queued);
    const queues = new Map<string, number[]>();
    for (const [endpointId, { seqs, queuedAt, requeued }] of queued) {
      if (requeued.length === 0) {
        queues.set(endpointId, seqs);
        continue;
      }
      requeued.sort((a, b) => a[1] - b[1] || a[0] - b[0]);
      const merged: number[] = [];
      let r = 0;
      for (let i = 0; i < seqs.length; i++) {
        const seq = seqs[i] as number;
        const at = queuedAt[i] as number;
        for (; r < requeued.length; r++) {
          const [rSeq, rAt] = requeued[r] as [number, number];
          if (rAt > at || (rAt === at && rSeq > seq)) break;
          merged.push(rSeq);
        }
        merged.push(seq);
      }
      for (; r < requeued.length; r++) merged.push((requeued[r] as [number, number])[0]);
      queues.set(endpointId, merged);
    }
    const found: StoredCounts[] = [];
    for (const byStatus of counts.values()) for (const entry of byStatus) if (entry) found.push(entry);
    return { counts: found, running, queues };
  }

  /**
   * The clock went back across the restart (an operator, NTP, a store copied from a machine whose
   * clock was ahead): rows carry times "later" than now. Read as stored, a queued job's delayTime once
   * taken came out negative (-1 h after a step of an hour back), the QUEUE_DELAY scaler saw it wait a
   * negative time, and every ttl and retention, counted from those times, ran on for as long as the
   * clock went back (a day back: a 10-minute ttl lasted a day and 10 minutes). Each such row is moved
   * back by how far its latest time is ahead: that time becomes now, its durations (delayTime,
   * executionTime) are kept, and its ttl and retention end at most their length from now (its time
   * before the restart cannot be told on this clock), in the store too. Rows dated before now keep
   * their times: a job whose ttl has passed on this clock still expires.
   */
  #redate(queued: Map<string, { queuedAt: number[]; requeued: [number, number][] }>): void {
    const now = this.#scannedAt;
    for (const { queuedAt, requeued } of queued.values()) {
      for (let i = 0; i < queuedAt.length; i++) if ((queuedAt[i] as number) > now) queuedAt[i] = now;
      for (const entry of requeued) if (entry[1] > now) entry[1] = now;
    }
    // SQLite evaluates every SET expression on the row as it was, so each reads the same shift.
    const shift = `(${LATEST_TIME_SQL} - $now)`;
    try {
      this.#db
        .prepare(
          `UPDATE jobs SET created_at = created_at - ${shift}, queued_at = queued_at - ${shift},
             started_at = started_at - ${shift}, completed_at = completed_at - ${shift},
             expires_at = expires_at - ${shift}
           WHERE ${LATEST_TIME_SQL} > $now`,
        )
        .run({ $now: now });
    } catch (error) {
      // A store refusing writes (its disk full) still starts; the rows keep their times.
      this.#log(`job store: jobs dated after the clock's time could not be re-dated: ${reason(error)}`);
    }
  }

  /**
   * Gives back at most `maxPages` of the file's free pages (rows deleted by expiry) to the file
   * system (StoreDatabase.releaseFreePages); 0 for a store that cannot (":memory:", no auto-vacuum).
   */
  releaseSpace(maxPages: number): number {
    return this.#db instanceof StoreDatabase ? this.#db.releaseFreePages(maxPages) : 0;
  }

  /** Queued jobs whose ttl has passed (at most `limit`), as stored. */
  expiredQueued(now: number, limit: number): Job[] {
    this.flush();
    return (this.#expiredQueued.all(now, limit) as unknown as JobRow[]).map((row) =>
      jobOf(row, this.#shared, this, this.#sealing),
    );
  }

  /** Deletes every queued job of the endpoint, now; returns what was removed. */
  deleteQueued(endpointId: string): { id: string; lowPriority: number; retries: number }[] {
    this.flush();
    const rows = this.#deleteQueued.all(endpointId) as unknown as {
      seq: number;
      id: string;
      lowPriority: number;
      retries: number;
    }[];
    return rows.map(({ seq, ...removed }) => {
      this.#rows.delete(removed.id, seq);
      return removed;
    });
  }

  /** Entries and bytes of the id -> row index (for the bench and tests). */
  get indexStats(): { entries: number; bytes: number } {
    return { entries: this.#rows.size, bytes: this.#rows.bytes };
  }

  /** The stored row of job `id` among the index's candidates (hashes may collide). */
  #rowById(id: string): JobRow | undefined {
    for (const seq of this.#rows.candidates(id)) {
      const row = this.#get.get(seq) as JobRow | undefined;
      if (row?.id === id) return row;
    }
    return undefined;
  }

  #rowOf(id: string): number {
    return this.#rowById(id)?.seq ?? 0;
  }

  /**
   * Jobs queued or running when the store was last written, oldest first; one row at a time (each
   * carries its row, so they need no index entry).
   */
  *loadLive(): Generator<Job> {
    for (const row of this.#live.iterate() as Iterable<JobRow>)
      yield jobOf(row, this.#shared, this, this.#sealing);
  }

  /**
   * Deletes up to `limit` finished jobs whose results expired, oldest first. Returns how many rows
   * were deleted, and the jobs removed that the job plane knew of (counted, indexed): not those the
   * scan at start skipped as expired already.
   */
  deleteExpired(now: number, limit: number): { removed: RemovedJob[]; deleted: number } {
    this.flush();
    const rows = this.#expire.all(now, limit) as unknown as (RemovedJob & {
      seq: number;
      expiresAt: number;
    })[];
    const removed: RemovedJob[] = [];
    for (const { seq, expiresAt, ...job } of rows) {
      if (expiresAt <= this.#scannedAt) continue;
      this.#rows.delete(job.id, seq);
      removed.push(job);
    }
    return { removed, deleted: rows.length };
  }

  counts(): StoredCounts[] {
    this.flush();
    return this.#counts.all() as unknown as StoredCounts[];
  }

  /** The endpoint's newest jobs as written (for the console), newest first. */
  /** The endpoint's newest `limit` rows; with `beforeRow`, the newest of those written before it. */
  recent(endpointId: string, limit: number, beforeRow?: number): Job[] {
    this.flush();
    const rows =
      beforeRow === undefined
        ? this.#recent.all(endpointId, limit)
        : this.#recentBefore.all(endpointId, beforeRow, limit);
    return (rows as unknown as JobRow[]).map((row) => jobOf(row, this.#shared, this, this.#sealing));
  }

  deleteEndpoint(endpointId: string): void {
    this.flush();
    for (const row of this.#byEndpoint.all(endpointId) as { seq: number; id: string }[]) {
      this.#rows.delete(row.id, row.seq);
    }
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = new Promise<void>((resolve) => {
      setImmediate(() => {
        this.#scheduled = null;
        this.#flushMarked();
        resolve();
      });
    });
  }
}

const reason = (error: unknown): string => (error instanceof Error ? error.message : String(error));

const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));
const parsed = <T>(text: string | null): T | undefined =>
  text === null ? undefined : (JSON.parse(text) as T);

/**
 * Seals and opens the store's secret values (the management store's Sealer, AES-256-GCM with the
 * store key); structural, so the job plane does not import the management plane.
 */
export interface ValueSealing {
  seal(plain: string): string;
  open(sealed: string, what: string): string;
}

/** A job's s3Config as its row holds it: sealed (its accessSecret is a credential), JSON without a sealer. */
function s3ConfigText(s3Config: S3Config | undefined, sealing: ValueSealing | null): string | null {
  const text = json(s3Config);
  return text === null || sealing === null ? text : sealing.seal(text);
}

/** A row's s3Config: a sealed value opened, or the JSON a store written before sealing holds. */
function s3ConfigOf(row: JobRow, sealing: ValueSealing | null): S3Config | undefined {
  const text = row.s3_config;
  if (text === null || text.startsWith("{") || sealing === null) return parsed<S3Config>(text);
  return JSON.parse(sealing.open(text, `job ${row.id} s3Config`)) as S3Config;
}

/**
 * The columns an update writes but the output, in the order of the update statements (the output,
 * when written, goes after them, before `seq`).
 */
function changedValues(job: Job): SQLInputValue[] {
  return [
    job.status,
    job.ttlMs,
    job.queuedAt,
    job.startedAt,
    job.completedAt,
    job.workerId,
    job.error ?? null,
    job.retries,
    job.lostRetries,
    expiresAt(job),
  ];
}

function rowValues(job: Job, output: string | null, sealing: ValueSealing | null): SQLInputValue[] {
  return [
    job.id,
    job.accountId,
    job.endpointId,
    job.kind,
    job.status,
    job.inputText,
    job.webhook ?? null,
    json(job.policy),
    s3ConfigText(job.s3Config, sealing),
    job.executionTimeoutMs,
    job.ttlMs,
    job.lowPriority ? 1 : 0,
    job.createdAt,
    job.queuedAt,
    job.startedAt,
    job.completedAt,
    job.workerId,
    output,
    job.error ?? null,
    job.retries,
    job.lostRetries,
    expiresAt(job),
    hashOf(job.id),
  ];
}

function shared(strings: Map<string, string>, text: string): string {
  const known = strings.get(text);
  if (known !== undefined) return known;
  strings.set(text, text);
  return text;
}

/** The literal for a stored enum value, so 100,000 jobs do not each hold a copy of "IN_QUEUE". */
const KINDS: Record<string, JobKind> = { async: "async", sync: "sync" };
const STATUSES: Record<string, JobStatus> = {
  IN_QUEUE: "IN_QUEUE",
  IN_PROGRESS: "IN_PROGRESS",
  COMPLETED: "COMPLETED",
  FAILED: "FAILED",
  CANCELLED: "CANCELLED",
  TIMED_OUT: "TIMED_OUT",
};

/**
 * The statuses by the code the scan reads them as (see STATUS_CODE_SQL; computed by the query, never
 * stored, so the order is free); past the last: anything else.
 */
const STATUS_BY_CODE: readonly JobStatus[] = JOB_STATUSES;
const IN_QUEUE_CODE = STATUS_BY_CODE.indexOf("IN_QUEUE");
const IN_PROGRESS_CODE = STATUS_BY_CODE.indexOf("IN_PROGRESS");
const STATUS_CODE_SQL = `CASE status ${STATUS_BY_CODE.map((status, code) => `WHEN '${status}' THEN ${code}`).join(" ")} ELSE ${STATUS_BY_CODE.length} END`;

function jobOf(
  row: JobRow,
  strings: Map<string, string>,
  source: InputSource,
  sealing: ValueSealing | null,
): Job {
  const job = jobFrom({
    id: row.id,
    accountId: shared(strings, row.account_id),
    endpointId: shared(strings, row.endpoint_id),
    kind: KINDS[row.kind] ?? (row.kind as JobKind),
    status: STATUSES[row.status] ?? (row.status as JobStatus),
    inputText: row.input ?? source,
    webhook: row.webhook ?? undefined,
    policy: parsed<JobPolicy>(row.policy),
    s3Config: s3ConfigOf(row, sealing),
    executionTimeoutMs: row.execution_timeout_ms,
    ttlMs: row.ttl_ms,
    lowPriority: row.low_priority === 1,
    createdAt: row.created_at,
    queuedAt: row.queued_at,
    startedAt: row.started_at,
    completedAt: row.completed_at,
    workerId: row.worker_id,
    output: row.output_stored ? undefined : parsed<unknown>(row.output),
    error: row.error ?? undefined,
    retries: row.retries,
    lostRetries: row.lost_retries,
    stream: null,
    storeRow: row.seq,
  });
  if (row.output_stored) job.releaseOutput(source);
  return job;
}
