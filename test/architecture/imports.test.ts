import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/*
 * The repository's import graph, read with the TypeScript compiler's own pre-processor and module
 * resolution (type-only imports count: a cycle of types is still a cycle to read through). Every
 * rule of the layout that an import can break is checked here, so it cannot drift silently.
 */

const ROOT = resolve(__dirname, "../..");

function sourceFiles(): string[] {
  const listed = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  return listed
    .split("\n")
    .filter((file) => /\.(ts|mts|cts)$/.test(file) && !file.endsWith(".d.ts"))
    .filter((file) => !file.split("/").includes("node_modules"));
}

function compilerOptions(): ts.CompilerOptions {
  const config = ts.readConfigFile(join(ROOT, "tsconfig.json"), ts.sys.readFile);
  return ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT).options;
}

/** file -> the repository files it imports (relative paths from the root). */
function importGraph(): Map<string, string[]> {
  const options = compilerOptions();
  const files = sourceFiles();
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(join(ROOT, file), "utf8"), true, true);
    const targets = new Set<string>();
    for (const { fileName } of info.importedFiles) {
      const resolved = ts.resolveModuleName(fileName, join(ROOT, file), options, ts.sys).resolvedModule;
      if (!resolved || resolved.isExternalLibraryImport) continue;
      const target = relative(ROOT, resolved.resolvedFileName);
      if (known.has(target)) targets.add(target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string) => {
    index.set(file, next);
    low.set(file, next);
    next++;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(target) ?? 0));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file) ?? 0, index.get(target) ?? 0));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    for (;;) {
      const member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
      if (member === file) break;
    }
    if (component.length > 1 || graph.get(file)?.includes(file)) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

/** Every import from a file under `from` to a file under `to`, as "a -> b". */
function crossings(graph: Map<string, string[]>, from: string, to: string): string[] {
  const out: string[] = [];
  for (const [file, targets] of graph) {
    if (!file.startsWith(from)) continue;
    for (const target of targets) if (target.startsWith(to)) out.push(`${file} -> ${target}`);
  }
  return out;
}

const graph = importGraph();

describe("the import graph", () => {
  it("reads the whole repository", () => {
    expect(graph.size).toBeGreaterThan(150);
    // The reader resolves what it must: the service's entry imports the app, which imports the edge.
    expect(graph.get("service/index.ts")).toContain("service/app.ts");
  });

  it("has no import cycle anywhere", () => {
    expect(cycles(graph)).toEqual([]);
  });

  it("finds a cycle when there is one (the check can fail)", () => {
    const looped = new Map([
      ["a.ts", ["b.ts"]],
      ["b.ts", ["c.ts"]],
      ["c.ts", ["a.ts"]],
      ["d.ts", ["a.ts"]],
    ]);
    expect(cycles(looped)).toEqual([["a.ts", "b.ts", "c.ts"]]);
  });

  it("product code never imports test code", () => {
    const fromProduct = [...graph]
      .filter(([file]) => !file.startsWith("test/"))
      .flatMap(([file, targets]) =>
        targets.filter((t) => t.startsWith("test/")).map((t) => `${file} -> ${t}`),
      );
    expect(fromProduct).toEqual([]);
  });

  it("sdk/ imports neither provider/ nor service/ nor engine/", () => {
    expect([
      ...crossings(graph, "sdk/", "provider/"),
      ...crossings(graph, "sdk/", "service/"),
      ...crossings(graph, "sdk/", "engine/"),
    ]).toEqual([]);
  });

  it("service/ and provider/ never import each other", () => {
    expect([
      ...crossings(graph, "service/", "provider/"),
      ...crossings(graph, "provider/", "service/"),
    ]).toEqual([]);
  });

  it("the two planes of the service never import each other; the edge imports neither", () => {
    expect([
      ...crossings(graph, "service/management/", "service/jobs/"),
      ...crossings(graph, "service/jobs/", "service/management/"),
      ...crossings(graph, "service/edge/", "service/management/"),
      ...crossings(graph, "service/edge/", "service/jobs/"),
    ]).toEqual([]);
  });

  it("the worker runtime (runpodkit/worker) stands alone: nothing else of the service, of the SDK only two leaves", () => {
    const runtime = "service/jobs/workers/runtime/";
    // The modules it shares with the SDK, each importing nothing of the repo: the whole-reply dispatch,
    // and the Node version check every entry point runs first.
    const shared = ["sdk/dispatch-reply.ts", "sdk/node-guard.ts"];
    const outside = [...graph]
      .filter(([file]) => file.startsWith(runtime))
      .flatMap(([file, targets]) =>
        targets.filter((t) => !t.startsWith(runtime) && !shared.includes(t)).map((t) => `${file} -> ${t}`),
      );
    expect(outside).toEqual([]);
    for (const leaf of shared) expect(graph.get(leaf)).toEqual([]);
    expect(graph.get(`${runtime}http.ts`)).toContain("sdk/dispatch-reply.ts");
    expect(graph.get(`${runtime}index.ts`)).toContain("sdk/node-guard.ts");
    expect([...graph.keys()].some((file) => file.startsWith(runtime))).toBe(true);
  });
});
