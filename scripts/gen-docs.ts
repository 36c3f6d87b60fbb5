/**
 * `npm run docs`: writes docs/ from schema.json and docs/src/ (see scripts/docs/render.ts), and removes
 * pages of resources or functions that schema.json no longer has. `npm run docs -- --check` writes
 * nothing and fails when docs/ differs from what it would write (a test does the same).
 */
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { parseArgs } from "node:util";
import { PackageSchema } from "./docs/package-schema";
import { type DocSources, renderDocs } from "./docs/render";

export const PROJECT_ROOT = join(__dirname, "..");
export const DOCS_DIR = join(PROJECT_ROOT, "docs");
const SOURCES_DIR = join(DOCS_DIR, "src");
/** Folders of docs/ that hold only generated pages. */
const GENERATED_DIRS = ["api-docs"];

export async function readDocSources(sourcesDir: string = SOURCES_DIR): Promise<DocSources> {
  const sources: DocSources = { pages: {}, members: {}, examples: {} };
  for (const file of await markdownFiles(sourcesDir)) {
    sources.pages[file] = await readFile(join(sourcesDir, file), "utf8");
  }
  const membersDir = join(sourcesDir, "resources");
  for (const file of await markdownFiles(membersDir)) {
    sources.members[file.replace(/\.md$/, "")] = await readFile(join(membersDir, file), "utf8");
  }
  const examplesDir = join(sourcesDir, "examples");
  const entries = existsSync(examplesDir) ? await readdir(examplesDir, { recursive: true }) : [];
  for (const file of entries.filter((f) => f.endsWith(".ts")).sort()) {
    sources.examples[file.replace(/\.ts$/, "")] = await readFile(join(examplesDir, file), "utf8");
  }
  return sources;
}

async function markdownFiles(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return [];
  return (await readdir(dir, { withFileTypes: true }))
    .filter((d) => d.isFile() && d.name.endsWith(".md"))
    .map((d) => d.name)
    .sort();
}

/** What docs/ should hold: path relative to docs/ -> text. */
export async function expectedDocs(root: string = PROJECT_ROOT): Promise<Map<string, string>> {
  const schema = PackageSchema.parse(JSON.parse(await readFile(join(root, "schema.json"), "utf8")));
  return renderDocs(schema, await readDocSources(join(root, "docs", "src")));
}

/** The generated pages docs/ holds now (the top-level pages and everything in the generated folders). */
export async function currentDocs(
  docsDir: string = DOCS_DIR,
  names: Iterable<string> = [],
): Promise<Map<string, string>> {
  const current = new Map<string, string>();
  const paths = new Set(names);
  for (const dir of GENERATED_DIRS) {
    for (const file of await markdownFiles(join(docsDir, dir))) paths.add(`${dir}/${file}`);
  }
  for (const path of paths) {
    const full = join(docsDir, path);
    if (existsSync(full)) current.set(path, await readFile(full, "utf8"));
  }
  return current;
}

/** Paths whose text differs, is missing or is stale (no longer generated). */
export function driftOf(expected: Map<string, string>, current: Map<string, string>): string[] {
  const paths = new Set([...expected.keys(), ...current.keys()]);
  return [...paths].filter((path) => expected.get(path) !== current.get(path)).sort();
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { check: { type: "boolean", default: false } } });
  const expected = await expectedDocs();
  const current = await currentDocs(DOCS_DIR, expected.keys());
  const drift = driftOf(expected, current);
  if (values.check) {
    if (drift.length > 0) {
      process.stderr.write(`docs/ is out of date (run npm run docs): ${drift.join(", ")}\n`);
      process.exitCode = 1;
    }
    return;
  }
  for (const path of drift) {
    const full = join(DOCS_DIR, path);
    const text = expected.get(path);
    if (text === undefined) {
      await rm(full);
    } else {
      await mkdir(dirname(full), { recursive: true });
      await writeFile(full, text);
    }
    process.stdout.write(`${text === undefined ? "removed" : "wrote"} ${relative(PROJECT_ROOT, full)}\n`);
  }
  if (drift.length === 0) process.stdout.write("docs/ is up to date\n");
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
