/**
 * Splits a worker's output stream into lines, holding at most `maxBytes` of any one line: the rest of
 * an over-long line is counted and dropped as it arrives. (node:readline buffered a whole line until
 * its newline: a handler printing a 200 MB line without one grew the service by as much, and a
 * ~512 MB one crashed it with V8's "Invalid string length".)
 *
 * A line ends at "\n", "\r\n" or a lone "\r" (a progress bar's redraw), as readline's did. Lines are
 * split on bytes, which is safe for UTF-8 ("\n" and "\r" never occur inside a multi-byte character)
 * and decoded once whole; invalid UTF-8 becomes U+FFFD.
 */
export class LineSplitter {
  readonly #maxBytes: number;
  readonly #emit: (line: string, cutBytes: number) => void;
  #parts: Buffer[] = [];
  #kept = 0;
  #cut = 0;
  /** The last chunk ended with "\r": a "\n" starting the next one belongs to that line end. */
  #afterCr = false;

  constructor(maxBytes: number, emit: (line: string, cutBytes: number) => void) {
    this.#maxBytes = Math.max(1, Math.floor(maxBytes));
    this.#emit = emit;
  }

  /** Bytes of the current, unfinished line held now (never more than maxBytes). */
  get buffered(): number {
    return this.#kept;
  }

  push(chunk: Buffer): void {
    let start = 0;
    if (this.#afterCr && chunk.length > 0) {
      this.#afterCr = false;
      if (chunk[0] === 0x0a) start = 1;
    }
    for (let i = start; i < chunk.length; i++) {
      const byte = chunk[i];
      if (byte !== 0x0a && byte !== 0x0d) continue;
      this.#take(chunk, start, i);
      this.#end();
      if (byte === 0x0d) {
        if (i + 1 < chunk.length) {
          if (chunk[i + 1] === 0x0a) i++;
        } else {
          this.#afterCr = true;
        }
      }
      start = i + 1;
    }
    this.#take(chunk, start, chunk.length);
  }

  /** The stream ended: a last line without a newline is still a line. */
  end(): void {
    if (this.#kept > 0 || this.#cut > 0) this.#end();
  }

  #take(chunk: Buffer, from: number, to: number): void {
    if (to <= from) return;
    const room = this.#maxBytes - this.#kept;
    const take = Math.min(room, to - from);
    if (take > 0) {
      // A copy: the pipe's chunk is not kept alive by a few bytes of it.
      this.#parts.push(Buffer.from(chunk.subarray(from, from + take)));
      this.#kept += take;
    }
    this.#cut += to - from - take;
  }

  #end(): void {
    const parts = this.#parts;
    const line =
      parts.length === 1 ? (parts[0] as Buffer).toString("utf8") : Buffer.concat(parts).toString("utf8");
    const cut = this.#cut;
    this.#parts = [];
    this.#kept = 0;
    this.#cut = 0;
    this.#emit(line, cut);
  }
}
