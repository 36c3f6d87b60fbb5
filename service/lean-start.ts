/**
 * Imported for its effect, first, by the service's own process entry (service/main.ts, the CLI; the
 * bench's service process, bench/server.ts, does the same): V8's optimizing compilers stay off while
 * the modules load and the service starts, and startService turns them back on (heap.ts
 * deferOptimizingCompilers). Not imported by service/index.ts: a process that embeds the service
 * keeps its engine as it is.
 */
import { deferOptimizingCompilers } from "./heap";

deferOptimizingCompilers();
