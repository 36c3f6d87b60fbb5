/**
 * Job id -> store row, for every job whose Job object is not kept in memory (finished jobs kept for
 * their retention, queued jobs left in the store). A Map of id strings would cost ~110 bytes of V8
 * heap per job (the id's string and the map's entry), grow with the retention window (30 minutes of
 * results: 900,000 jobs at 500 jobs/s) and, being live heap, raise the size V8 grows its heap to.
 * This index keeps only a 32-bit hash of the id and the row number, in typed arrays outside the V8
 * heap (12 bytes a slot, at most half the slots used): hashes may collide, so a lookup gives the
 * candidate rows and the caller checks the row's id.
 *
 * Open addressing with linear probing; deletion shifts the following entries back (no tombstones),
 * and the table shrinks again when it empties, so its size follows the number of entries.
 */
export class RowIndex {
  /** Hash of the id of each slot (meaningful where rows[i] !== 0). */
  #hashes: Uint32Array;
  /** Row of each slot; 0: empty (rows start at 1). */
  #rows: Float64Array;
  #mask: number;
  #size = 0;

  constructor(capacity = MIN_CAPACITY) {
    this.#hashes = new Uint32Array(capacity);
    this.#rows = new Float64Array(capacity);
    this.#mask = capacity - 1;
  }

  get size(): number {
    return this.#size;
  }

  /** Bytes held by the table (outside the V8 heap). */
  get bytes(): number {
    return this.#hashes.byteLength + this.#rows.byteLength;
  }

  /** Adds (id, row); the same pair twice is one entry. */
  add(id: string, row: number): void {
    if (row <= 0) throw new RangeError(`row index: row ${row} of job ${id} is not a stored row`);
    this.addHash(hashOf(id), row);
  }

  /** Adds (id, row) by the id's hash (hashOf), as the store keeps it beside the row. */
  addHash(hash: number, row: number): void {
    if (row <= 0) throw new RangeError(`row index: row ${row} is not a stored row`);
    let i = hash & this.#mask;
    for (;;) {
      const at = this.#rows[i] as number;
      if (at === 0) break;
      if (at === row && this.#hashes[i] === hash) return;
      i = (i + 1) & this.#mask;
    }
    this.#hashes[i] = hash;
    this.#rows[i] = row;
    this.#size++;
    if (this.#size * 2 > this.#rows.length) this.#resize(this.#rows.length * 2);
  }

  /** The rows that may hold the job `id` (usually one; none when it is not indexed). */
  candidates(id: string): number[] {
    const hash = hashOf(id);
    const found: number[] = [];
    for (let i = hash & this.#mask; ; i = (i + 1) & this.#mask) {
      const at = this.#rows[i] as number;
      if (at === 0) return found;
      if (this.#hashes[i] === hash) found.push(at);
    }
  }

  /** Removes (id, row) if present. */
  delete(id: string, row: number): void {
    const hash = hashOf(id);
    const mask = this.#mask;
    let i = hash & mask;
    for (;;) {
      const at = this.#rows[i] as number;
      if (at === 0) return;
      if (at === row && this.#hashes[i] === hash) break;
      i = (i + 1) & mask;
    }
    // Backward-shift deletion: move later entries of the run into the hole when their home allows.
    let hole = i;
    for (let j = (hole + 1) & mask; (this.#rows[j] as number) !== 0; j = (j + 1) & mask) {
      const home = (this.#hashes[j] as number) & mask;
      // j's entry may move to the hole when its home is not in (hole, j] (cyclically).
      const between = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (between) continue;
      this.#hashes[hole] = this.#hashes[j] as number;
      this.#rows[hole] = this.#rows[j] as number;
      hole = j;
    }
    this.#rows[hole] = 0;
    this.#size--;
    if (this.#rows.length > MIN_CAPACITY && this.#size * 8 < this.#rows.length) {
      this.#resize(this.#rows.length / 2);
    }
  }

  /**
   * Makes room for `entries` in all, so adding them does not grow the table on the way (the scan at
   * start knows an upper bound: the span of row numbers). trim() gives back what was not used.
   */
  reserve(entries: number): void {
    const capacity = capacityFor(entries);
    if (capacity > this.#rows.length) this.#resize(capacity);
  }

  /** Shrinks the table to the size its entries would have grown it to (after a reserve). */
  trim(): void {
    const capacity = capacityFor(this.#size);
    if (capacity < this.#rows.length) this.#resize(capacity);
  }

  clear(): void {
    this.#hashes = new Uint32Array(MIN_CAPACITY);
    this.#rows = new Float64Array(MIN_CAPACITY);
    this.#mask = MIN_CAPACITY - 1;
    this.#size = 0;
  }

  #resize(capacity: number): void {
    const hashes = this.#hashes;
    const rows = this.#rows;
    this.#hashes = new Uint32Array(capacity);
    this.#rows = new Float64Array(capacity);
    this.#mask = capacity - 1;
    for (let k = 0; k < rows.length; k++) {
      const row = rows[k] as number;
      if (row === 0) continue;
      const hash = hashes[k] as number;
      let i = hash & this.#mask;
      while ((this.#rows[i] as number) !== 0) i = (i + 1) & this.#mask;
      this.#hashes[i] = hash;
      this.#rows[i] = row;
    }
  }
}

const MIN_CAPACITY = 1_024;

/** The capacity add() grows to for `entries` (at most half the slots used). */
function capacityFor(entries: number): number {
  let capacity = MIN_CAPACITY;
  while (entries * 2 > capacity) capacity *= 2;
  return capacity;
}

/** FNV-1a over the UTF-16 units, then a final mix (ids share long prefixes in tests). */
export function hashOf(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
