import { describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { openDatabase } from "../../../service/db";
import { EventBus } from "../../../service/event-bus";
import { JobBook } from "../../../service/jobs/book/book";
import { DeadlineQueue, Deque, emptied, without } from "../../../service/jobs/book/collections";
import { JobMemory } from "../../../service/jobs/book/memory";
import { Watchers } from "../../../service/jobs/book/watchers";
import { splitChunk } from "../../../service/jobs/dispatch/chunks";
import { createJob } from "../../../service/jobs/model/job";
import { JobStore, jobMigrations } from "../../../service/jobs/store/job-store";

describe("Deque", () => {
  it("is FIFO at both ends across growth", () => {
    const d = new Deque<number>();
    for (let i = 0; i < 40; i++) d.push(i);
    d.unshift(-1);
    expect(d.shift()).toBe(-1);
    expect(d.shift()).toBe(0);
    expect([...d]).toEqual(Array.from({ length: 39 }, (_, i) => i + 1));
    expect(d.size).toBe(39);
  });

  it("pushAll appends in order behind what it holds, across a wrapped ring and growth", () => {
    const d = new Deque<number>();
    for (let i = 0; i < 12; i++) d.push(i);
    for (let i = 0; i < 10; i++) d.shift(); // head near the end of the 16-slot ring
    for (let i = 12; i < 18; i++) d.push(i); // wraps around
    d.pushAll([18, 19, 20]);
    expect([...d]).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    d.pushAll(Array.from({ length: 100 }, (_, i) => 21 + i)); // grows past 16 and 64
    d.unshift(9);
    expect(d.size).toBe(112);
    expect([...d]).toEqual(Array.from({ length: 112 }, (_, i) => 9 + i));
    d.pushAll([]);
    expect(d.shift()).toBe(9);
    expect(d.peek()).toBe(10);
  });

  it("pushAll from an offset appends only the items past it", () => {
    const d = new Deque<number>();
    d.push(0);
    d.pushAll([1, 2, 3, 4, 5], 2);
    expect([...d]).toEqual([0, 3, 4, 5]);
    d.pushAll([6, 7], 2);
    expect(d.size).toBe(4);
  });
});

describe("emptied and without: emptying a collection by replacing it", () => {
  it("without deletes the key in place, and answers a new empty Map when the key was the last entry", () => {
    const two = new Map([
      ["a", 1],
      ["b", 2],
    ]);
    const kept = without(two, "a");
    expect(kept).toBe(two);
    expect([...kept]).toEqual([["b", 2]]);
    const last = without(kept, "b");
    expect(last).not.toBe(kept);
    expect(last.size).toBe(0);
    // A key it does not hold changes nothing.
    const one = new Map([["c", 3]]);
    expect(without(one, "x")).toBe(one);
    expect([...one]).toEqual([["c", 3]]);
  });

  it("emptied answers the same collection when empty, a fresh one otherwise", () => {
    const empty = new Set<string>();
    expect(emptied(empty, () => new Set())).toBe(empty);
    const full = new Set(["a"]);
    const next = emptied(full, () => new Set());
    expect(next).not.toBe(full);
    expect(next.size).toBe(0);
  });
});

describe("DeadlineQueue", () => {
  it("fires entries in time order on the clock with a single timer", async () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    const q = new DeadlineQueue<string>(clock, (item, at) => fired.push(`${item}@${at}/${clock.now()}`));
    q.add(300, "c");
    q.add(100, "a");
    q.add(200, "b");
    expect(clock.pending).toBe(1);
    await clock.advance(250);
    expect(fired).toEqual(["a@100/100", "b@200/200"]);
    q.add(260, "d");
    await clock.advance(100);
    expect(fired).toEqual(["a@100/100", "b@200/200", "d@260/260", "c@300/300"]);
  });
});

describe("Watchers", () => {
  it("wakes a waiter when its condition holds, times out on the clock, and stops on abort", async () => {
    const clock = new ManualClock(0);
    const w = new Watchers(clock);
    let ready = false;
    const woken = w.waitUntil("j", 1_000, () => ready);
    ready = true;
    w.notify("j");
    expect(await woken).toBe(true);
    const timedOut = w.waitUntil("j", 1_000, () => false);
    await clock.advance(1_000);
    expect(await timedOut).toBe(false);
    const abort = new AbortController();
    const aborted = w.waitUntil("j", 1_000, () => false, abort.signal);
    abort.abort();
    expect(await aborted).toBe(false);
    expect(w.waiting).toBe(0);
  });
});

describe("splitChunk", () => {
  it("passes small outputs through, splits strings and arrays to the byte limit", () => {
    expect(splitChunk({ output: { a: 1 } }, 100)).toEqual([{ output: { a: 1 } }]);
    const parts = splitChunk({ output: "ab€".repeat(50) }, 40);
    expect(parts.map((p) => p.output).join("")).toBe("ab€".repeat(50));
    for (const p of parts) expect(Buffer.byteLength(JSON.stringify(p.output))).toBeLessThanOrEqual(40);
    const arrays = splitChunk({ output: Array.from({ length: 30 }, (_, i) => i) }, 20);
    expect(arrays.flatMap((p) => p.output as number[])).toEqual(Array.from({ length: 30 }, (_, i) => i));
    for (const p of arrays) expect(JSON.stringify(p.output).length).toBeLessThanOrEqual(20);
    const object = splitChunk({ output: { text: "x".repeat(100) } }, 30);
    expect(object.map((p) => p.output).join("")).toBe(JSON.stringify({ text: "x".repeat(100) }));
    // An array with an item too large for a chunk of its own: pieces of the array's JSON text.
    const oversized = splitChunk({ output: ["z".repeat(60), 1] }, 30);
    expect(JSON.parse(oversized.map((p) => p.output).join(""))).toEqual(["z".repeat(60), 1]);
    for (const p of oversized) expect(Buffer.byteLength(JSON.stringify(p.output))).toBeLessThanOrEqual(30);
    // An item that fits exactly alone (its one-item array is 30 bytes) is still a sub-array.
    expect(splitChunk({ output: ["z".repeat(26), "z".repeat(26)] }, 30)).toEqual([
      { output: ["z".repeat(26)] },
      { output: ["z".repeat(26)] },
    ]);
    // A split chunk's metrics go with its last piece only.
    const measured = splitChunk({ output: "y".repeat(50), metrics: { n: 1 } }, 20);
    expect(measured.map((p) => p.metrics)).toEqual([...Array(measured.length - 1).fill(undefined), { n: 1 }]);
  });
});

describe("JobStore", () => {
  const job = (id: string, now: number) =>
    createJob({ id, accountId: "acc", endpointId: "ep", kind: "async", input: { id }, now });

  it("writes marked changes once per turn in one transaction, readable after flushed()", async () => {
    const store = new JobStore(openDatabase(":memory:", jobMigrations));
    const a = job("a", 1);
    store.save(a);
    a.status = "COMPLETED";
    a.startedAt = 5;
    a.completedAt = 6;
    store.save(a);
    expect(store.isPending("a")).toBe(true);
    // Not written yet: the pending state itself is what a read gets.
    expect(store.get("a")).toBe(a);
    await store.flushed();
    expect(store.isPending("a")).toBe(false);
    expect(store.get("a")).toMatchObject({
      id: "a",
      status: "COMPLETED",
      startedAt: 5,
      input: { id: "a" },
    });
    store.remove(a);
    await store.flushed();
    expect(store.get("a")).toBeUndefined();
  });

  it("loads live jobs in queue order and deletes only expired finished ones", async () => {
    const store = new JobStore(openDatabase(":memory:", jobMigrations));
    const late = job("late", 20);
    const early = job("early", 10);
    const done = job("done", 0);
    done.status = "COMPLETED";
    done.completedAt = 0;
    for (const j of [late, early, done]) store.save(j);
    store.flush();
    expect([...store.loadLive()].map((j) => j.id)).toEqual(["early", "late"]);
    expect(store.deleteExpired(30 * 60_000 - 1, 100)).toEqual({ removed: [], deleted: 0 });
    expect(store.deleteExpired(30 * 60_000, 100)).toEqual({
      removed: [{ id: "done", endpointId: "ep", status: "COMPLETED", retries: 0 }],
      deleted: 1,
    });
    expect([...store.loadLive()]).toHaveLength(2);
  });

  it("queued rows come back in queue order: requeued jobs merged in by when they re-entered", () => {
    const db = openDatabase(":memory:", jobMigrations);
    const store = new JobStore(db);
    const [q1, q2, q3, q4] = [job("q1", 10), job("q2", 20), job("q3", 30), job("q4", 40)];
    if (!q1 || !q2 || !q3 || !q4) throw new Error("four jobs expected");
    q1.retries = 1;
    q1.queuedAt = 25;
    q4.retries = 2;
    q4.queuedAt = 5;
    for (const j of [q1, q2, q3, q4]) store.save(j);
    store.flush();
    const startup = new JobStore(db).startup();
    expect(startup.queues.get("ep")).toEqual([q4, q2, q1, q3].map((j) => j.storeRow));
    expect(startup.counts).toEqual([
      { endpointId: "ep", status: "IN_QUEUE", count: 4, retries: 3, lowPriority: 0 },
    ]);
  });

  it("restored live jobs keep their rows: a finished one is updated in place, a removed one is gone", () => {
    const db = openDatabase(":memory:", jobMigrations);
    const first = new JobStore(db);
    for (const j of [job("q1", 1), job("q2", 2)]) first.save(j);
    first.flush();
    const store = new JobStore(db);
    const [q1, q2] = [...store.loadLive()];
    if (!q1 || !q2) throw new Error("two live jobs expected");
    expect(q1.storeRow).toBeGreaterThan(0);
    expect(q1.inputText).toBe('{"id":"q1"}');
    q1.status = "COMPLETED";
    q1.completedAt = 3;
    store.save(q1);
    store.remove(q2);
    store.flush();
    expect(store.get("q1")).toMatchObject({ id: "q1", status: "COMPLETED", input: { id: "q1" } });
    expect(store.get("q2")).toBeUndefined();
    expect(store.counts()).toEqual([{ endpointId: "ep", status: "COMPLETED", count: 1, retries: 0 }]);
    // A later job gets a new row, not one in use.
    const next = job("q3", 4);
    store.save(next);
    store.flush();
    expect(next.storeRow).toBeGreaterThan(q2.storeRow);
  });
});

describe("DeadlineQueue.compact", () => {
  it("drops refused entries and keeps the rest firing in time order", async () => {
    const clock = new ManualClock(0);
    const fired: number[] = [];
    const q = new DeadlineQueue<number>(clock, (item) => fired.push(item));
    for (const n of [50, 10, 40, 20, 30, 60]) q.add(n * 10, n);
    q.compact((n) => n % 20 !== 0);
    expect(q.size).toBe(3);
    await clock.advance(1_000);
    expect(fired).toEqual([10, 30, 50]);
  });
});

/** A book on an in-memory store whose `count` async jobs on endpoint "ep" were run and completed at time 0. */
function bookWithFinishedJobs(count: number) {
  const clock = new ManualClock(0);
  const store = new JobStore(openDatabase(":memory:", jobMigrations));
  const book = new JobBook(store, clock, { recentCacheSize: 10, hotQueued: 10 }, new EventBus());
  for (let i = 0; i < count; i++) {
    const job = createJob({
      id: `j${i}`,
      accountId: "a",
      endpointId: "ep",
      kind: "async",
      input: {},
      now: 0,
    });
    book.submit(job);
    book.start(book.nextQueued("ep") as typeof job, "w");
    book.finish(job, "COMPLETED", { output: i });
  }
  return { clock, store, book };
}

describe("JobBook deadlines", () => {
  it("finished jobs' deadlines do not pile up (they would hold each job for its ttl)", () => {
    const { book } = bookWithFinishedJobs(5_000);
    // Two deadlines a job (ttl, execution), all of jobs that left: compacted as they accumulate.
    expect(book.deadlineCount).toBeLessThan(2_100);
  });
});

describe("JobBook sweep", () => {
  it("deletes expired results a batch at a time (a restart after days held the event loop for seconds)", async () => {
    const { clock, store, book } = bookWithFinishedJobs(5_000);
    store.flush();
    expect(book.counts("ep").completed).toBe(5_000);
    // Within the retention (30 minutes after /run), nothing goes.
    await clock.advance(30 * 60_000 - 1);
    expect(book.sweep()).toBe(false);
    expect(book.counts("ep").completed).toBe(5_000);
    // Past it: 2,000 a sweep, each saying whether more are due; then none is left, in the store too.
    await clock.advance(1);
    expect(book.sweep()).toBe(true);
    expect(book.counts("ep").completed).toBe(3_000);
    expect(book.sweep()).toBe(true);
    expect(book.sweep()).toBe(false);
    expect(book.counts("ep").completed).toBe(0);
    expect(store.counts()).toEqual([]);
  });
});

describe("JobMemory reservations", () => {
  const job = () =>
    createJob({ id: "j", accountId: "a", endpointId: "ep", kind: "async", input: {}, now: 0 });
  const memory = () => new JobMemory({ budgetBytes: 1_000, spillInputBytes: 100, spillOutputBytes: 100 });

  it("stream chunks take their body's reservation over: the surplus is freed, the excess must fit", () => {
    const m = memory();
    const j = job();
    const smaller = m.reserve(300);
    expect(m.used).toBe(300);
    m.holdStream(j, 250, smaller);
    expect([m.used, j.streamBytes, smaller.held]).toEqual([250, 250, 0]);
    smaller.release(); // handed over: freeing it again changes nothing
    expect(m.used).toBe(250);

    const larger = m.reserve(600);
    expect(m.used).toBe(850);
    // 200 more than its reservation: 150 free is not enough; the refusal leaves everything as it was.
    expect(() => m.holdStream(j, 800, larger)).toThrow(/memory budget for jobs \(1000 bytes\)/);
    expect([m.used, j.streamBytes, larger.held]).toEqual([850, 250, 600]);
    m.holdStream(j, 700, larger);
    expect([m.used, j.streamBytes, larger.held]).toEqual([950, 950, 0]);
    m.releaseStream(j);
    expect(m.used).toBe(0);
  });

  it("a reservation is freed once, and counts at most the whole budget", () => {
    const m = memory();
    const r = m.reserve(5_000);
    expect([m.used, r.held]).toEqual([1_000, 1_000]);
    expect(() => m.reserve(1)).toThrow(/used up \(1000 held\)/);
    r.release();
    r.release();
    expect(m.used).toBe(0);
  });
});
