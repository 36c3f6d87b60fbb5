/**
 * A stand-in for a Node built-in module that loads the real one on first use (lean-start.ts hands it
 * to Fastify for `node:https` and `node:http2`, which Fastify requires at load but uses only to
 * serve TLS or HTTP/2, which the service never does). Reading a property or asking for one (`in`)
 * loads the module; before that, property descriptors (what module interop inspects, e.g. tsx when
 * run from source) show an empty module.
 */
import { lazyModule } from "./module-proxy";

export function lazyBuiltin(name: "node:https" | "node:http2"): object {
  return lazyModule(() => require(name) as object);
}
