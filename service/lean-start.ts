/**
 * Imported for its effect, first, by the service's own process entry (service/main.ts, the CLI; the
 * bench's service process, bench/server.ts, does the same). Not imported by service/index.ts: a
 * process that embeds the service keeps its engine and its module loading as they are.
 *
 * - V8's optimizing compilers stay off while the modules load and the service starts; startService
 *   turns them on for the restore's pass over the job table and for good once it listens (heap.ts
 *   deferOptimizingCompilers).
 * - Fastify requires `node:https` and `node:http2` (and with them `tls`) at load, though it uses them
 *   only to serve TLS or HTTP/2, which the service never does: ~4 MB resident and their load time.
 *   A module hook (Node's `module.registerHooks`) hands Fastify's server module stand-ins that load
 *   the real modules on first use (lazy/builtin.ts). Nothing else is redirected.
 */
import { registerHooks } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { deferOptimizingCompilers } from "./heap";

deferOptimizingCompilers();

/** The module whose eager requires are deferred, as the end of its URL. */
const FASTIFY_SERVER = "/node_modules/fastify/lib/server.js";
/** This file's extension: .js as built, .ts when run from source (tsx). */
const EXT = __filename.slice(__filename.lastIndexOf("."));
const STAND_INS = new Map([
  ["node:https", pathToFileURL(join(__dirname, "lazy", `https${EXT}`)).href],
  ["node:http2", pathToFileURL(join(__dirname, "lazy", `http2${EXT}`)).href],
]);

/** This module's own requires go through the hook once, to prove it works on this Node. */
const SELF = pathToFileURL(__filename).href;

const hooks = registerHooks({
  resolve(specifier, context, nextResolve) {
    const standIn = STAND_INS.get(specifier);
    if (
      standIn !== undefined &&
      (context.parentURL?.endsWith(FASTIFY_SERVER) || context.parentURL === SELF)
    ) {
      return { url: standIn, format: "commonjs", shortCircuit: true };
    }
    return nextResolve(specifier, context);
  },
});

// Node 22 (22.19 at least) cannot hand a stand-in for a built-in to `require` (its loader throws
// inside loadBuiltinWithHooks), which would stop the CLI when Fastify loads. Ask for both here first;
// where that fails the hook goes and Fastify loads the real modules (test/service/lean-start.test.ts
// runs this on the lowest supported Node).
try {
  require("node:https");
  require("node:http2");
} catch {
  hooks.deregister();
}
