import type { Clock, Timer } from "../../clock";

/**
 * Emptying a long-lived Map or Set in place costs a full collection later. V8 allocates the hash
 * table that replaces a collection's own (on `clear()`, on a `delete` that shrinks it, on the growth
 * or rehash that follows) in the generation the collection lives in: a collection kept since start is
 * in the old generation, so one emptied and refilled on every request (an index of the one job in
 * flight, the marks of a flush) leaves 120-150 bytes of old-generation garbage each time, even
 * `clear()` on an empty one (bench/tools/map-churn.ts), which only a mark-compact frees. These give
 * back the collection to keep instead: a new empty one (young, like any fresh allocation) when the
 * old one would be emptied, the same one otherwise.
 */
export function emptied<C extends Map<unknown, unknown> | Set<unknown>>(collection: C, fresh: () => C): C {
  return collection.size === 0 ? collection : fresh();
}

/** `map.delete(key)`, or a new empty Map when `key` was its only entry (see emptied). */
export function without<K, V>(map: Map<K, V>, key: K): Map<K, V> {
  if (map.size === 1 && map.has(key)) return new Map<K, V>();
  map.delete(key);
  return map;
}

/** A double-ended queue on a growable ring buffer: O(1) at both ends, no shifting of arrays. */
export class Deque<T> {
  #items: (T | undefined)[] = new Array(16);
  #head = 0;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  push(item: T): void {
    this.#grow();
    this.#items[(this.#head + this.#size) & (this.#items.length - 1)] = item;
    this.#size++;
  }

  /** Appends items[from..] in order, growing the ring once (a restored queue of 100,000 rows). */
  pushAll(items: readonly T[], from = 0): void {
    const size = this.#size + Math.max(0, items.length - from);
    if (size > this.#items.length) {
      let capacity = this.#items.length;
      while (capacity < size) capacity *= 2;
      const bigger: (T | undefined)[] = new Array(capacity);
      for (let i = 0; i < this.#size; i++)
        bigger[i] = this.#items[(this.#head + i) & (this.#items.length - 1)];
      this.#items = bigger;
      this.#head = 0;
    }
    const mask = this.#items.length - 1;
    let at = this.#head + this.#size;
    for (let i = from; i < items.length; i++) this.#items[at++ & mask] = items[i];
    this.#size = size;
  }

  unshift(item: T): void {
    this.#grow();
    this.#head = (this.#head - 1) & (this.#items.length - 1);
    this.#items[this.#head] = item;
    this.#size++;
  }

  shift(): T | undefined {
    if (this.#size === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head = (this.#head + 1) & (this.#items.length - 1);
    this.#size--;
    return item;
  }

  peek(): T | undefined {
    return this.#size === 0 ? undefined : this.#items[this.#head];
  }

  *[Symbol.iterator](): Iterator<T> {
    for (let i = 0; i < this.#size; i++) yield this.#items[(this.#head + i) & (this.#items.length - 1)] as T;
  }

  /** Removes the first entry that is `item` (O(n)); false when there is none. */
  remove(item: T): boolean {
    const mask = this.#items.length - 1;
    for (let i = 0; i < this.#size; i++) {
      if (this.#items[(this.#head + i) & mask] !== item) continue;
      for (let j = i; j < this.#size - 1; j++)
        this.#items[(this.#head + j) & mask] = this.#items[(this.#head + j + 1) & mask];
      this.#items[(this.#head + this.#size - 1) & mask] = undefined;
      this.#size--;
      return true;
    }
    return false;
  }

  clear(): void {
    this.#items = new Array(16);
    this.#head = 0;
    this.#size = 0;
  }

  #grow(): void {
    if (this.#size < this.#items.length) return;
    const bigger: (T | undefined)[] = new Array(this.#items.length * 2);
    for (let i = 0; i < this.#size; i++) bigger[i] = this.#items[(this.#head + i) & (this.#items.length - 1)];
    this.#items = bigger;
    this.#head = 0;
  }
}

/**
 * Deadlines on the injected clock: a min-heap with one clock timer armed for the earliest entry, so
 * a million jobs cost one timer. Entries are never removed early; the callback decides whether a due
 * entry still matters (lazy deletion). Times and items sit in two parallel arrays (times unboxed as
 * doubles): no object and no boxed number per entry, ~16 bytes each.
 */
export class DeadlineQueue<T> {
  readonly #at: number[] = [];
  readonly #items: T[] = [];
  readonly #clock: Clock;
  readonly #onDue: (item: T, at: number) => void;
  #timer: Timer | null = null;
  #armedAt = Number.POSITIVE_INFINITY;
  #stopped = false;

  constructor(clock: Clock, onDue: (item: T, at: number) => void) {
    this.#clock = clock;
    this.#onDue = onDue;
  }

  get size(): number {
    return this.#at.length;
  }

  add(at: number, item: T): void {
    const times = this.#at;
    const items = this.#items;
    times.push(at);
    items.push(item);
    let i = times.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((times[parent] as number) <= at) break;
      times[i] = times[parent] as number;
      items[i] = items[parent] as T;
      i = parent;
    }
    times[i] = at;
    items[i] = item;
    if (at < this.#armedAt) this.#arm();
  }

  /**
   * Drops every entry whose item `keep` refuses (items that left: their deadlines no longer matter),
   * so that they are not held until their time comes. O(n log n); callers make it rare.
   */
  compact(keep: (item: T) => boolean): void {
    const entries: { at: number; item: T }[] = [];
    for (let i = 0; i < this.#at.length; i++) {
      const item = this.#items[i] as T;
      if (keep(item)) entries.push({ at: this.#at[i] as number, item });
    }
    entries.sort((a, b) => a.at - b.at); // a sorted array is a heap
    this.#at.length = 0;
    this.#items.length = 0;
    for (const entry of entries) {
      this.#at.push(entry.at);
      this.#items.push(entry.item);
    }
    this.#arm();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = null;
  }

  #arm(): void {
    this.#timer?.cancel();
    this.#timer = null;
    this.#armedAt = Number.POSITIVE_INFINITY;
    if (this.#at.length === 0 || this.#stopped) return;
    const top = this.#at[0] as number;
    this.#armedAt = top;
    this.#timer = this.#clock.setTimer(top - this.#clock.now(), () => this.#fire());
  }

  #fire(): void {
    this.#timer = null;
    this.#armedAt = Number.POSITIVE_INFINITY;
    const now = this.#clock.now();
    while (!this.#stopped && this.#at.length > 0 && (this.#at[0] as number) <= now) {
      const at = this.#at[0] as number;
      const item = this.#pop();
      this.#onDue(item, at);
    }
    this.#arm();
  }

  /** Removes the earliest entry and returns its item. */
  #pop(): T {
    const times = this.#at;
    const items = this.#items;
    const top = items[0] as T;
    const lastAt = times.pop() as number;
    const lastItem = items.pop() as T;
    const n = times.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= n) break;
        const right = left + 1;
        const child = right < n && (times[right] as number) < (times[left] as number) ? right : left;
        if ((times[child] as number) >= lastAt) break;
        times[i] = times[child] as number;
        items[i] = items[child] as T;
        i = child;
      }
      times[i] = lastAt;
      items[i] = lastItem;
    }
    return top;
  }
}
