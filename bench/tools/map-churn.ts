/**
 * `npx tsx --expose-gc bench/tools/map-churn.ts`: the old-generation bytes V8 allocates when a
 * long-lived Map or Set is emptied and refilled (service/jobs/book/collections.ts, `emptied`): per
 * operation, for a Map kept since start (moved to the old generation by two full collections)
 * that gets one entry and loses it, is cleared, or is cleared while empty, against a new Map each
 * time. The replaced hash tables are garbage only a mark-compact frees. Few enough operations (20,000)
 * that no collection runs while one case is measured.
 */
import { getHeapSpaceStatistics } from "node:v8";

const gc = (globalThis as { gc?: () => void }).gc;
if (typeof gc !== "function") throw new Error("run with --expose-gc (npx tsx --expose-gc ...)");

const oldSpace = () =>
  getHeapSpaceStatistics().find((s) => s.space_name === "old_space")?.space_used_size ?? 0;
const N = 20_000;
const keys = Array.from({ length: 64 }, (_, i) => `key-${i}`);

const cases: Record<
  string,
  (map: Map<string, number>, set: Set<string>, key: string, i: number) => Map<string, number>
> = {
  "Map set + delete (one entry)": (map, _set, key, i) => {
    map.set(key, i);
    map.delete(key);
    return map;
  },
  "Map set + clear()": (map, _set, key, i) => {
    map.set(key, i);
    map.clear();
    return map;
  },
  "Map clear() while empty": (map) => {
    map.clear();
    return map;
  },
  "Set add + clear()": (map, set, key) => {
    set.add(key);
    set.clear();
    return map;
  },
  "Map set, then a new Map": (map, _set, key, i) => {
    map.set(key, i);
    return new Map();
  },
};

for (const [name, step] of Object.entries(cases)) {
  let map = new Map<string, number>();
  const set = new Set<string>();
  gc();
  gc();
  const before = oldSpace();
  for (let i = 0; i < N; i++) map = step(map, set, keys[i & 63] as string, i);
  process.stdout.write(
    `${name.padEnd(30)} ${((oldSpace() - before) / N).toFixed(1).padStart(6)} old-generation bytes per operation\n`,
  );
}
