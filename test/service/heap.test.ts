import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";

/*
 * service/heap.ts, in a process of its own (the test runner's heap is neither small nor the service's):
 * the collection after start gives the young generation back, leaves no `gc` behind, and is skipped
 * when the live heap is large.
 */

const LOADER = `file://${resolve("node_modules/tsx/dist/loader.mjs")}`;
const HEAP = resolve("service/heap.ts");

const Outcome = z.object({
  newSpaceBefore: z.number(),
  newSpaceAfter: z.number(),
  ran: z.boolean(),
  gcInNewContext: z.string(),
  gcGlobal: z.string(),
  ranWithLargeHeap: z.boolean(),
});

const SCRIPT = `
import { getHeapSpaceStatistics } from "node:v8";
import { runInNewContext } from "node:vm";
const { releaseStartupMemory } = await import(${JSON.stringify(HEAP)});
const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size;
// Startup-like allocation: many objects that live a while grow the young generation.
let keep = [];
for (let i = 0; i < 400000; i++) { keep.push({ i, s: "x" + i }); if (keep.length > 100000) keep = []; }
keep = [];
const newSpaceBefore = newSpace();
const ran = releaseStartupMemory() !== undefined;
const newSpaceAfter = newSpace();
const gcInNewContext = runInNewContext("typeof gc");
const gcGlobal = typeof globalThis.gc;
const large = Array.from({ length: 1_000_000 }, (_, i) => ({ i, s: "y" + i }));
const ranWithLargeHeap = releaseStartupMemory() !== undefined;
process.stdout.write(JSON.stringify({ newSpaceBefore, newSpaceAfter, ran, gcInNewContext, gcGlobal, ranWithLargeHeap, kept: large.length }));
`;

describe("releaseStartupMemory", () => {
  it("shrinks the young generation once, leaves no gc exposed, and skips a large heap", () => {
    const out = execFileSync(process.execPath, ["--import", LOADER, "--input-type=module", "-e", SCRIPT], {
      encoding: "utf8",
    });
    const outcome = Outcome.parse(JSON.parse(out));
    expect(outcome.ran).toBe(true);
    expect(outcome.newSpaceBefore).toBeGreaterThan(outcome.newSpaceAfter);
    expect(outcome.newSpaceAfter).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(outcome.gcInNewContext).toBe("undefined");
    expect(outcome.gcGlobal).toBe("undefined");
    expect(outcome.ranWithLargeHeap).toBe(false);
  });
});

const Growth = z.object({
  set: z.boolean(),
  newSpaceMax: z.number(),
  newSpaceAfter: z.number(),
  setWithLargeHeap: z.boolean(),
});

/** A burst of short-lived garbage (as /run at full rate makes), with or without favourMemoryOverSpeed first. */
const BURST = (favour: boolean) => `
import { getHeapSpaceStatistics } from "node:v8";
const { favourMemoryOverSpeed, heapIsSmall } = await import(${JSON.stringify(HEAP)});
const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size;
const set = ${favour} && heapIsSmall();
if (set) favourMemoryOverSpeed();
let keep = [];
let newSpaceMax = 0;
for (let i = 0; i < 2_000_000; i++) {
  keep.push({ i, s: "x" + i });
  if (keep.length > 100000) keep = [];
  if (i % 10000 === 0) newSpaceMax = Math.max(newSpaceMax, newSpace());
}
keep = [];
const newSpaceAfter = newSpace();
const large = Array.from({ length: 1_000_000 }, (_, i) => ({ i, s: "y" + i }));
const setWithLargeHeap = heapIsSmall();
process.stdout.write(JSON.stringify({ set, newSpaceMax, newSpaceAfter, setWithLargeHeap, kept: large.length }));
`;

describe("favourMemoryOverSpeed", () => {
  it("keeps a fraction of the young generation a burst grows without it, and skips a large heap", () => {
    const run = (favour: boolean) =>
      Growth.parse(
        JSON.parse(
          execFileSync(process.execPath, ["--import", LOADER, "--input-type=module", "-e", BURST(favour)], {
            encoding: "utf8",
          }),
        ),
      );
    const plain = run(false);
    const favoured = run(true);
    expect(favoured.set).toBe(true);
    expect(favoured.newSpaceMax).toBeLessThan(plain.newSpaceMax);
    expect(favoured.newSpaceAfter).toBeLessThanOrEqual(plain.newSpaceAfter / 4);
    expect(plain.setWithLargeHeap).toBe(false);
  });
});

const Tiers = z.object({
  deferred: z.boolean(),
  whileDeferred: z.number(),
  insideWith: z.number(),
  afterWith: z.number(),
  resumed: z.boolean(),
  afterResume: z.number(),
});

/** V8's %GetOptimizationStatus bit for "optimized" (Maglev or Turbofan code). */
const OPTIMIZED = 1 << 4;

const TIERS = `
const { deferOptimizingCompilers, resumeOptimizingCompilers, withOptimizingCompilers } = await import(${JSON.stringify(HEAP)});
const hot = (n) => { let s = 0; for (let i = 0; i < n; i++) s += i % 7; return s; };
const warm = (fn) => { for (let i = 0; i < 20000; i++) fn(100); return %GetOptimizationStatus(fn); };
const deferred = deferOptimizingCompilers();
const whileDeferred = warm(hot);
const hotWith = (n) => { let s = 0; for (let i = 0; i < n; i++) s += i % 3; return s; };
const insideWith = withOptimizingCompilers(() => warm(hotWith));
const hotAfter = (n) => { let s = 0; for (let i = 0; i < n; i++) s += i % 11; return s; };
const afterWith = warm(hotAfter);
const resumed = resumeOptimizingCompilers();
const hot2 = (n) => { let s = 0; for (let i = 0; i < n; i++) s += i % 5; return s; };
const afterResume = warm(hot2);
process.stdout.write(JSON.stringify({ deferred, whileDeferred, insideWith, afterWith, resumed, afterResume }));
`;

describe("deferOptimizingCompilers / resumeOptimizingCompilers", () => {
  const run = (flags: string[]) =>
    Tiers.parse(
      JSON.parse(
        execFileSync(
          process.execPath,
          ["--allow-natives-syntax", ...flags, "--import", LOADER, "--input-type=module", "-e", TIERS],
          { encoding: "utf8" },
        ),
      ),
    );

  it("hot code stays unoptimized while deferred, is optimized inside withOptimizingCompilers and once resumed", () => {
    const outcome = run([]);
    expect(outcome.deferred).toBe(true);
    expect(outcome.whileDeferred & OPTIMIZED).toBe(0);
    // withOptimizingCompilers: on for its work, off again after.
    expect(outcome.insideWith & OPTIMIZED).toBe(OPTIMIZED);
    expect(outcome.afterWith & OPTIMIZED).toBe(0);
    expect(outcome.resumed).toBe(true);
    expect(outcome.afterResume & OPTIMIZED).toBe(OPTIMIZED);
  });

  it("leaves a process started with a tiering flag of its own as it is", () => {
    const outcome = run(["--no-maglev", "--no-turbofan"]);
    expect(outcome.deferred).toBe(false);
    expect(outcome.resumed).toBe(false);
    expect(outcome.afterResume & OPTIMIZED).toBe(0);
  });
});

describe("youngGenerationSizedAtStart", () => {
  const SIZED = `
const { youngGenerationSizedAtStart } = await import(${JSON.stringify(HEAP)});
process.stdout.write(JSON.stringify(youngGenerationSizedAtStart()));
`;
  const run = (flags: string[], nodeOptions?: string) =>
    z.boolean().parse(
      JSON.parse(
        execFileSync(process.execPath, [...flags, "--import", LOADER, "--input-type=module", "-e", SIZED], {
          encoding: "utf8",
          env: { ...process.env, NODE_OPTIONS: nodeOptions ?? "" },
        }),
      ),
    );

  it("is true for a young generation sized on the command line or in NODE_OPTIONS, false otherwise", () => {
    expect(run([])).toBe(false);
    expect(run(["--max-old-space-size=512"])).toBe(false);
    expect(run(["--max-semi-space-size=8"])).toBe(true);
    expect(run(["--max_semi_space_size=8"])).toBe(true);
    expect(run(["--optimize-for-size"])).toBe(true);
    expect(run([], "--max-semi-space-size=4")).toBe(true);
  });
});

const Loads = z.object({
  insideLoad: z.number(),
  whileOtherLoadRuns: z.number(),
  afterLoads: z.number(),
  afterFailedLoad: z.number(),
  failure: z.string(),
});

/** `owns`: the process deferred its compilers at start (as the CLI does), then resumed them (as startService does). */
const LOADS = (owns: boolean) => `
const { deferOptimizingCompilers, resumeOptimizingCompilers, withoutOptimizingCompilers } = await import(${JSON.stringify(HEAP)});
const warm = (fn) => { for (let i = 0; i < 20000; i++) fn(100); return %GetOptimizationStatus(fn); };
if (${owns}) { deferOptimizingCompilers(); resumeOptimizingCompilers(); }
const hot1 = (n) => { let s = 0; for (let i = 0; i < n; i++) s += i % 3; return s; };
const hot2 = (n) => { let s = 0; for (let i = 0; i < n; i++) s += i % 5; return s; };
const hot3 = (n) => { let s = 0; for (let i = 0; i < n; i++) s += i % 7; return s; };
const hot4 = (n) => { let s = 0; for (let i = 0; i < n; i++) s += i % 11; return s; };
let insideLoad;
let release;
const slow = withoutOptimizingCompilers(() => new Promise((resolve) => { release = resolve; }));
await withoutOptimizingCompilers(async () => { insideLoad = warm(hot1); });
// The first load is still running: the compilers stay off until it settles too.
const whileOtherLoadRuns = warm(hot2);
release();
await slow;
const afterLoads = warm(hot3);
const failure = await withoutOptimizingCompilers(async () => { throw new Error("load failed"); }).catch((e) => e.message);
const afterFailedLoad = warm(hot4);
process.stdout.write(JSON.stringify({ insideLoad, whileOtherLoadRuns, afterLoads, afterFailedLoad, failure }));
`;

describe("withoutOptimizingCompilers", () => {
  const run = (owns: boolean) =>
    Loads.parse(
      JSON.parse(
        execFileSync(
          process.execPath,
          ["--allow-natives-syntax", "--import", LOADER, "--input-type=module", "-e", LOADS(owns)],
          { encoding: "utf8" },
        ),
      ),
    );

  it("keeps hot code unoptimized while a load runs (overlapping loads too), and optimizes again after", () => {
    const outcome = run(true);
    expect(outcome.insideLoad & OPTIMIZED).toBe(0);
    expect(outcome.whileOtherLoadRuns & OPTIMIZED).toBe(0);
    expect(outcome.afterLoads & OPTIMIZED).toBe(OPTIMIZED);
    // A load that fails gives the compilers back too, and its error to the caller.
    expect(outcome.failure).toBe("load failed");
    expect(outcome.afterFailedLoad & OPTIMIZED).toBe(OPTIMIZED);
  });

  it("leaves a process whose compilers it did not defer (one embedding the service) as it is", () => {
    const outcome = run(false);
    expect(outcome.insideLoad & OPTIMIZED).toBe(OPTIMIZED);
    expect(outcome.whileOtherLoadRuns & OPTIMIZED).toBe(OPTIMIZED);
    expect(outcome.afterLoads & OPTIMIZED).toBe(OPTIMIZED);
  });
});
