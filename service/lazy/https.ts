import { lazyBuiltin } from "./builtin";

/** `node:https`, loaded on first use (see builtin.ts). */
export = lazyBuiltin("node:https");
