/**
 * runtime/load-hint.ts against the errors Node's own loader really gives (no tsx), on the project's
 * Node and on the lowest supported one: each known failure of a user's handler module gets a hint
 * naming the file and the fix; anything else none. The installed package's worker printing them is
 * test/e2e/installed-handlers.test.ts.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installNode } from "../../../engine/package";
import { loadHint } from "../../../service/jobs/workers/runtime/load-hint";
import { LOWEST_NODE } from "../../e2e/support/node-versions";

const run = promisify(execFile);

/** Imports each path with no loader but Node's and prints what it threw. */
const PROBE = `
const { pathToFileURL } = require("node:url");
(async () => {
  const out = {};
  for (const path of process.argv.slice(1)) {
    try { await import(pathToFileURL(path).href); out[path] = null; }
    catch (e) { out[path] = { name: e.name, code: e.code, message: e.message }; }
  }
  process.stdout.write(JSON.stringify(out));
})();`;

type Thrown = { name: string; code?: string; message: string } | null;

/** The error as the runtime's import saw it (its class, code and message). */
function rebuilt(thrown: Thrown): Error | null {
  if (thrown === null) return null;
  const error = thrown.name === "SyntaxError" ? new SyntaxError(thrown.message) : new Error(thrown.message);
  return Object.assign(error, thrown.code === undefined ? {} : { code: thrown.code });
}

let dir = "";
const file = (...parts: string[]) => join(dir, ...parts);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "runpodkit-load-hint-"));
  for (const sub of ["cjs", "esm", "untyped"]) await mkdir(file(sub));
  await writeFile(file("cjs", "package.json"), '{ "type": "commonjs" }\n');
  await writeFile(file("esm", "package.json"), '{ "type": "module" }\n');
  await writeFile(file("untyped", "package.json"), '{ "name": "untyped" }\n');
  const esHandler = "export async function handler(job: { input: unknown }) { return job.input; }\n";
  await writeFile(file("cjs", "handler.ts"), esHandler);
  await writeFile(file("cjs", "handler.js"), "export function handler(job) { return job.input; }\n");
  await writeFile(file("cjs", "imports.ts"), 'import { x } from "node:path";\nexport const y = x;\n');
  await writeFile(file("esm", "enum.ts"), "enum Mode { Fast }\nexport const handler = () => Mode.Fast;\n");
  await writeFile(file("esm", "util.ts"), "export const twice = (n: number) => 2 * n;\n");
  await writeFile(
    file("esm", "uses-util.ts"),
    'import { twice } from "./util.js";\nexport const handler = () => twice(2);\n',
  );
  await writeFile(file("esm", "throws.ts"), 'throw new Error("boom at load");\n');
  await writeFile(file("untyped", "handler.ts"), esHandler);
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const NODES: Array<[label: string, node: () => Promise<string>]> = [
  ["the project's Node", async () => process.execPath],
  [`Node ${LOWEST_NODE}`, () => installNode(LOWEST_NODE)],
];

describe.each(NODES)("load hints, on %s", (_label, nodeOf) => {
  let thrown = new Map<string, Error | null>();

  beforeAll(async () => {
    const paths = [
      file("cjs", "handler.ts"),
      file("cjs", "handler.js"),
      file("cjs", "imports.ts"),
      file("esm", "enum.ts"),
      file("esm", "uses-util.ts"),
      file("esm", "throws.ts"),
      file("esm", "missing.ts"),
      file("untyped", "handler.ts"),
    ];
    const { stdout } = await run(await nodeOf(), ["--no-warnings", "-e", PROBE, ...paths], { cwd: dir });
    const out = JSON.parse(stdout) as Record<string, Thrown>;
    thrown = new Map(Object.entries(out).map(([path, t]) => [path, rebuilt(t)]));
  }, 300_000);

  const hintOf = (path: string, viaTsx = false) => loadHint(thrown.get(path), path, viaTsx);

  it("ES module syntax in a package that says commonjs: rename, set the type, or install tsx", () => {
    expect(hintOf(file("cjs", "handler.ts"))).toBe(
      `It is written as an ES module (import/export) but ${file("cjs", "package.json")} sets "type": "commonjs", so Node runs it as CommonJS: rename it handler.mts, or set "type": "module" in that package.json, or install tsx in the handler's project (npm install --save-dev tsx): the worker loads TypeScript through it when it finds it there.`,
    );
    expect(hintOf(file("cjs", "imports.ts"))).toContain("rename it imports.mts");
    // JavaScript: tsx would not change it.
    expect(hintOf(file("cjs", "handler.js"))).toBe(
      `It is written as an ES module (import/export) but ${file("cjs", "package.json")} sets "type": "commonjs", so Node runs it as CommonJS: rename it handler.mjs, or set "type": "module" in that package.json.`,
    );
  });

  it("TypeScript Node cannot strip: rewrite it or install tsx", () => {
    expect(hintOf(file("esm", "enum.ts"))).toMatch(
      /^Node's type stripping .*\(no enum, namespace or constructor parameter properties\): rewrite that, or install tsx/,
    );
  });

  it("a .js import of a .ts file: import it by its own name or install tsx", () => {
    expect(hintOf(file("esm", "uses-util.ts"))).toBe(
      `It imports ${file("esm", "util.js")}, which exists only as ${file("esm", "util.ts")}, and Node's type stripping (which runs TypeScript here) does not map a .js import to a .ts file: import "util.ts" by its own name, or install tsx in the handler's project (npm install --save-dev tsx): the worker loads TypeScript through it when it finds it there.`,
    );
  });

  it("a handler path with no file names the path", () => {
    expect(hintOf(file("esm", "missing.ts"))).toBe(
      `${file("esm", "missing.ts")} does not exist (a relative handler path is taken from the directory the service started in).`,
    );
  });

  it("no hint for what tsx already runs, for the handler's own errors, or for what loads", () => {
    expect(hintOf(file("esm", "enum.ts"), true)).toBeNull();
    expect(hintOf(file("esm", "uses-util.ts"), true)).toBeNull();
    expect(thrown.get(file("esm", "throws.ts"))?.message).toBe("boom at load");
    expect(hintOf(file("esm", "throws.ts"))).toBeNull();
    // A package.json without "type": Node tells ES modules by their syntax.
    expect(thrown.get(file("untyped", "handler.ts"))).toBeNull();
  });
});
