import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";

/*
 * Why a user's handler module did not load, and the fix, for the failures Node's own loader gives
 * a handler the worker runtime imports (Node 22.19 and 24 word them the same). Without tsx, a
 * TypeScript handler runs on Node's type stripping, which is stricter than the TypeScript users
 * write in a project set up with tsx or ts-node: these are the walls they meet first.
 */

const TSX_FIX =
  "install tsx in the handler's project (npm install --save-dev tsx): the worker loads TypeScript through it when it finds it there";
const TS_EXTENSIONS = new Set([".ts", ".mts", ".cts"]);
/** A module ending in one of these is CommonJS or ES by its package.json "type". */
const TYPED_BY_PACKAGE = new Set([".js", ".ts"]);
const ES_SYNTAX_IN_COMMONJS = /^(Unexpected token 'export'|Cannot use import statement outside a module)/;
const MISSING_MODULE = /^Cannot find module '([^']+)'/;

/**
 * One or two sentences naming what to change, or null when the failure is not one of the known ones
 * (the caller still prints the error itself). `viaTsx`: the process loaded tsx.
 */
export function loadHint(error: unknown, modulePath: string, viaTsx: boolean): string | null {
  if (!(error instanceof Error)) return null;
  const code = (error as { code?: unknown }).code;
  const typeScript = TS_EXTENSIONS.has(extname(modulePath));
  const withoutTsx = typeScript && !viaTsx;

  if (code === "ERR_MODULE_NOT_FOUND") {
    const missing = MISSING_MODULE.exec(error.message)?.[1];
    if (missing === modulePath) {
      return `${modulePath} does not exist (a relative handler path is taken from the directory the service started in).`;
    }
    const asTypeScript = missing ? typeScriptTwin(missing) : null;
    if (withoutTsx && missing && asTypeScript) {
      return `It imports ${missing}, which exists only as ${asTypeScript}, and Node's type stripping (which runs TypeScript here) does not map a .js import to a .ts file: import "${basename(asTypeScript)}" by its own name, or ${TSX_FIX}.`;
    }
    return null;
  }
  if (code === "ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX" && withoutTsx) {
    return `Node's type stripping (which runs TypeScript here) takes only syntax it can erase (no enum, namespace or constructor parameter properties): rewrite that, or ${TSX_FIX}.`;
  }
  if (error.name === "SyntaxError" && ES_SYNTAX_IN_COMMONJS.test(error.message)) {
    const manifest = TYPED_BY_PACKAGE.has(extname(modulePath)) ? nearestManifest(modulePath) : null;
    if (manifest?.type !== "commonjs") return null;
    const esName = `${basename(modulePath, extname(modulePath))}${typeScript ? ".mts" : ".mjs"}`;
    return `It is written as an ES module (import/export) but ${manifest.path} sets "type": "commonjs", so Node runs it as CommonJS: rename it ${esName}, or set "type": "module" in that package.json${withoutTsx ? `, or ${TSX_FIX}` : ""}.`;
  }
  return null;
}

/** The .ts/.mts/.cts file a missing .js/.mjs/.cjs path stands for, when that one exists. */
function typeScriptTwin(path: string): string | null {
  const ext = extname(path);
  const twin = { ".js": ".ts", ".mjs": ".mts", ".cjs": ".cts" }[ext];
  if (!twin) return null;
  const candidate = `${path.slice(0, -ext.length)}${twin}`;
  return existsSync(candidate) ? candidate : null;
}

/** The package.json Node reads a module's "type" from: the nearest one above it. */
function nearestManifest(modulePath: string): { path: string; type: unknown } | null {
  let dir = dirname(modulePath);
  for (;;) {
    const path = join(dir, "package.json");
    if (existsSync(path)) {
      try {
        const parsed: unknown = JSON.parse(readFileSync(path, "utf8"));
        const type =
          typeof parsed === "object" && parsed !== null ? (parsed as { type?: unknown }).type : undefined;
        return { path, type };
      } catch {
        return null;
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}
