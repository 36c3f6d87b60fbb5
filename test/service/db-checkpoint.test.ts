import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase, STORE_FILE_MODE, type StoreDatabase, transaction } from "../../service/db";

const migrations = [{ name: "t-001", sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)" }];
const walSize = (path: string): number => (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);

describe("the store's WAL checkpointer", () => {
  let dir: string;
  const open: StoreDatabase[] = [];
  afterEach(() => {
    for (const db of open.splice(0)) if (db.isOpen) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = (policy: { commits?: number; bytes?: number; catchUpFrames?: number } = {}) => {
    dir = mkdtempSync(join(tmpdir(), "runpodkit-wal-"));
    const path = join(dir, "service.sqlite");
    const db = openDatabase(path, migrations, { checkpoint: policy });
    open.push(db);
    const insert = db.prepare("INSERT INTO t (body) VALUES (?)");
    const commit = (bytes = 1_000) => transaction(db, () => insert.run("x".repeat(bytes)));
    return { db, path, commit };
  };

  it("turns SQLite's auto-checkpoint off on a file store; an in-memory store has no checkpointer", () => {
    const { db } = start();
    expect(db.prepare("PRAGMA wal_autocheckpoint").get()).toEqual({ wal_autocheckpoint: 0 });
    expect(db.checkpointer).not.toBeNull();
    const memory = openDatabase(":memory:", migrations);
    expect(memory.checkpointer).toBeNull();
    memory.close();
  });

  it("keeps the WAL bounded under many commits: checkpoints run on its thread, the WAL starts over", async () => {
    const { db, path, commit } = start({ commits: 50 });
    let largest = 0;
    let framesAtCheckpoint = 0;
    for (let round = 0; round < 40; round++) {
      for (let i = 0; i < 50; i++) commit();
      largest = Math.max(largest, walSize(path));
      await db.checkpointer?.settled();
      framesAtCheckpoint = Math.max(framesAtCheckpoint, db.checkpointer?.last?.log ?? 0);
    }
    // 2,000 commits of ~1 KB each wrote over 2,000 WAL frames (over 8 MB): without checkpoints the
    // WAL would hold them all. Each round's checkpoint copied everything back, and the WAL started
    // over from its beginning (SQLite does so at the first commit after a complete checkpoint; now
    // and then that takes a few rounds), so it never held more than a few rounds' frames.
    // (Bounds with room: other tests load the machine.)
    expect(db.checkpointer?.completed).toBeGreaterThanOrEqual(39);
    expect(framesAtCheckpoint).toBeGreaterThan(50);
    expect(framesAtCheckpoint).toBeLessThan(1_000);
    expect(largest).toBeLessThan(5 * 1_024 * 1_024);
    expect(largest).toBeGreaterThan(0);
    expect(db.checkpointer?.last).toMatchObject({ busy: 0 });
    expect(db.checkpointer?.last?.checkpointed).toBe(db.checkpointer?.last?.log);
    // Nothing was lost on the way: another connection reads every row from the store file.
    const reader = new DatabaseSync(path, { readOnly: true });
    expect(reader.prepare("SELECT COUNT(*) AS n FROM t").get()).toEqual({ n: 2_000 });
    reader.close();
  });

  it("keeps the WAL bounded under steady commits the thread cannot catch up with: the main connection copies the rest", async () => {
    const { db, path, commit } = start({ commits: 20, catchUpFrames: 200 });
    let largest = 0;
    for (let i = 1; i <= 6_000; i++) {
      commit();
      // The event loop turns (the thread's replies come in) but the commits never pause for it.
      if (i % 10 === 0) await new Promise((resolve) => setImmediate(resolve));
      if (i % 100 === 0) largest = Math.max(largest, walSize(path));
    }
    await db.checkpointer?.settled();
    // 6,000 commits wrote over 24 MB of WAL frames (without the catch-up the WAL held them all); it
    // started over every few hundred to ~1,500 frames (the catch-up finds the thread checkpointing
    // now and then, and waits for its next reply).
    expect(db.checkpointer?.completed).toBeGreaterThan(10);
    expect(db.checkpointer?.catchUps).toBeGreaterThan(0);
    expect(largest).toBeGreaterThan(0);
    // 3.4-4.1 MB on a loaded 2-core machine; once 10.4 MB under heavier load (the thread's reply came
    // late), since a new store's pointer-map pages (incremental auto-vacuum) add to each commit's
    // frames. Without the catch-up it holds them all: over 24 MB.
    expect(largest).toBeLessThan(16 * 1_024 * 1_024);
  });

  it("asks for a checkpoint by bytes written too (large inputs), before the commit count is reached", async () => {
    const { db } = start({ commits: 1_000_000, bytes: 64 * 1024 });
    db.checkpointer?.wrote(32 * 1024);
    expect(db.checkpointer?.completed).toBe(0);
    db.checkpointer?.wrote(40 * 1024);
    await db.checkpointer?.settled();
    expect(db.checkpointer?.completed).toBe(1);
  });

  it("a graceful close truncates the WAL and keeps the file private", () => {
    const { db, path, commit } = start({ commits: 1_000_000 });
    for (let i = 0; i < 300; i++) commit();
    expect(walSize(path)).toBeGreaterThan(300 * 1_000);
    expect(db.checkpointer?.completed).toBe(0);
    db.close();
    expect(walSize(path)).toBe(0);
    expect(statSync(path).mode & 0o777).toBe(STORE_FILE_MODE);
    const reader = new DatabaseSync(path, { readOnly: true });
    expect(reader.prepare("SELECT COUNT(*) AS n FROM t").get()).toEqual({ n: 300 });
    reader.close();
  });

  it("a close while a checkpoint runs on the thread waits for it, then truncates", async () => {
    const { db, path, commit } = start({ commits: 100 });
    for (let i = 0; i < 100; i++) commit(4_000);
    const settled = db.checkpointer?.settled();
    db.close();
    expect(walSize(path)).toBe(0);
    await settled;
  });
});
