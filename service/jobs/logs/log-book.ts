import type { Clock } from "../../clock";
import { Deque } from "../book/collections";
import type { LineFlush } from "./line-splitter";
import { parseWorkerLine } from "./lines";

/** One captured line: what the logs route answers, one JSON object per line. */
export interface LogEntry {
  /** Increasing per service run; `after` resumes from it. */
  seq: number;
  /** ISO 8601, on the service's clock, when the line was read. */
  time: string;
  endpointId: string;
  workerId: string;
  /** The job the line belongs to: named in the line, or the one job the worker held when it printed. */
  requestId: string | null;
  level: string;
  /** Where it came from: the process's stdout or stderr, or the service (start, exit). */
  stream: "stdout" | "stderr" | "service";
  message: string;
}

export interface LogLimits {
  /** Lines kept per worker (its ring buffer). */
  perWorker: number;
  /** Lines kept per endpoint, all its workers together. */
  perEndpoint: number;
  /** Workers whose lines are kept per endpoint (the oldest worker's ring goes first). */
  workersPerEndpoint: number;
  /**
   * Characters of messages kept per endpoint, its rings together (default 8 Mi): past it, its oldest
   * lines go. Lines are cut at maxLineChars, so the line bounds alone let one endpoint hold 10,000
   * lines of 64 Ki characters (~660 MB) and its workers' rings more.
   */
  perEndpointChars?: number;
  /** Characters of messages kept over all endpoints (default 64 Mi); past it, the largest endpoint's oldest lines go. */
  totalChars?: number;
  /**
   * A longer message is cut to this many characters; a longer line of a worker's output is cut to
   * this many bytes as it is read (the rest is never held).
   */
  maxLineChars: number;
  /**
   * A line a worker has not finished (no newline yet: a prompt, a progress bar) becomes an entry as it
   * stands once nothing was added to it for this long (ms; default 1000), and ...
   */
  flushIdleMs?: number;
  /** ... at least this often while it is redrawn without pause (ms; default 10000). */
  flushEveryMs?: number;
  /**
   * A line naming no job that a worker prints within this long after its last job ended, holding none
   * since, belongs to that job (ms; default 2000): the handler's async work still running, or a line
   * still in the pipe when the job-done came. Later lines, between jobs, name no job.
   */
  lateLineMs?: number;
}

export const DEFAULT_LOG_LIMITS: LogLimits = {
  perWorker: 2_000,
  perEndpoint: 10_000,
  workersPerEndpoint: 50,
  maxLineChars: 64 * 1024,
  perEndpointChars: 8 * 1024 * 1024,
  totalChars: 64 * 1024 * 1024,
  flushIdleMs: 1_000,
  flushEveryMs: 10_000,
  lateLineMs: 2_000,
};

export interface LogFilter {
  workerId?: string | undefined;
  requestId?: string | undefined;
  /** Entries at or after this time, ms since the epoch. */
  since?: number | undefined;
  /** Entries after this seq. */
  after?: number | undefined;
  /** Entries before this seq (a page back from the first one a reader has). */
  before?: number | undefined;
}

type Listener = (entry: LogEntry) => void;

interface EndpointLogs {
  all: Deque<LogEntry>;
  workers: Map<string, Deque<LogEntry>>;
  /** Followers, each with what to call when the endpoint's logs go (it was deleted). */
  listeners: Map<Listener, () => void>;
  /** Characters of the messages held by its rings (each entry counted once). */
  chars: number;
}

/**
 * The id a line names, as the string the worker's held jobs already hold when it is one of them: a
 * line kept in the rings then costs no copy of the id (a no-op job's two lines would hold two).
 */
function heldId(id: string, held: readonly string[] | ReadonlyMap<string, unknown>): string {
  if (Array.isArray(held)) {
    for (const own of held as readonly string[]) if (own === id) return own;
    return id;
  }
  const map = held as ReadonlyMap<string, unknown>;
  if (map.size > 8 || !map.has(id)) return id;
  for (const own of map.keys()) if (own === id) return own;
  return id;
}

/** The one job held, or null when none or several are. */
function onlyJob(held: readonly string[] | ReadonlyMap<string, unknown>): string | null {
  if (Array.isArray(held)) return held.length === 1 ? (held[0] as string) : null;
  const map = held as ReadonlyMap<string, unknown>;
  if (map.size !== 1) return null;
  for (const id of map.keys()) return id;
  return null;
}

/**
 * Worker output, bounded: a ring buffer per worker and one per endpoint (the limits above), in
 * memory. Lines are attributed to a job as they arrive; readers query with filters or follow.
 */
export class LogBook {
  readonly #endpoints = new Map<string, EndpointLogs>();
  readonly #clock: Clock;
  readonly #limits: LogLimits;
  #seq = 0;
  /** Characters of the messages held over all endpoints. */
  #chars = 0;
  /** The last entry's time, ms, and its ISO text: lines read in the same millisecond share the text. */
  #timeMs = Number.NaN;
  #timeText = "";

  constructor(clock: Clock, limits: LogLimits) {
    this.#clock = clock;
    this.#limits = limits;
  }

  /** How much of one line of a worker's output is read (LineSplitter), bytes. */
  get maxLineBytes(): number {
    return this.#limits.maxLineChars;
  }

  /**
   * The jobs a line a worker prints now may belong to: those it holds, or, holding none, the one that
   * ended within `lateLineMs` (see LogLimits).
   */
  jobsOfLine(worker: {
    held: ReadonlyMap<string, unknown>;
    lastJob: string | null;
    idleSince: number;
  }): readonly string[] | ReadonlyMap<string, unknown> {
    if (worker.held.size > 0 || worker.lastJob === null) return worker.held;
    const grace = this.#limits.lateLineMs ?? (DEFAULT_LOG_LIMITS.lateLineMs as number);
    return this.#clock.now() - worker.idleSince <= grace ? [worker.lastJob] : worker.held;
  }

  /** When a worker's unfinished line is emitted as it stands (LineSplitter), on the book's clock. */
  get lineFlush(): LineFlush {
    return {
      clock: this.#clock,
      idleMs: this.#limits.flushIdleMs ?? (DEFAULT_LOG_LIMITS.flushIdleMs as number),
      everyMs: this.#limits.flushEveryMs ?? (DEFAULT_LOG_LIMITS.flushEveryMs as number),
    };
  }

  /**
   * A line a worker printed. `heldJobs` are the jobs the worker holds now: a line naming no job
   * belongs to the one job a worker holds (none when it holds several). Ids, or a map by id (the
   * worker session's own, read only when the line names no job). `cutBytes`: how much of the line
   * was dropped as it was read (LineSplitter), said at its end.
   */
  line(
    endpointId: string,
    workerId: string,
    stream: "stdout" | "stderr",
    text: string,
    heldJobs: readonly string[] | ReadonlyMap<string, unknown>,
    cutBytes = 0,
  ): LogEntry {
    const parsed = parseWorkerLine(text, stream);
    const requestId = parsed.requestId === null ? onlyJob(heldJobs) : heldId(parsed.requestId, heldJobs);
    let message = this.#cut(parsed.message);
    if (cutBytes > 0) message = `${message} ...[cut ${cutBytes} bytes]`;
    return this.#add({ endpointId, workerId, stream, level: parsed.level, requestId, message });
  }

  /** A line of the service's own about a worker (started, exited). */
  note(
    endpointId: string,
    workerId: string,
    level: string,
    message: string,
    requestId: string | null = null,
  ): void {
    this.#add({ endpointId, workerId, stream: "service", level, requestId, message });
  }

  query(endpointId: string, filter: LogFilter = {}, limit = Number.POSITIVE_INFINITY): LogEntry[] {
    const logs = this.#endpoints.get(endpointId);
    if (!logs) return [];
    const source = filter.workerId ? logs.workers.get(filter.workerId) : logs.all;
    if (!source) return [];
    const out: LogEntry[] = [];
    for (const entry of source) if (matches(entry, filter)) out.push(entry);
    return out.length > limit ? out.slice(out.length - limit) : out;
  }

  /**
   * Calls `listener` with each new entry of the endpoint that matches, and `deleted` once if the
   * endpoint's logs go (no entry comes after); returns the unsubscribe.
   */
  follow(
    endpointId: string,
    filter: LogFilter,
    listener: Listener,
    deleted: () => void = () => {},
  ): () => void {
    const logs = this.#logs(endpointId);
    const wrapped: Listener = (entry) => {
      if (matches(entry, filter)) listener(entry);
    };
    logs.listeners.set(wrapped, deleted);
    return () => logs.listeners.delete(wrapped);
  }

  /** Endpoints whose lines are kept (released when an endpoint is deleted). */
  get endpointCount(): number {
    return this.#endpoints.size;
  }

  /** Characters of messages held, over all endpoints or of one. */
  heldChars(endpointId?: string): number {
    return endpointId === undefined ? this.#chars : (this.#endpoints.get(endpointId)?.chars ?? 0);
  }

  deleteEndpoint(endpointId: string): void {
    const logs = this.#endpoints.get(endpointId);
    this.#endpoints.delete(endpointId);
    if (logs) this.#chars -= logs.chars;
    // Followers are told: nothing will come for them any more (they kept a reply open forever).
    if (logs) for (const deleted of [...logs.listeners.values()]) deleted();
  }

  #add(fields: Omit<LogEntry, "seq" | "time">): LogEntry {
    // Every field written here, in one order: entries share one shape with all fields in the object
    // (a spread adds a separate property array to each).
    const entry: LogEntry = {
      seq: ++this.#seq,
      time: this.#time(),
      endpointId: fields.endpointId,
      workerId: fields.workerId,
      stream: fields.stream,
      level: fields.level,
      requestId: fields.requestId,
      message: fields.message,
    };
    const logs = this.#logs(entry.endpointId);
    logs.chars += entry.message.length;
    this.#chars += entry.message.length;
    logs.all.push(entry);
    while (logs.all.size > this.#limits.perEndpoint) this.#dropped(logs, logs.all.shift() as LogEntry);
    let ring = logs.workers.get(entry.workerId);
    if (!ring) {
      ring = new Deque<LogEntry>();
      logs.workers.set(entry.workerId, ring);
      if (logs.workers.size > this.#limits.workersPerEndpoint) {
        const oldest = logs.workers.keys().next().value;
        const gone = oldest === undefined ? undefined : logs.workers.get(oldest);
        if (oldest !== undefined) logs.workers.delete(oldest);
        for (const dropped of gone ?? []) this.#dropped(logs, dropped);
      }
    }
    ring.push(entry);
    while (ring.size > this.#limits.perWorker) this.#dropped(logs, ring.shift() as LogEntry);
    // The bounds in characters: the oldest lines go first (never the one just added).
    const perEndpoint = this.#limits.perEndpointChars ?? (DEFAULT_LOG_LIMITS.perEndpointChars as number);
    while (logs.chars > perEndpoint && this.#dropOldest(logs, entry)) {}
    const total = this.#limits.totalChars ?? (DEFAULT_LOG_LIMITS.totalChars as number);
    while (this.#chars > total) {
      let largest = logs;
      for (const other of this.#endpoints.values()) if (other.chars > largest.chars) largest = other;
      if (!this.#dropOldest(largest, entry)) break;
    }
    for (const listener of logs.listeners.keys()) listener(entry);
    return entry;
  }

  /**
   * An entry left one of its endpoint's rings: once in neither (the endpoint's, its worker's), its
   * characters are no longer held. Each ring holds every entry of its kind from its head on.
   */
  #dropped(logs: EndpointLogs, entry: LogEntry): void {
    if (inRing(logs.all, entry) || inRing(logs.workers.get(entry.workerId), entry)) return;
    logs.chars -= entry.message.length;
    this.#chars -= entry.message.length;
  }

  /** Drops the endpoint's oldest held entry from every ring holding it; false when that is `keep`. */
  #dropOldest(logs: EndpointLogs, keep: LogEntry): boolean {
    let oldest = logs.all.peek();
    for (const ring of logs.workers.values()) {
      const head = ring.peek();
      if (head && (!oldest || head.seq < oldest.seq)) oldest = head;
    }
    if (!oldest || oldest === keep) return false;
    if (logs.all.peek() === oldest) logs.all.shift();
    const ring = logs.workers.get(oldest.workerId);
    if (ring?.peek() === oldest) {
      ring.shift();
      if (ring.size === 0) logs.workers.delete(oldest.workerId);
    }
    this.#dropped(logs, oldest);
    return true;
  }

  #time(): string {
    const now = this.#clock.now();
    if (now !== this.#timeMs) {
      this.#timeMs = now;
      this.#timeText = new Date(now).toISOString();
    }
    return this.#timeText;
  }

  #logs(endpointId: string): EndpointLogs {
    let logs = this.#endpoints.get(endpointId);
    if (!logs) {
      logs = { all: new Deque(), workers: new Map(), listeners: new Map(), chars: 0 };
      this.#endpoints.set(endpointId, logs);
    }
    return logs;
  }

  #cut(text: string): string {
    const max = this.#limits.maxLineChars;
    return text.length <= max ? text : `${text.slice(0, max)} ...[cut ${text.length - max} characters]`;
  }
}

/** Whether the ring holds the entry: it holds every entry of its kind from its head on. */
function inRing(ring: Deque<LogEntry> | undefined, entry: LogEntry): boolean {
  const head = ring?.peek();
  return head !== undefined && head.seq <= entry.seq;
}

function matches(entry: LogEntry, filter: LogFilter): boolean {
  if (filter.workerId && entry.workerId !== filter.workerId) return false;
  if (filter.requestId && entry.requestId !== filter.requestId) return false;
  if (filter.after !== undefined && entry.seq <= filter.after) return false;
  if (filter.before !== undefined && entry.seq >= filter.before) return false;
  if (filter.since !== undefined && Date.parse(entry.time) < filter.since) return false;
  return true;
}
