/**
 * Compiles the service, the SDK and the bench's own processes with tsc into bench/.tmp/build, so
 * everything measured runs as shipped: plain JavaScript under Node, no loader, no debugger. The
 * output sits inside the project so `require` finds the project's node_modules.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export const BENCH_DIR = join(__dirname, "..");
export const PROJECT_ROOT = join(BENCH_DIR, "..");
export const BUILD_DIR = join(BENCH_DIR, ".tmp", "build");

/** The compiled path of a bench file, e.g. built("bench/server") -> .../build/bench/server.js. */
export function built(path: string): string {
  return join(BUILD_DIR, `${path}.js`);
}

export async function buildBench(): Promise<{ ms: number; warnings: string }> {
  const started = Date.now();
  await rm(BUILD_DIR, { recursive: true, force: true });
  const tsc = require.resolve("typescript/bin/tsc");
  let warnings = "";
  try {
    await run(process.execPath, [tsc, "-p", join(BENCH_DIR, "tsconfig.json")], { cwd: PROJECT_ROOT });
  } catch (error) {
    // tsc still emits on type errors (others' work in progress); the bench runs if its files exist.
    const { stdout = "" } = error as { stdout?: string };
    warnings = stdout.trim();
    if (!existsSync(built("bench/server"))) throw new Error(`bench build failed:\n${warnings}`);
  }
  return { ms: Date.now() - started, warnings };
}
