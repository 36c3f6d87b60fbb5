/**
 * A module that loads the real one on first use: the stand-ins lean-start.ts hands to a require
 * (builtin.ts, semver.ts, zod-locales.ts) are made here. Reading a property or asking for one (`in`)
 * loads and answers the real module; before that, property descriptors (what module interop
 * inspects, e.g. tsx when run from source) show an empty module. `esModule`: `__esModule` is answered
 * true without loading (for an importer whose interop asks it first and keeps such a module as is).
 */
export function lazyModule(loadReal: () => object, { esModule = false } = {}): object {
  let real: object | undefined;
  const load = (): object => {
    real ??= loadReal();
    return real;
  };
  return new Proxy(
    {},
    {
      get: (_target, key) => (esModule && key === "__esModule" ? true : Reflect.get(load(), key)),
      has: (_target, key) => (esModule && key === "__esModule") || Reflect.has(load(), key),
      ownKeys: () => Reflect.ownKeys(load()),
      getOwnPropertyDescriptor: (_target, key) => {
        const descriptor = real && Reflect.getOwnPropertyDescriptor(real, key);
        return descriptor && { ...descriptor, configurable: true };
      },
    },
  );
}
