import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { installNode } from "../../engine/package";
import { LOWEST_NODE } from "../e2e/support/node-versions";

/*
 * service/compile-cache.ts, in a process of its own (Node runs the .ts itself, so that no loader
 * shares its temp directory): Node's compile cache is on in Node's default
 * place (the OS temp directory), written by flushCompileCache, and a place that cannot be written
 * does not stop the process.
 */

const COMPILE_CACHE = resolve("service/compile-cache.ts");
const SCRIPT = `
import { createRequire, flushCompileCache, getCompileCacheDir } from "node:module";
await import(${JSON.stringify(COMPILE_CACHE)});
// A module loaded after: its compiled code is what the cache keeps.
createRequire(${JSON.stringify(resolve("package.json"))})("semver");
flushCompileCache();
process.stdout.write(JSON.stringify({ dir: getCompileCacheDir() ?? null }));
`;

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function run(node: string, env: Record<string, string>): { dir: string | null } {
  const { NODE_COMPILE_CACHE: _, NODE_DISABLE_COMPILE_CACHE: __, ...inherited } = process.env;
  const out = execFileSync(node, ["--input-type=module", "-e", SCRIPT], {
    encoding: "utf8",
    env: { ...inherited, ...env },
  });
  return JSON.parse(out) as { dir: string | null };
}

describe("compile cache", () => {
  it("is on, under the OS temp directory, and written by flushCompileCache", () => {
    const tmp = mkdtempSync(join(tmpdir(), "runpodkit-ccache-"));
    dirs.push(tmp);
    const { dir } = run(process.execPath, { TMPDIR: tmp });
    expect(dir?.startsWith(join(tmp, "node-compile-cache"))).toBe(true);
    expect(readdirSync(dir as string).length).toBeGreaterThan(0);
  });

  it("NODE_DISABLE_COMPILE_CACHE=1 keeps it off", () => {
    const tmp = mkdtempSync(join(tmpdir(), "runpodkit-ccache-"));
    dirs.push(tmp);
    expect(run(process.execPath, { TMPDIR: tmp, NODE_DISABLE_COMPILE_CACHE: "1" }).dir).toBeNull();
  });

  it(`a place that cannot be written does not stop the process (here and on Node ${LOWEST_NODE})`, async () => {
    const tmp = mkdtempSync(join(tmpdir(), "runpodkit-ccache-"));
    dirs.push(tmp);
    // A file where the cache's directory would be created.
    const blocked = join(tmp, "file");
    writeFileSync(blocked, "");
    for (const node of [process.execPath, await installNode(LOWEST_NODE)]) {
      expect(run(node, { TMPDIR: blocked }).dir).toBeNull();
    }
  }, 300_000);
});
