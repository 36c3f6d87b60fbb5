import type { JobStatus, StreamChunk } from "../../../sdk/schemas/job";
import type { Clock } from "../../clock";
import type { Emitter } from "../../event-bus";
import { isExpired, isTerminal, type Job, type StreamCursor, transition } from "../model/job";
import { JOB_POLICY } from "../policy";
import type { JobStore, RemovedJob } from "../store/job-store";
import { DeadlineQueue, Deque, without } from "./collections";
import type { JobMemory, Reservation } from "./memory";
import { Watchers } from "./watchers";

/** The chunks one /stream reply hands out, from stream position `from` up to `position`. */
export interface StreamHandOut {
  chunks: StreamChunk[];
  from: number;
  position: number;
  /** Which hand-out of the job this is (StreamCursor.reply), -1 for none. */
  reply: number;
}

/** Job counts of one endpoint, kept as jobs move; /health reads them. */
export interface EndpointJobCounts {
  inQueue: number;
  /** Queued jobs that may trigger scaling (not lowPriority). */
  inQueueScaling: number;
  inProgress: number;
  completed: number;
  /** FAILED and TIMED_OUT jobs. */
  failed: number;
  /** Retries of the jobs still kept. */
  retried: number;
}

interface EndpointJobs extends EndpointJobCounts {
  /**
   * FIFO of queued jobs: a Job held in memory, or the store row of one left in the store (a deep
   * queue's tail: see JobBookOptions.hotQueued). Entries of jobs that left the queue otherwise are
   * skipped when met.
   */
  queue: Deque<Job | number>;
}

/** What the book announces as jobs move (the job plane routes these to the parts that act on them). */
export interface BookEvents {
  /** A job entered its endpoint's queue. */
  "job.queued": [job: Job];
  /** A running job must stop on its worker (cancel, execution timeout, ttl). */
  "job.mustStop": [job: Job, workerId: string];
  /** A job reached COMPLETED, FAILED, TIMED_OUT or CANCELLED. */
  "job.finished": [job: Job];
}

export interface JobBookOptions {
  /** Finished jobs kept in memory for fast reads; older ones are read from the store. */
  recentCacheSize: number;
  /**
   * Queued jobs of an endpoint held in memory. A job /run adds to a longer queue is kept in the
   * store only (the queue holds its row) and read back when it reaches the head or is asked for;
   * its ttl is then enforced by the sweep (and on every read) rather than by a timer of its own.
   */
  hotQueued: number;
  /** Most chunk JSON (bytes) one /stream reply hands out; default JOB_POLICY.streamReplyBytes. */
  streamReplyBytes?: number | undefined;
}

const NO_JOBS: EndpointJobCounts = {
  inQueue: 0,
  inQueueScaling: 0,
  inProgress: 0,
  completed: 0,
  failed: 0,
  retried: 0,
};

/**
 * The most finished jobs one sweep deletes (tens of ms of the event loop, secure_delete on); a full
 * batch is followed by another sweep as soon as the event loop has served what waits.
 */
const EXPIRED_BATCH = 2_000;
/** The most expired queued jobs one sweep deletes (the next sweep continues). */
const SWEEP_BATCH = 10_000;
/** Queued jobs of an endpoint read back at a restart (the rest when they reach the head). */
const RESTORED_HEAD = 1_000;
/** How far past the head oldestScalingQueuedAt reads stored rows looking for a job that scales. */
const SCALING_SCAN = 1_000;

/**
 * The jobs of the service: an in-memory index (live jobs, queues per endpoint, recent results,
 * counts) in front of the durable store. Every status change goes through here, so the transition
 * table, the counts, persistence and wake-ups of long-polls stay in step.
 */
export class JobBook {
  readonly watchers: Watchers;
  #live = new Map<string, Job>();
  readonly #recent = new Map<string, Job>();
  readonly #endpoints = new Map<string, EndpointJobs>();
  readonly #store: JobStore;
  readonly #clock: Clock;
  readonly #deadlines: DeadlineQueue<Job>;
  readonly #options: JobBookOptions;
  readonly #events: Emitter<BookEvents>;

  readonly #memory: JobMemory | undefined;
  /** Deadlines left after the last compaction (see #forgetDeadlines). */
  #deadlinesKept = 0;

  constructor(
    store: JobStore,
    clock: Clock,
    options: JobBookOptions,
    events: Emitter<BookEvents>,
    memory?: JobMemory,
  ) {
    this.#memory = memory;
    this.#store = store;
    this.#clock = clock;
    this.#options = options;
    this.#events = events;
    this.watchers = new Watchers(clock);
    this.#deadlines = new DeadlineQueue(clock, (job) => this.#onDeadline(job));
  }

  /** Rebuilds the index from the store after a restart; returns the jobs that were running. */
  restore(): Job[] {
    const startup = this.#store.startup();
    for (const row of startup.counts) {
      const counts = this.#endpoint(row.endpointId);
      if (row.status === "COMPLETED") counts.completed += row.count;
      if (row.status === "FAILED" || row.status === "TIMED_OUT") counts.failed += row.count;
      if (row.status === "IN_PROGRESS") counts.inProgress += row.count;
      if (row.status === "IN_QUEUE") {
        counts.inQueue += row.count;
        counts.inQueueScaling += row.count - (row.lowPriority ?? 0);
      }
      counts.retried += row.retries;
    }
    const running: Job[] = [];
    for (const seq of startup.running) {
      const job = this.#store.atRow(seq);
      if (!job) continue;
      this.#warm(job);
      running.push(job);
    }
    // The queue's head in memory, the rest by row: a million queued jobs are not all read back.
    const head = Math.min(this.#options.hotQueued, RESTORED_HEAD);
    for (const [endpointId, seqs] of startup.queues) {
      const queue = this.#endpoint(endpointId).queue;
      const inMemory = Math.min(head, seqs.length);
      for (let i = 0; i < inMemory; i++) {
        const seq = seqs[i] as number;
        const job = this.#store.atRow(seq);
        if (job) {
          this.#warm(job);
          queue.push(job);
        } else queue.push(seq);
      }
      // The rest stay rows, appended at once.
      queue.pushAll(seqs, inMemory);
    }
    return running;
  }

  /** Entries in the deadline queue (finished jobs' are compacted away; see #forgetDeadlines). */
  get deadlineCount(): number {
    return this.#deadlines.size;
  }

  counts(endpointId: string): EndpointJobCounts {
    // A read makes no entry: the console's chart and the scaler read an endpoint's counts after it
    // was deleted (its last worker's exit), and each such entry was kept for good.
    const entry = this.#endpoints.get(endpointId);
    if (!entry) return { ...NO_JOBS };
    const { queue: _queue, ...counts } = entry;
    return counts;
  }

  /** Endpoints the book holds queues and counts for (released when an endpoint is deleted). */
  get endpointCount(): number {
    return this.#endpoints.size;
  }

  /** Queued and running jobs of an endpoint. */
  liveJobs(endpointId: string): Job[] {
    return [...this.#live.values()].filter((job) => job.endpointId === endpointId);
  }

  /**
   * The endpoint's newest jobs (queued, running and kept results), newest first: what is in memory,
   * completed by what the store holds.
   */
  /**
   * The endpoint's newest `limit` jobs, newest first (created, then written). With `before` (a job
   * of the endpoint: the last one of the page before), the newest `limit` that come after it in that
   * order: a cursor that stays put as new jobs arrive.
   */
  recent(endpointId: string, limit: number, before?: Job): Job[] {
    const now = this.#clock.now();
    const byId = new Map<string, Job>();
    const row = (job: Job) => job.storeRow || Number.POSITIVE_INFINITY;
    const newer = (a: Job, b: Job) => b.createdAt - a.createdAt || row(b) - row(a);
    const beforeRow = before?.storeRow ? before.storeRow : undefined;
    for (const job of this.#store.recent(endpointId, limit, beforeRow)) byId.set(job.id, job);
    for (const jobs of [this.#recent.values(), this.#live.values()])
      for (const job of jobs) if (job.endpointId === endpointId) byId.set(job.id, job);
    return [...byId.values()]
      .filter((job) => !isExpired(job, now) && (!before || (job.id !== before.id && newer(job, before) > 0)))
      .sort(newer)
      .slice(0, limit);
  }

  /** The job if it exists and has not expired. */
  find(id: string): Job | undefined {
    const job = this.#live.get(id) ?? this.#recent.get(id) ?? this.#store.get(id);
    if (!job) return undefined;
    if (isExpired(job, this.#clock.now())) {
      if (this.#live.get(id) === job || job.status === "IN_QUEUE") this.delete(job);
      else this.#forget(job);
      return undefined;
    }
    if (isTerminal(job)) {
      if (!this.#recent.has(id)) this.#remember(job);
    } else if (this.#live.get(id) !== job) this.#warm(job);
    return job;
  }

  /**
   * A new job enters its endpoint's queue: held in memory, or, behind `hotQueued` others of an
   * async queue, left in the store once written (the queue keeps its row).
   */
  submit(job: Job): void {
    const entry = this.#endpoint(job.endpointId);
    if (job.kind === "async" && entry.inQueue >= this.#options.hotQueued) {
      this.#count(job, 1);
      this.#store.save(job);
      entry.queue.push(job.storeRow);
      this.watchers.notify(job.id);
      this.#events.emit("job.queued", job);
      return;
    }
    this.#live.set(job.id, job);
    this.#memory?.hold(job);
    this.#enqueue(job, false);
  }

  /** The oldest queued job of the endpoint that still waits, taken off the queue. */
  nextQueued(endpointId: string): Job | undefined {
    const queue = this.#endpoints.get(endpointId)?.queue;
    if (!queue) return undefined;
    for (;;) {
      const entry = queue.shift();
      if (entry === undefined) return undefined;
      const job = typeof entry === "number" ? this.#fromRow(entry) : entry;
      if (job && this.#isQueued(job)) return job;
    }
  }

  /** When the oldest scaling-relevant queued job entered the queue (undefined: none). */
  oldestScalingQueuedAt(endpointId: string): number | undefined {
    const queue = this.#endpoints.get(endpointId)?.queue;
    if (!queue) return undefined;
    // The head in memory (read back if it was left in the store), skipping entries of jobs gone.
    for (;;) {
      const head = queue.peek();
      if (head === undefined) return undefined;
      const job = typeof head === "number" ? this.#fromRow(head) : head;
      if (job && this.#isQueued(job)) {
        if (typeof head === "number") {
          queue.shift();
          queue.unshift(job);
        }
        break;
      }
      queue.shift();
    }
    let scanned = 0;
    for (const entry of queue) {
      if (typeof entry === "number") {
        if (++scanned > SCALING_SCAN) return undefined;
        const job = this.#store.atRow(entry);
        if (job?.status === "IN_QUEUE" && !job.lowPriority) return job.queuedAt;
      } else if (this.#isQueued(entry) && !entry.lowPriority) return entry.queuedAt;
    }
    return undefined;
  }

  /** IN_QUEUE -> IN_PROGRESS on a worker. */
  start(job: Job, workerId: string): void {
    this.#move(job, "IN_PROGRESS", () => {
      job.startedAt = this.#clock.now();
      job.workerId = workerId;
    });
    this.#deadlines.add(this.#nextDeadline(job), job);
  }

  /** A progress value from the worker; ignored once the job is no longer running. */
  progress(job: Job, output: unknown): void {
    if (job.status !== "IN_PROGRESS" || this.#live.get(job.id) !== job) return;
    job.output = output;
    this.#store.save(job);
    this.watchers.notify(job.id);
  }

  /**
   * Stream chunks from the worker; ignored once the job is no longer running. They count against the
   * memory budget until drained: past it they are refused (UNAVAILABLE, naming the budget). The
   * reservation their body held while it was read is handed over to them (JobMemory.holdStream).
   */
  appendChunks(job: Job, chunks: StreamChunk[], reservation: Reservation | null = null): void {
    if (job.status !== "IN_PROGRESS" || this.#live.get(job.id) !== job) return;
    if (this.#memory) {
      let bytes = 0;
      for (const chunk of chunks) bytes += chunkSizes(chunk).held;
      this.#memory.holdStream(job, bytes, reservation);
    }
    if (job.stream === null) job.stream = [];
    for (const chunk of chunks) job.stream.push(chunk);
    this.watchers.notify(job.id);
  }

  /** Chunks /stream may hand out now: those buffered, but for the ones the last reply holds out. */
  pendingChunks(job: Job): number {
    return (job.stream?.length ?? 0) - (job.streamCursor?.out ?? 0);
  }

  /**
   * Settles the last /stream reply before a poll of a reader at stream position `received`
   * (undefined: a reader that does not say, as the Python library). A reader still where that reply
   * began did not receive it: its chunks are handed out again. A reader further on, or any reader
   * once that reply was written whole, takes it as received: its chunks are dropped. A reply still
   * being written is left to its own end (replyEnded), which the poll's hold waits for.
   */
  settleChunks(job: Job, received: number | undefined): void {
    const cursor = job.streamCursor;
    if (!cursor || cursor.out === 0) return;
    if (received === cursor.at) this.#putBack(cursor);
    else if (received !== undefined && received > cursor.at && received < cursor.at + cursor.out) {
      // A reader that stopped partway through that reply (the SDK's stream() left early): the chunks
      // it did not take are handed out again.
      this.#dropReceived(job, cursor, received - cursor.at);
    } else if (received !== undefined || cursor.written) this.#dropReceived(job, cursor);
  }

  /**
   * Hands out the chunks buffered, up to `streamReplyBytes` of their JSON (one at least; the rest
   * waits for the next poll), kept until the reply is known to be received (settleChunks,
   * replyEnded). Chunks of another reply written whole but not yet confirmed are taken as received
   * by its reader; while another reply is still being written, nothing is handed out. `limitBytes`
   * (a reader's smaller limit, less the envelope) lowers that bound; one chunk still goes out.
   */
  handOutChunks(job: Job, limitBytes = Number.POSITIVE_INFINITY): StreamHandOut {
    let cursor = job.streamCursor;
    if (!cursor) {
      cursor = { at: 0, out: 0, outBytes: 0, written: false, reply: 0 };
      job.streamCursor = cursor;
    }
    if (cursor.out > 0 && cursor.written) this.#dropReceived(job, cursor);
    if (cursor.out > 0) return { chunks: [], from: cursor.at, position: cursor.at, reply: -1 };
    const buffered = job.stream ?? [];
    const cap = Math.min(this.#options.streamReplyBytes ?? JOB_POLICY.streamReplyBytes, limitBytes);
    let count = 0;
    let replyBytes = 0;
    let held = 0;
    for (; count < buffered.length; count++) {
      const sizes = chunkSizes(buffered[count] as StreamChunk);
      if (count > 0 && replyBytes + sizes.reply > cap) break;
      replyBytes += sizes.reply;
      held += sizes.held;
    }
    // A copy: the reply is written after later chunks may have been appended to the buffer.
    const chunks = buffered.slice(0, count);
    cursor.out = count;
    cursor.outBytes = held;
    cursor.written = false;
    cursor.reply++;
    return { chunks, from: cursor.at, position: cursor.at + chunks.length, reply: cursor.reply };
  }

  /**
   * The reply of `handOut` ended: written whole, or its connection closed first (its chunks are put
   * back for the next poll). A written reply counts as received at once for a reader that cannot
   * say what it received (`confirmWritten`); one that can says so on its next poll. Does nothing
   * once a later poll has settled that reply.
   */
  replyEnded(job: Job, handOut: StreamHandOut, written: boolean, confirmWritten: boolean): void {
    const cursor = job.streamCursor;
    if (!cursor || cursor.reply !== handOut.reply || cursor.out === 0) return;
    if (!written) this.#putBack(cursor);
    else if (confirmWritten) this.#dropReceived(job, cursor);
    else cursor.written = true;
    // A poll held meanwhile may take chunks now.
    this.watchers.notify(job.id);
  }

  #putBack(cursor: StreamCursor): void {
    cursor.out = 0;
    cursor.outBytes = 0;
    cursor.written = false;
  }

  /**
   * The first `count` chunks the last reply handed out (all by default) were received: they leave the
   * buffer and the budget; the others are handed out again.
   */
  #dropReceived(job: Job, cursor: StreamCursor, count = cursor.out): void {
    const stream = job.stream;
    let bytes = cursor.outBytes;
    if (count < cursor.out) {
      bytes = 0;
      for (let i = 0; i < count; i++) bytes += chunkSizes(stream?.[i] as StreamChunk).held;
    }
    if (stream) stream.splice(0, count);
    if (stream?.length === 0) job.stream = null;
    cursor.at += count;
    this.#memory?.releaseStreamPart(job, bytes);
    this.#putBack(cursor);
  }

  /**
   * A finished job's buffered chunks no reader can take (the /openai route answered its whole output
   * to a client that never learns its id) leave the buffer and the budget.
   */
  dropStream(job: Job): void {
    if (isTerminal(job) && job.stream !== null) this.#dropChunks(job);
  }

  /** Drops every buffered chunk (a job going back to the queue): positions go on after them. */
  #dropChunks(job: Job): void {
    const cursor = job.streamCursor;
    if (cursor) {
      cursor.at += job.stream?.length ?? 0;
      this.#putBack(cursor);
    }
    job.stream = null;
    this.#memory?.releaseStream(job);
  }

  /** IN_PROGRESS -> COMPLETED, FAILED or TIMED_OUT. */
  finish(
    job: Job,
    status: "COMPLETED" | "FAILED" | "TIMED_OUT",
    result: { output?: unknown; error?: string },
  ) {
    this.#move(job, status, () => {
      job.completedAt = this.#clock.now();
      job.output = result.output;
      job.error = result.error;
    });
  }

  /** IN_QUEUE or IN_PROGRESS -> CANCELLED; a running job is stopped on its worker. */
  cancel(job: Job): void {
    const workerId = job.status === "IN_PROGRESS" ? job.workerId : null;
    this.#move(job, "CANCELLED", () => {
      job.completedAt = this.#clock.now();
      // A progress value is no result: shown after the end, it would read as one.
      job.output = undefined;
    });
    if (workerId) this.#events.emit("job.mustStop", job, workerId);
  }

  /** FAILED or TIMED_OUT -> IN_QUEUE: same id and input, previous result removed. */
  retry(job: Job): void {
    this.#live.set(job.id, job);
    this.#memory?.hold(job);
    this.#forget(job);
    // A new attempt of the client's: it gets the whole budget of requeues after lost workers again.
    job.lostRetries = 0;
    this.#resetForQueue(job);
  }

  /** IN_PROGRESS -> IN_QUEUE at the head of the queue, when its worker was lost. */
  requeue(job: Job): void {
    job.lostRetries++;
    this.#resetForQueue(job, true);
  }

  /** Removes a job (ttl expiry, purge); a running one is also stopped on its worker. */
  delete(job: Job): void {
    if (job.status === "IN_PROGRESS" && job.workerId) this.#events.emit("job.mustStop", job, job.workerId);
    this.#count(job, -1);
    this.#endpoint(job.endpointId).retried -= job.retries;
    this.#live = without(this.#live, job.id);
    this.#memory?.release(job);
    this.#forgetDeadlines();
    this.#forget(job);
    this.#store.remove(job);
    this.watchers.notify(job.id);
  }

  /** Removes every queued job of the endpoint; running ones continue. */
  purgeQueue(endpointId: string): number {
    const entry = this.#endpoint(endpointId);
    let removed = 0;
    let stored = false;
    for (let job = entry.queue.shift(); job !== undefined; job = entry.queue.shift()) {
      if (typeof job === "number") stored = true;
      else if (this.#isQueued(job)) {
        this.delete(job);
        removed++;
      }
    }
    if (!stored) return removed;
    // Those left in the store go in one statement (jobs read back since are deleted as above).
    for (const row of this.#store.deleteQueued(endpointId)) {
      const job = this.#live.get(row.id);
      if (job) this.delete(job);
      else {
        this.#tally(entry, "IN_QUEUE", row.lowPriority === 1, -1);
        entry.retried -= row.retries;
        this.watchers.notify(row.id);
      }
      removed++;
    }
    return removed;
  }

  /** Sets the job's lifetime (ms from submission). */
  setTtl(job: Job, ttlMs: number): void {
    job.ttlMs = ttlMs;
    this.#store.save(job);
    if (this.#live.get(job.id) === job) this.#deadlines.add(this.#nextDeadline(job), job);
  }

  /**
   * Deletes finished jobs whose results expired, and queued jobs left in the store past their ttl, a
   * batch of each; true when a batch was full (more are due: the caller sweeps again soon).
   */
  sweep(): boolean {
    const now = this.#clock.now();
    const { removed, deleted } = this.#store.deleteExpired(now, EXPIRED_BATCH);
    for (const job of removed) this.#uncount(job);
    const queued = this.#store.expiredQueued(now, SWEEP_BATCH);
    for (const job of queued) {
      if (!this.#live.has(job.id)) this.delete(job);
    }
    for (const job of this.#recent.values()) if (isExpired(job, now)) this.#forget(job);
    return deleted === EXPIRED_BATCH || queued.length === SWEEP_BATCH;
  }

  /** The endpoint is gone: so are its jobs. Running ones are stopped. */
  deleteEndpoint(endpointId: string): void {
    for (const job of this.liveJobs(endpointId)) this.delete(job);
    for (const job of this.#recent.values()) if (job.endpointId === endpointId) this.#forget(job);
    this.#store.deleteEndpoint(endpointId);
    this.#endpoints.delete(endpointId);
  }

  stop(): void {
    this.#deadlines.stop();
    this.watchers.releaseAll();
    this.#store.flush();
  }

  #resetForQueue(job: Job, atHead = false): void {
    this.#count(job, -1);
    transition(job, "IN_QUEUE");
    job.retries++;
    this.#endpoint(job.endpointId).retried++;
    job.queuedAt = this.#clock.now();
    job.startedAt = null;
    job.completedAt = null;
    job.workerId = null;
    job.output = undefined;
    job.error = undefined;
    this.#dropChunks(job);
    this.#enqueue(job, atHead);
  }

  /** Counts a job that is now IN_QUEUE and puts it in its endpoint's queue. */
  #enqueue(job: Job, atHead: boolean): void {
    this.#count(job, 1);
    const queue = this.#endpoint(job.endpointId).queue;
    if (atHead) queue.unshift(job);
    else queue.push(job);
    this.#deadlines.add(this.#nextDeadline(job), job);
    this.#store.save(job);
    this.watchers.notify(job.id);
    this.#events.emit("job.queued", job);
  }

  /** One status change: counts out, transition, counts in, persist, wake waiters. */
  #move(job: Job, to: JobStatus, apply: () => void): void {
    this.#count(job, -1);
    transition(job, to);
    apply();
    this.#count(job, 1);
    if (isTerminal(job)) {
      this.#live = without(this.#live, job.id);
      this.#memory?.release(job);
      this.#forgetDeadlines();
      this.#remember(job);
    }
    this.#store.save(job);
    this.watchers.notify(job.id);
    if (isTerminal(job)) this.#events.emit("job.finished", job);
  }

  #isQueued(job: Job): boolean {
    return job.status === "IN_QUEUE" && this.#live.get(job.id) === job;
  }

  /** A job read from the store is held in memory from now on (indexed, budgeted, its deadline set). */
  #warm(job: Job): void {
    this.#live.set(job.id, job);
    this.#memory?.hold(job);
    this.#deadlines.add(this.#nextDeadline(job), job);
  }

  /**
   * The queued job of a queue entry left in the store, now held in memory; undefined when it left
   * the queue (taken after a read, cancelled, purged) or its ttl passed (then it is deleted).
   */
  #fromRow(seq: number): Job | undefined {
    const stored = this.#store.atRow(seq);
    if (!stored) return undefined;
    const live = this.#live.get(stored.id);
    if (live) return live;
    if (stored.status !== "IN_QUEUE") return undefined;
    if (isExpired(stored, this.#clock.now())) {
      this.delete(stored);
      return undefined;
    }
    this.#warm(stored);
    return stored;
  }

  #nextDeadline(job: Job): number {
    const ttlEnd = job.createdAt + job.ttlMs;
    if (job.status !== "IN_PROGRESS" || job.startedAt === null) return ttlEnd;
    return Math.min(ttlEnd, job.startedAt + job.executionTimeoutMs);
  }

  #onDeadline(job: Job): void {
    if (this.#live.get(job.id) !== job) return;
    const now = this.#clock.now();
    if (now >= job.createdAt + job.ttlMs) {
      this.delete(job);
      return;
    }
    if (
      job.status === "IN_PROGRESS" &&
      job.startedAt !== null &&
      now >= job.startedAt + job.executionTimeoutMs
    ) {
      const workerId = job.workerId;
      this.finish(job, "TIMED_OUT", {
        error: `job exceeded its execution timeout of ${job.executionTimeoutMs} ms`,
      });
      if (workerId) this.#events.emit("job.mustStop", job, workerId);
      return;
    }
    const next = this.#nextDeadline(job);
    if (next > now) this.#deadlines.add(next, job);
  }

  /**
   * Deadlines of jobs that left (finished, deleted) stay in the queue until due (a day, for a ttl)
   * and would hold each job until then. Once the queue has doubled since it was last compacted (and
   * the jobs have left the live index), those entries go: amortized, a constant cost per deadline.
   */
  #forgetDeadlines(): void {
    if (this.#deadlines.size <= 2 * this.#deadlinesKept + 1_024) return;
    this.#deadlines.compact((job) => this.#live.get(job.id) === job);
    this.#deadlinesKept = this.#deadlines.size;
  }

  #remember(job: Job): void {
    this.#recent.set(job.id, job);
    if (this.#recent.size <= this.#options.recentCacheSize) return;
    // Oldest first; a job whose write is still pending must stay readable from memory.
    for (const old of this.#recent.values()) {
      if (this.#recent.size <= this.#options.recentCacheSize || this.#store.isPending(old.id)) break;
      this.#forget(old);
    }
  }

  /** A finished job leaves the recent cache, with the chunks /stream did not drain. */
  #forget(job: Job): void {
    const cached = this.#recent.get(job.id);
    this.#recent.delete(job.id);
    if (cached && cached !== job) this.#memory?.releaseStream(cached);
    this.#memory?.releaseStream(job);
  }

  #endpoint(endpointId: string): EndpointJobs {
    let entry = this.#endpoints.get(endpointId);
    if (!entry) {
      entry = { queue: new Deque(), ...NO_JOBS };
      this.#endpoints.set(endpointId, entry);
    }
    return entry;
  }

  #count(job: Job, delta: 1 | -1): void {
    this.#tally(this.#endpoint(job.endpointId), job.status, job.lowPriority, delta);
  }

  #uncount(removed: RemovedJob): void {
    const entry = this.#endpoints.get(removed.endpointId);
    if (!entry) return;
    this.#tally(entry, removed.status, true, -1);
    entry.retried -= removed.retries;
  }

  #tally(entry: EndpointJobCounts, status: JobStatus, lowPriority: boolean, delta: number): void {
    if (status === "IN_QUEUE") {
      entry.inQueue += delta;
      if (!lowPriority) entry.inQueueScaling += delta;
    } else if (status === "IN_PROGRESS") entry.inProgress += delta;
    else if (status === "COMPLETED") entry.completed += delta;
    // /health has no counter of its own for TIMED_OUT: a job that ran out of time failed (/retry takes
    // exactly FAILED and TIMED_OUT). CANCELLED, the client's own doing, counts nowhere.
    else if (status === "FAILED" || status === "TIMED_OUT") entry.failed += delta;
  }
}

/**
 * A buffered chunk's sizes: `held`, what it counts against the memory budget (its output's and
 * metrics' JSON, in UTF-16 units, as JobMemory counts), and `reply`, the UTF-8 bytes it takes in a
 * /stream reply's JSON.
 */
function chunkSizes(chunk: StreamChunk): { held: number; reply: number } {
  const output = JSON.stringify(chunk.output) ?? "null";
  // Metrics too: they are held with the chunk until it is handed out.
  const metrics = chunk.metrics === undefined ? "" : JSON.stringify(chunk.metrics);
  // `{"output":` and `}`, `,"metrics":`, and the comma between chunks.
  const framing = 12 + (metrics === "" ? 0 : 11);
  return {
    held: output.length + metrics.length,
    reply: Buffer.byteLength(output) + Buffer.byteLength(metrics) + framing,
  };
}
