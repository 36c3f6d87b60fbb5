/**
 * A stand-in for a Node built-in module that loads the real one on first use (lean-start.ts hands it
 * to Fastify for `node:https` and `node:http2`, which Fastify requires at load but uses only to
 * serve TLS or HTTP/2, which the service never does). Reading a property or asking for one (`in`)
 * loads the module; before that, property descriptors (what module interop inspects, e.g. tsx when
 * run from source) show an empty module.
 */
export function lazyBuiltin(name: "node:https" | "node:http2"): object {
  let real: object | undefined;
  const load = (): object => {
    real ??= require(name) as object;
    return real;
  };
  return new Proxy(
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
}
