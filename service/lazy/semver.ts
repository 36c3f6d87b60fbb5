/**
 * `semver` as Fastify's plugin checks require it, loaded on first use. Fastify requires the whole
 * package when it loads (47 modules, ~25 ms of every start) but calls it only for a plugin that
 * declares the Fastify versions it supports (`fastify-plugin` metadata), which the service's own
 * plugins never do. lean-start.ts hands this module to that one require; any property read loads and
 * answers the real module (the file Fastify's require resolves to, which lean-start checks).
 * Property descriptors before that show an empty module (module-proxy.ts).
 */
import { dirname } from "node:path";
import { lazyModule } from "./module-proxy";

export = lazyModule(
  () => require(require.resolve("semver", { paths: [dirname(require.resolve("fastify"))] })) as object,
);
