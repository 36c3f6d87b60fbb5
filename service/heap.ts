import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

type Gc = (options: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void;

/**
 * An empty or lightly loaded service has ~15 MB live; there the collection takes ~30 ms. It grows
 * with what is live (about 1 s for 140 MB), and a process with a large heap (a service restored with
 * a big queue, a test runner) has nothing comparable to gain from it.
 */
export const SETTLE_HEAP_BELOW = 48 * 1024 * 1024;

/**
 * One memory-reducing full garbage collection, run once the service listens. Loading and wiring the
 * service grows V8's young generation to 16 MB and leaves garbage in the old one; an idle heap is
 * never shrunk back (V8 shrinks it only under memory pressure), so an empty service would keep ~13 MB
 * it does not use. Under load the young generation grows again as before: throughput is unchanged.
 *
 * Node exposes no call for this without --expose-gc; the flag is set for the moment it takes to get
 * `gc` from a fresh context, then cleared, so no other code of the process sees a `gc` it did not ask
 * for.
 *
 * Only while the live heap is below SETTLE_HEAP_BELOW. Returns the time it took, ms, or undefined when skipped.
 */
export function releaseStartupMemory(): number | undefined {
  if (getHeapStatistics().used_heap_size >= SETTLE_HEAP_BELOW) return undefined;
  const started = performance.now();
  // Started with --expose-gc: use it, and leave the flag as the process was given it.
  let gc = (globalThis as { gc?: Gc }).gc;
  if (typeof gc !== "function") {
    setFlagsFromString("--expose-gc");
    try {
      gc = runInNewContext("gc") as Gc;
    } finally {
      setFlagsFromString("--no-expose-gc");
    }
  }
  gc({ type: "major", execution: "sync", flavor: "last-resort" });
  return performance.now() - started;
}

/** Whether the process's live heap is small enough for the settings here (below SETTLE_HEAP_BELOW). */
export function heapIsSmall(): boolean {
  return getHeapStatistics().used_heap_size < SETTLE_HEAP_BELOW;
}

/**
 * Tells V8 to favour memory over speed for the rest of the process (`--optimize-for-size`, set at
 * run time: what it changes is read as the heap runs). Without it, /run at full rate grows the young
 * generation to ~100 MB (V8 sizes it from the machine's memory) and an idle heap keeps it: 100,000
 * /run left the service at ~230 MB with 60 MB live; with it ~118 MB. The old generation's growth
 * is also held closer to what is live. The price: more frequent young-generation collections, ~8%
 * more service CPU per /run (bench/tools/run-cpu.ts, alternating services with and without it:
 * 163 vs 149 us, pairs +2 to +14%; per completed job, see below);
 * `config.favourMemoryOverSpeed: false` keeps V8's defaults.
 *
 * startService sets it once it listens (the restore of a large queue runs with V8's defaults), and
 * only when the process's heap was small when it started (heapIsSmall): a host process with a large
 * heap of its own (a test runner embedding the service) keeps its settings; so does a process started
 * with its young generation sized (youngGenerationSizedAtStart).
 *
 * End to end (bench/tools/e2e-cpu.ts: 4 workers, 5,000 jobs a run, alternating services with it and
 * with `--max-semi-space-size=32` instead, which skips it) the two did not differ beyond the spread
 * of runs on a shared 2-core machine (medians 566 vs 578 us of service CPU per job over 9 runs
 * each): a completed job allocates little, and the young generation stays small either way.
 */
export function favourMemoryOverSpeed(): void {
  setFlagsFromString("--optimize-for-size");
}

/** A young-generation size (or --optimize-for-size) given to the process at start, in V8's spellings. */
const YOUNG_GENERATION_FLAGS = /--(max[-_]semi[-_]space[-_]size|optimize[-_]for[-_]size)\b/;

/**
 * Whether the process was started with its young generation sized (`--max-semi-space-size`, on the
 * command line or in NODE_OPTIONS) or with `--optimize-for-size`: then favourMemoryOverSpeed has
 * nothing to add and is skipped.
 */
export function youngGenerationSizedAtStart(): boolean {
  return YOUNG_GENERATION_FLAGS.test([...process.execArgv, process.env.NODE_OPTIONS ?? ""].join(" "));
}

/** The engine flags a user may have set on the command line that deferOptimizingCompilers leaves alone. */
const TIER_FLAGS = /--(no-)?(maglev|turbofan|opt|jitless|max-opt|sparkplug)\b/;

let optimizingDeferred = false;
/** Whether deferOptimizingCompilers ever deferred: the process is the service's own (the CLI's), whose engine it may set. */
let ownsCompilers = false;
/** Loads under withoutOptimizingCompilers still running (they may overlap). */
let loadsWithoutCompilers = 0;

/**
 * Runs the process without V8's optimizing compilers (Maglev, Turbofan) until
 * resumeOptimizingCompilers: start-up code (module bodies, the schemas built at load, Fastify's
 * route setup) runs once, yet its hotter loops got optimized, paging in ~9 MB of compiler code and
 * scratch memory the empty service kept (bench/tools/empty-rss.ts: 78 -> 69 MB when ready) and
 * competing for the CPU while the service starts. Code keeps running in the interpreter and the
 * baseline compiler meanwhile. Called by service/lean-start.ts, which the service's own process entry
 * (the CLI) imports before anything else; not by the library, so an embedding process keeps its engine.
 * Does nothing when the process was started with a tiering flag of its own (see TIER_FLAGS).
 */
export function deferOptimizingCompilers(): boolean {
  if (optimizingDeferred) return true;
  const given = [...process.execArgv, process.env.NODE_OPTIONS ?? ""].join(" ");
  if (TIER_FLAGS.test(given)) return false;
  setFlagsFromString("--no-maglev");
  setFlagsFromString("--no-turbofan");
  optimizingDeferred = true;
  ownsCompilers = true;
  return true;
}

/** Turns the optimizing compilers back on if deferOptimizingCompilers turned them off; startService calls it once listening. */
export function resumeOptimizingCompilers(): boolean {
  if (!optimizingDeferred) return false;
  optimizingDeferred = false;
  if (loadsWithoutCompilers === 0) {
    setFlagsFromString("--maglev");
    setFlagsFromString("--turbofan");
  }
  return true;
}

/**
 * Runs `load` (a module loaded on first use: the REST routes, the GraphQL engine, the docs) with the
 * optimizing compilers off until it settles, for the reason they are off at start: a module body and
 * the schemas it builds run once, yet their loops got optimized and paged in compiler code the process
 * then kept. The first REST request of an empty service (routes.ts: the handlers and their zod
 * schemas) left it ~5 MB larger (bench/tools/empty-ab.ts: HISTORY.md, twenty-third pass). Only in a
 * process whose compilers deferOptimizingCompilers managed (the CLI's); elsewhere just runs `load`.
 * Code that runs meanwhile stays in the interpreter and the baseline compiler, and tiers up after.
 */
export async function withoutOptimizingCompilers<T>(load: () => Promise<T>): Promise<T> {
  if (!ownsCompilers || optimizingDeferred) return load();
  if (loadsWithoutCompilers++ === 0) {
    setFlagsFromString("--no-maglev");
    setFlagsFromString("--no-turbofan");
  }
  try {
    return await load();
  } finally {
    if (--loadsWithoutCompilers === 0 && !optimizingDeferred) {
      setFlagsFromString("--maglev");
      setFlagsFromString("--turbofan");
    }
  }
}

/**
 * Runs `work` with the compilers deferOptimizingCompilers turned off back on, then off again: for a
 * loop over every stored job during start-up (the restore), which the interpreter alone runs several
 * times slower. Just runs it when nothing was deferred.
 */
export function withOptimizingCompilers<T>(work: () => T): T {
  if (!resumeOptimizingCompilers()) return work();
  try {
    return work();
  } finally {
    deferOptimizingCompilers();
  }
}
