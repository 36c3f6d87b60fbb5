/**
 * `semver` as Fastify's plugin checks require it, loaded on first use. Fastify requires the whole
 * package when it loads (47 modules, ~25 ms of every start) but calls it only for a plugin that
 * declares the Fastify versions it supports (`fastify-plugin` metadata), which the service's own
 * plugins never do. lean-start.ts hands this module to that one require; any property read loads and
 * answers the real module (the file Fastify's require resolves to, which lean-start checks).
 * Property descriptors before that show an empty module, as lazy/builtin.ts does.
 */
import { dirname } from "node:path";

let real: object | undefined;
const load = (): object => {
  real ??= require(require.resolve("semver", { paths: [dirname(require.resolve("fastify"))] })) as object;
  return real;
};

export = new Proxy(
  {},
  {
    get: (_target, key) => Reflect.get(load(), key),
    has: (_target, key) => Reflect.has(load(), key),
    ownKeys: () => Reflect.ownKeys(load()),
    getOwnPropertyDescriptor: (_target, key) => {
      const descriptor = real && Reflect.getOwnPropertyDescriptor(real, key);
      return descriptor && { ...descriptor, configurable: true };
    },
  },
);
