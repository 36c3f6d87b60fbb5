import { lazyBuiltin } from "./builtin";

/** `node:http2`, loaded on first use (see builtin.ts). */
export = lazyBuiltin("node:http2");
