/**
 * Node's module compile cache for the service's own process (the CLI, service/main.ts, imports this
 * first; lean-start.ts too, for the bench's service process): V8's compiled code of every module
 * loaded from here on is kept on disk, and a later start reads it instead of compiling the modules
 * again: ~70 ms less CPU at every start after the first (bench/tools/restart-ab.ts), for ~1.3 MB
 * more resident (Node keeps the read cache in memory). Not imported by service/index.ts: a process
 * that embeds the service keeps its module loading as it is.
 *
 * Where: the directory `NODE_COMPILE_CACHE` names (Node enables it itself then), else Node's default,
 * `node-compile-cache` in the OS temp directory (one subdirectory per Node version). Node's own
 * `NODE_DISABLE_COMPILE_CACHE=1` turns it off. It never stops the start: a directory that cannot be
 * written, or a Node without the call, runs without it. startService writes the cache out once it
 * listens (`flushCompileCache`), so a process that is killed later still leaves it.
 */
import * as nodeModule from "node:module";

try {
  nodeModule.enableCompileCache?.();
} catch {
  // Without the cache: only slower.
}
