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
 *   the real modules on first use (lazy/builtin.ts).
 * - zod requires its 60-odd locale modules when it loads, though it uses only English (which it loads
 *   on its own): ~45 ms of every start. The same hook hands zod's own requires of its locales index a
 *   stand-in that loads them on first use (lazy/zod-locales.ts); on Node 22 too.
 * - Fastify requires all of `semver` (47 modules, ~25 ms) when it loads, though it calls it only to check
 *   a plugin that declares the Fastify versions it supports, which the service's plugins never do.
 *   The same hook hands that require (from Fastify's plugin-utils only) a stand-in that loads the
 *   real module on first use (lazy/semver.ts); on Node 22 too.
 * - Node's module compile cache is enabled (compile-cache.ts), before any of the above loads.
 * Nothing else is redirected.
 */
// First: the compile cache, so the modules below load from it.
import "./compile-cache";
import { registerHooks } from "node:module";
import { dirname, join } from "node:path";
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

/** How zod's modules (v4/core/index, v4/classic/external, v4/mini/external) require their locales. */
const ZOD_LOCALES = "../locales/index.cjs";
/** The file that resolves to, for the zod this package depends on: only that one is redirected. */
const ZOD_LOCALES_URL = zodLocalesUrl();
const ZOD_LOCALES_STAND_IN = pathToFileURL(join(__dirname, "lazy", `zod-locales${EXT}`)).href;

function zodLocalesUrl(): string | undefined {
  try {
    return pathToFileURL(require.resolve("zod/v4/locales")).href;
  } catch {
    return undefined;
  }
}

/** The module of Fastify's that requires `semver`, as the end of its URL. */
const FASTIFY_PLUGIN_UTILS = "/node_modules/fastify/lib/plugin-utils.js";
/** The `semver` Fastify's require resolves to: only that one is redirected. */
const FASTIFY_SEMVER_URL = fastifySemverUrl();
const SEMVER_STAND_IN = pathToFileURL(join(__dirname, "lazy", `semver${EXT}`)).href;

function fastifySemverUrl(): string | undefined {
  try {
    return pathToFileURL(require.resolve("semver", { paths: [dirname(require.resolve("fastify"))] })).href;
  } catch {
    return undefined;
  }
}

/** Whether Fastify is handed the built-ins' stand-ins (not on Node 22, see below). */
let builtinStandIns = true;

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier === ZOD_LOCALES && ZOD_LOCALES_URL !== undefined) {
      const resolved = nextResolve(specifier, context);
      return resolved.url === ZOD_LOCALES_URL
        ? { url: ZOD_LOCALES_STAND_IN, format: "commonjs", shortCircuit: true }
        : resolved;
    }
    if (
      specifier === "semver" &&
      FASTIFY_SEMVER_URL !== undefined &&
      context.parentURL?.endsWith(FASTIFY_PLUGIN_UTILS)
    ) {
      const resolved = nextResolve(specifier, context);
      return resolved.url === FASTIFY_SEMVER_URL
        ? { url: SEMVER_STAND_IN, format: "commonjs", shortCircuit: true }
        : resolved;
    }
    const standIn = builtinStandIns ? STAND_INS.get(specifier) : undefined;
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
// where that fails the built-ins are not redirected and Fastify loads the real modules
// (test/service/lean-start.test.ts runs this on the lowest supported Node).
try {
  require("node:https");
  require("node:http2");
} catch {
  builtinStandIns = false;
}
