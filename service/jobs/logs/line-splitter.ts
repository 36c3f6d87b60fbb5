import type { Clock, Timer } from "../../clock";

/** When a line still unfinished (no newline yet) is shown anyway; without a clock, only at its end. */
export interface LineFlush {
  clock: Clock;
  /** A line nothing was added to for this long is emitted as it stands (ms). */
  idleMs: number;
  /** A line redrawn without pause (a progress bar) is emitted as it stands at least this often (ms). */
  everyMs: number;
}

/**
 * Splits a worker's output stream into lines, holding at most `maxBytes` of any one line: the rest of
 * an over-long line is counted and dropped as it arrives. (node:readline buffered a whole line until
 * its newline: a handler printing a 200 MB line without one grew the service by as much, and a
 * ~512 MB one crashed it with V8's "Invalid string length".)
 *
 * A line ends at "\n" or "\r\n". A lone "\r" is a carriage return, as on a terminal: what is printed
 * after it replaces the line so far (a progress bar's redraw, tqdm-style), so only the line's final
 * state is a line, not one line per redraw; a line that ends in "\r" keeps what was printed before it.
 * (Replaced whole: a shorter redraw without padding does not keep the old line's tail, as a terminal
 * would.) A line that is not finished is emitted as it stands once it is idle for `flush.idleMs`, or
 * every `flush.everyMs` while it is being redrawn, so a follower sees a bar that has stopped or is
 * slow; what comes after such an emit starts a new entry, and a newline right after it adds none.
 * Lines are split on bytes, which is safe for UTF-8 ("\n" and "\r" never occur inside a multi-byte
 * character) and decoded once whole; invalid UTF-8 becomes U+FFFD.
 */
export class LineSplitter {
  readonly #maxBytes: number;
  readonly #emit: (line: string, cutBytes: number) => void;
  readonly #flush: LineFlush | null;
  #parts: Buffer[] = [];
  /** The last this many parts are views of the chunk being pushed: copied when the push ends. */
  #views = 0;
  #kept = 0;
  #cut = 0;
  /** The last byte was a lone "\r": a "\n" next ends the line, anything else replaces it. */
  #cr = false;
  /** The line so far was emitted by a flush and nothing came since: a newline now emits nothing. */
  #flushed = false;
  /** When the unfinished line got its first byte since the last emit, and its latest one (ms). */
  #since = Number.NaN;
  #last = Number.NaN;
  #timer: Timer | null = null;

  constructor(maxBytes: number, emit: (line: string, cutBytes: number) => void, flush?: LineFlush) {
    this.#maxBytes = Math.max(1, Math.floor(maxBytes));
    this.#emit = emit;
    this.#flush = flush ?? null;
  }

  /** Bytes of the current, unfinished line held now (never more than maxBytes). */
  get buffered(): number {
    return this.#kept;
  }

  push(chunk: Buffer): void {
    let start = 0;
    let i = 0;
    // The next "\n" and "\r" at or after i, found natively (a bar's bytes are not looped over one by one).
    let lf = -2;
    let cr = -2;
    while (i < chunk.length) {
      if (this.#cr) {
        const byte = chunk[i];
        if (byte === 0x0d) {
          start = ++i;
          continue;
        }
        this.#cr = false;
        if (byte === 0x0a) {
          this.#end();
          start = ++i;
          continue;
        }
        this.#redraw();
      }
      if (lf !== -1 && lf < i) lf = chunk.indexOf(0x0a, i);
      if (cr !== -1 && cr < i) cr = chunk.indexOf(0x0d, i);
      const at = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (at === -1) break;
      this.#take(chunk, start, at);
      if (at === lf) this.#end();
      else this.#cr = true;
      start = i = at + 1;
    }
    this.#take(chunk, start, chunk.length);
    // Copies of what is kept past this push: the pipe's chunk is not kept alive by a few bytes of it.
    // (Only now: a redraw drops most views before they would be worth copying.)
    for (let at = this.#parts.length - this.#views; at < this.#parts.length; at++)
      this.#parts[at] = Buffer.from(this.#parts[at] as Buffer);
    this.#views = 0;
    if (this.#flush && this.#pending()) this.#arm();
  }

  /** The stream ended: a last line without a newline is still a line. */
  end(): void {
    this.#timer?.cancel();
    this.#timer = null;
    if (this.#pending()) this.#end();
  }

  #pending(): boolean {
    return this.#kept > 0 || this.#cut > 0;
  }

  #take(chunk: Buffer, from: number, to: number): void {
    if (to <= from) return;
    if (this.#flush) {
      const now = this.#flush.clock.now();
      if (Number.isNaN(this.#since)) this.#since = now;
      this.#last = now;
    }
    this.#flushed = false;
    const room = this.#maxBytes - this.#kept;
    const take = Math.min(room, to - from);
    if (take > 0) {
      this.#parts.push(chunk.subarray(from, from + take));
      this.#views++;
      this.#kept += take;
    }
    this.#cut += to - from - take;
  }

  /** A carriage return followed by more: the line so far is drawn over (held memory stays bounded). */
  #redraw(): void {
    this.#parts = [];
    this.#views = 0;
    this.#kept = 0;
    this.#cut = 0;
  }

  #end(): void {
    // Already shown by a flush, and nothing since: the newline only finishes it.
    if (this.#flushed && !this.#pending()) {
      this.#flushed = false;
      return;
    }
    this.#emitPending();
    this.#flushed = false;
  }

  #emitPending(): void {
    const parts = this.#parts;
    const line =
      parts.length === 1 ? (parts[0] as Buffer).toString("utf8") : Buffer.concat(parts).toString("utf8");
    const cut = this.#cut;
    this.#parts = [];
    this.#views = 0;
    this.#kept = 0;
    this.#cut = 0;
    this.#since = Number.NaN;
    this.#emit(line, cut);
  }

  /** One timer at a time, not one per chunk: it re-arms itself for what is due when it fires. */
  #arm(): void {
    const flush = this.#flush;
    if (!flush || this.#timer) return;
    const due = Math.min(this.#last + flush.idleMs, this.#since + flush.everyMs);
    this.#timer = flush.clock.setTimer(Math.max(0, due - flush.clock.now()), () => {
      this.#timer = null;
      if (!this.#pending()) return;
      const now = flush.clock.now();
      if (now >= this.#last + flush.idleMs || now >= this.#since + flush.everyMs) {
        this.#emitPending();
        this.#flushed = true;
      } else this.#arm();
    });
  }
}
