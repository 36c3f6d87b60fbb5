import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hashOf, RowIndex } from "../../../service/jobs/store/row-index";

describe("RowIndex (job id -> store row, outside the V8 heap)", () => {
  it("agrees with a Map through adds and deletes, growing and shrinking", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 3_000 })), { maxLength: 6_000 }),
        (ops) => {
          const index = new RowIndex();
          const model = new Map<string, number>();
          for (const [add, n] of ops) {
            const id = `job-${n}`;
            if (add) {
              index.add(id, n + 1);
              model.set(id, n + 1);
            } else {
              index.delete(id, n + 1);
              model.delete(id);
            }
          }
          expect(index.size).toBe(model.size);
          for (let n = 0; n <= 3_000; n++) {
            const id = `job-${n}`;
            const row = model.get(id);
            expect(index.candidates(id).includes(n + 1)).toBe(row !== undefined);
          }
        },
      ),
      { numRuns: 30 },
    );
  });

  it("keeps entries whose hashes collide apart; the caller tells them by the row", () => {
    // Many entries in a table kept at most half full: runs of probes, deletions from their middles.
    const index = new RowIndex();
    const ids = Array.from({ length: 200 }, (_, i) => `id-${i}`);
    for (const [i, id] of ids.entries()) index.add(id, i + 1);
    for (const [i, id] of ids.entries()) if (i % 3 === 0) index.delete(id, i + 1);
    for (const [i, id] of ids.entries()) {
      expect(index.candidates(id).includes(i + 1)).toBe(i % 3 !== 0);
    }
    // Same id, two rows (a hash collision looks like this to the index).
    index.add("twin", 1_001);
    index.add("twin", 1_002);
    expect(index.candidates("twin").sort()).toEqual([1_001, 1_002]);
    index.delete("twin", 1_001);
    expect(index.candidates("twin")).toEqual([1_002]);
  });

  it("gives its memory back as it empties", () => {
    const index = new RowIndex();
    const small = index.bytes;
    for (let i = 1; i <= 100_000; i++) index.add(`j${i}`, i);
    expect(index.bytes).toBeGreaterThanOrEqual(100_000 * 2 * 12);
    for (let i = 1; i <= 100_000; i++) index.delete(`j${i}`, i);
    expect(index.size).toBe(0);
    expect(index.bytes).toBe(small);
    expect(index.candidates("j1")).toEqual([]);
  });

  it("reserve makes room without growing on the way; trim gives back what was not used", () => {
    const grown = new RowIndex();
    for (let i = 1; i <= 5_000; i++) grown.add(`j${i}`, i);
    const reserved = new RowIndex();
    reserved.reserve(50_000);
    const room = reserved.bytes;
    expect(room).toBeGreaterThanOrEqual(50_000 * 2 * 12);
    for (let i = 1; i <= 5_000; i++) reserved.addHash(hashOf(`j${i}`), i);
    expect(reserved.bytes).toBe(room);
    reserved.trim();
    expect(reserved.bytes).toBe(grown.bytes);
    expect(reserved.size).toBe(5_000);
    for (let i = 1; i <= 5_000; i++) expect(reserved.candidates(`j${i}`)).toEqual([i]);
    expect(reserved.candidates("j5001")).toEqual([]);
    // A reserve below what the table holds changes nothing.
    reserved.reserve(10);
    expect(reserved.bytes).toBe(grown.bytes);
  });

  it("hashes sequential ids apart", () => {
    const hashes = new Set(Array.from({ length: 10_000 }, (_, i) => hashOf(`0000-${i}-u1`)));
    expect(hashes.size).toBe(10_000);
  });
});
