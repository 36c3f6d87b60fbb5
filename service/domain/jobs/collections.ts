import type { Clock, Timer } from "../../clock";

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

interface Entry<T> {
  at: number;
  item: T;
}

/**
 * Deadlines on the injected clock: a min-heap with one clock timer armed for the earliest entry, so
 * a million jobs cost one timer. Entries are never removed early; the callback decides whether a due
 * entry still matters (lazy deletion).
 */
export class DeadlineQueue<T> {
  readonly #heap: Entry<T>[] = [];
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
    return this.#heap.length;
  }

  add(at: number, item: T): void {
    const heap = this.#heap;
    const entry: Entry<T> = { at, item };
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((heap[parent] as Entry<T>).at <= at) break;
      heap[i] = heap[parent] as Entry<T>;
      i = parent;
    }
    heap[i] = entry;
    if (at < this.#armedAt) this.#arm();
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
    const top = this.#heap[0];
    if (!top || this.#stopped) return;
    this.#armedAt = top.at;
    this.#timer = this.#clock.setTimer(top.at - this.#clock.now(), () => this.#fire());
  }

  #fire(): void {
    this.#timer = null;
    this.#armedAt = Number.POSITIVE_INFINITY;
    const now = this.#clock.now();
    while (!this.#stopped && this.#heap.length > 0 && (this.#heap[0] as Entry<T>).at <= now) {
      const entry = this.#pop();
      this.#onDue(entry.item, entry.at);
    }
    this.#arm();
  }

  #pop(): Entry<T> {
    const heap = this.#heap;
    const top = heap[0] as Entry<T>;
    const last = heap.pop() as Entry<T>;
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= heap.length) break;
        const right = left + 1;
        const child =
          right < heap.length && (heap[right] as Entry<T>).at < (heap[left] as Entry<T>).at ? right : left;
        if ((heap[child] as Entry<T>).at >= last.at) break;
        heap[i] = heap[child] as Entry<T>;
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }
}
