import type { DatabaseSync, StatementSync } from "node:sqlite";
import { Worker } from "node:worker_threads";

/**
 * When the checkpointer copies the WAL back into the store file. SQLite's own auto-checkpoint (off on
 * the service's connection: `wal_autocheckpoint = 0`) would run it inside whichever commit crossed
 * 1,000 pages, with its fsyncs, on the event loop; here it runs on a thread of its own.
 */
export interface CheckpointPolicy {
  /** A checkpoint is asked for after this many commits (through `transaction`) since the last ask. */
  commits: number;
  /** ... or once the commits since the last ask wrote about this many bytes of job inputs/outputs. */
  bytes: number;
  /**
   * A passive checkpoint on the thread never holds the writer back, so under steady writes the
   * frames committed while it copies are always left, and the WAL, never copied back entirely,
   * cannot start over from its beginning: it would grow without end. Once the thread's passes leave
   * frames in a WAL of at least this many frames (pages), the main connection copies the rest itself
   * between two commits (a few frames, and the fsyncs: the one checkpoint left on the event loop).
   */
  catchUpFrames: number;
}

export const DEFAULT_CHECKPOINT_POLICY: CheckpointPolicy = {
  commits: 256,
  bytes: 4 * 1024 * 1024,
  catchUpFrames: 4_000,
};

/** `PRAGMA wal_checkpoint` as SQLite reports it: busy (0/1), frames in the WAL, frames copied back. */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/** One word shared with the thread: which side may touch the WAL-checkpoint lock now. */
const IDLE = 0;
const RUNNING = 1;
const CLOSED = 2;

/**
 * The thread's code (CommonJS, evaluated: no file to resolve under tsc, tsx or vitest). It opens its
 * own connection to the store file and runs a checkpoint per message; `state` is IDLE while it does
 * nothing, RUNNING while it checkpoints, and once the main thread set CLOSED it starts none again.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { DatabaseSync } = require("node:sqlite");
const state = new Int32Array(workerData.state);
const db = new DatabaseSync(workerData.path);
db.exec("PRAGMA busy_timeout = 5000");
db.exec("PRAGMA wal_autocheckpoint = 0");
const passive = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
const run = () => {
  let result = passive.get();
  // Frames committed while it copied: another pass copies only those.
  for (let pass = 0; pass < 2 && result.busy === 0 && result.checkpointed < result.log; pass++) {
    result = passive.get();
  }
  return result;
};
parentPort.on("message", (message) => {
  if (message.close) {
    db.close();
    parentPort.close();
    return;
  }
  if (Atomics.compareExchange(state, 0, ${IDLE}, ${RUNNING}) !== ${IDLE}) {
    parentPort.postMessage({ skipped: true });
    return;
  }
  let reply;
  try {
    const r = run();
    reply = { busy: r.busy, log: r.log, checkpointed: r.checkpointed };
  } catch (error) {
    reply = { error: String(error && error.message ? error.message : error) };
  }
  Atomics.store(state, 0, ${IDLE});
  Atomics.notify(state, 0);
  parentPort.postMessage(reply);
});
`;

type ThreadReply = CheckpointResult | { skipped: true } | { error: string };

/**
 * Keeps a store file's WAL bounded without checkpointing on the event loop. The main connection
 * counts its commits (`committed`); past the policy's count or bytes, a checkpoint is asked of a
 * worker thread holding its own connection to the same file (started on the first ask: an idle
 * service has no thread). One checkpoint runs at a time; asks in between are folded into one more.
 * Under steady writes the thread cannot finish the WAL alone; past `catchUpFrames` the main
 * connection copies the last frames (see CheckpointPolicy).
 * The thread never keeps the process alive (unref). Should the thread fail, checkpoints run on the
 * main connection instead (what SQLite's auto-checkpoint did). `close` waits for a running
 * checkpoint, then truncates the WAL to zero bytes from the main connection.
 */
export class WalCheckpointer {
  readonly #path: string;
  readonly #db: DatabaseSync;
  readonly #policy: CheckpointPolicy;
  readonly #state = new Int32Array(new SharedArrayBuffer(4));
  #worker: Worker | null = null;
  /** The thread failed: checkpoints run on the main connection. */
  #inline = false;
  #passive: StatementSync | null = null;
  #commits = 0;
  #bytes = 0;
  /** Commits since a checkpoint last finished. */
  #sinceFinished = 0;
  /** The main connection is to checkpoint once the thread's checkpoint ends (see #catchUp). */
  #catchUpDue = false;
  /** A checkpoint is on the thread. */
  #inFlight = false;
  /** Asked again while one was on the thread. */
  #again = false;
  #closed = false;
  #waiters: (() => void)[] = [];
  /** Checkpoints finished, and the last one's figures (tests and the bench read them). */
  completed = 0;
  last: CheckpointResult | null = null;
  /** Checkpoints the main connection ran (see `catchUpFrames`; all of them if the thread failed). */
  catchUps = 0;
  /** Checkpoints of the main connection that failed (a full disk); the WAL kept their commits. */
  failures = 0;

  constructor(path: string, db: DatabaseSync, policy: Partial<CheckpointPolicy> = {}) {
    this.#path = path;
    this.#db = db;
    this.#policy = { ...DEFAULT_CHECKPOINT_POLICY, ...policy };
  }

  /**
   * One commit of the main connection. Past four times the policy's commits with no checkpoint
   * finished (the thread still starting, or slowed down), the main connection checkpoints itself.
   */
  committed(): void {
    if (++this.#sinceFinished >= 4 * this.#policy.commits && !this.#closed) this.#catchUp();
    if (++this.#commits >= this.#policy.commits) this.request();
  }

  /** About `bytes` of large values (job inputs, outputs) were just committed. */
  wrote(bytes: number): void {
    this.#bytes += bytes;
    if (this.#bytes >= this.#policy.bytes) this.request();
  }

  /** Asks for a checkpoint now (one more if one is running). */
  request(): void {
    if (this.#closed) return;
    this.#commits = 0;
    this.#bytes = 0;
    if (this.#inFlight) {
      this.#again = true;
      return;
    }
    const worker = this.#thread();
    if (!worker) {
      this.#catchUp();
      return;
    }
    this.#inFlight = true;
    worker.postMessage({ checkpoint: true });
  }

  /** Resolves once no checkpoint is running or asked for. */
  settled(): Promise<void> {
    if (!this.#inFlight) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /**
   * Stops checkpointing: waits (synchronously, up to 5 s) for a checkpoint on the thread to end, lets
   * the thread close its connection, and truncates the WAL from the main connection, so a store
   * closed gracefully leaves no large WAL behind. Call before closing the main connection.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    // IDLE -> CLOSED, waiting while the thread is RUNNING: from here on it starts no checkpoint.
    const deadline = Date.now() + 5_000;
    while (Atomics.compareExchange(this.#state, 0, IDLE, CLOSED) === RUNNING && Date.now() < deadline) {
      Atomics.wait(this.#state, 0, RUNNING, 100);
    }
    this.#worker?.postMessage({ close: true });
    this.#worker = null;
    try {
      this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch {
      // The disk full or the file damaged: the WAL stays, and the next open replays it.
      this.failures++;
    }
    this.#inFlight = false;
    this.#release();
  }

  #thread(): Worker | null {
    if (this.#worker || this.#inline) return this.#worker;
    try {
      const worker = new Worker(THREAD_SOURCE, {
        eval: true,
        workerData: { path: this.#path, state: this.#state.buffer },
        // A checkpoint needs next to no JavaScript heap.
        resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 },
      });
      worker.unref();
      worker.on("message", (reply: ThreadReply) => this.#onReply(reply));
      worker.on("error", () => this.#fail(worker));
      worker.on("exit", () => this.#fail(worker));
      this.#worker = worker;
    } catch {
      this.#inline = true;
    }
    return this.#worker;
  }

  #onReply(reply: ThreadReply): void {
    this.#inFlight = false;
    if ("error" in reply && /disk is full/.test(reply.error)) {
      // A full disk passes: the thread checkpoints again once space returns (later commits ask).
      this.failures++;
    } else if ("error" in reply) {
      // The thread's connection could not checkpoint (e.g. the file went away): from here on, inline.
      this.#worker?.postMessage({ close: true });
      this.#worker = null;
      this.#inline = true;
    } else if (!("skipped" in reply)) {
      this.completed++;
      this.last = reply;
      this.#sinceFinished = 0;
      // `log` is the WAL as the checkpoint found it: commits made while it copied are not in it, so a
      // "complete" checkpoint may still leave frames. A WAL this long has not started over lately.
      if (reply.log >= this.#policy.catchUpFrames) this.#catchUpDue = true;
    }
    // The thread is idle now (it set so before replying): the main connection's turn.
    if (this.#catchUpDue && !this.#closed) this.#catchUp();
    if (this.#again && !this.#closed) {
      this.#again = false;
      this.request();
      return;
    }
    this.#release();
  }

  #fail(worker: Worker): void {
    if (this.#worker !== worker) return;
    this.#worker = null;
    this.#inline = true;
    if (this.#inFlight) {
      this.#inFlight = false;
      if (!this.#closed) this.#catchUp();
    }
    this.#release();
  }

  /**
   * A checkpoint on the main connection, between two of its commits, so it copies the WAL to its end
   * and the next commit starts the WAL over. Only while the thread is not checkpointing (a
   * checkpoint running there would make this one give up at once): it then waits for its reply.
   */
  #catchUp(): void {
    if (Atomics.compareExchange(this.#state, 0, IDLE, RUNNING) !== IDLE) {
      this.#catchUpDue = true;
      return;
    }
    this.#catchUpDue = false;
    try {
      this.#passive ??= this.#db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
      const result = this.#passive.get() as unknown as CheckpointResult;
      this.#sinceFinished = 0;
      this.completed++;
      this.catchUps++;
      this.last = { busy: result.busy, log: result.log, checkpointed: result.checkpointed };
    } catch {
      // A checkpoint that fails (the disk full: it may need to grow the file) is not the commit's
      // failure: the WAL keeps the commits, and a later commit asks again. Never an uncaught error.
      this.failures++;
    } finally {
      Atomics.store(this.#state, 0, IDLE);
    }
  }

  #release(): void {
    if (this.#inFlight) return;
    for (const resolve of this.#waiters.splice(0)) resolve();
  }
}
