/**
 * What the docs show stays true: every ```ts / ```typescript block of README.md, SECURITY.md, docs/
 * and examples/ READMEs type-checks against this checkout's sources (`runpodkit`, `runpodkit/sdk`,
 * `runpodkit/service`, `runpodkit/worker` through tsconfig.json's paths), and every relative link of
 * every committed markdown file names a file that exists and, with `#anchor`, a heading of it; every
 * npm script a page runs is a script of its package.json, and every flag it gives the runpodkit CLI
 * one the CLI's --help names.
 *
 * A block may be marked by an HTML comment on the line before its fence (invisible when rendered):
 * - `<!-- typecheck: skip (why) -->`: not checked (a signature, a fragment that cannot stand alone);
 * - `<!-- typecheck: continues -->`: checked appended to the previous checked block of the page;
 * - `<!-- typecheck: declare <declarations> -->`: checked after these declarations (what the fragment
 *   assumes the reader's program has, e.g. `declare const registry: ContainerRegistryAuth;`).
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, test } from "vitest";

const ROOT = resolve(__dirname, "../..");
const run = promisify(execFile);

/** Committed markdown files: README, SECURITY, docs/ (with the generated pages), examples/ READMEs. */
function markdownFiles(): string[] {
  const found = ["README.md", "SECURITY.md", "CHANGELOG.md"];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory() && entry.name !== "node_modules") walk(path);
      else if (entry.isFile() && entry.name.endsWith(".md")) found.push(path);
    }
  };
  for (const dir of ["docs", "examples", "engine", "bench"]) walk(dir);
  return found.filter((f) => existsSync(join(ROOT, f)));
}

interface Snippet {
  page: string;
  line: number;
  code: string;
}

const MARK = /^<!--\s*typecheck:\s*(skip|continues|declare)\b([\s\S]*?)-->\s*$/;

/** The TypeScript blocks of a page, with their markers applied. */
function snippetsOf(page: string, text: string): Snippet[] {
  const lines = text.split("\n");
  const snippets: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(\s*)```(ts|typescript)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const indent = fence[1]!.length;
    const end = lines.findIndex((l, j) => j > i && /^\s*```\s*$/.test(l));
    if (end === -1) throw new Error(`${page}:${i + 1}: a \`\`\`${fence[2]} block that never ends`);
    const code = lines
      .slice(i + 1, end)
      .map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)))
      .join("\n");
    const mark = MARK.exec(lines[i - 1]?.trim() ?? "");
    const kind = mark?.[1];
    if (kind === "skip") {
      if (!mark![2]!.trim()) throw new Error(`${page}:${i}: say why a block is skipped`);
    } else if (kind === "continues") {
      const last = snippets.at(-1);
      if (!last) throw new Error(`${page}:${i}: "continues" with no block before it`);
      last.code += `\n${code}`;
    } else {
      snippets.push({ page, line: i + 1, code: kind === "declare" ? `${mark![2]!.trim()}\n${code}` : code });
    }
    i = end;
  }
  return snippets;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const prose = text.replace(/^```[\s\S]*?^```/gm, "");
  for (const [, heading] of prose.matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const base = heading!
      .replace(/<[^>]+>/g, "")
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const [, id] of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) anchors.add(id!);
  return anchors;
}

/** Relative links of a page (outside code), as [target, line]. */
function linksOf(text: string): Array<[string, number]> {
  const links: Array<[string, number]> = [];
  let inFence = false;
  text.split("\n").forEach((line, index) => {
    if (/^\s*```/.test(line)) inFence = !inFence;
    if (inFence) return;
    const prose = line.replace(/`[^`]*`/g, "");
    for (const [, target] of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target!)) links.push([target!, index + 1]);
    }
  });
  return links;
}

describe("the docs' relative links", () => {
  test("every relative link names a file that exists, and every #anchor a heading of it", () => {
    const broken: string[] = [];
    for (const page of markdownFiles()) {
      const text = readFileSync(join(ROOT, page), "utf8");
      for (const [target, line] of linksOf(text)) {
        const [path = "", anchor] = target.split("#");
        const file = path === "" ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURI(path));
        if (!file.startsWith(ROOT) || !existsSync(file)) {
          broken.push(`${page}:${line}: ${target} (no such file)`);
        } else if (anchor && statSync(file).isFile() && file.endsWith(".md")) {
          if (!anchorsOf(readFileSync(file, "utf8")).has(anchor)) {
            broken.push(`${page}:${line}: ${target} (no heading #${anchor} in ${relative(ROOT, file)})`);
          }
        }
      }
    }
    expect(broken).toEqual([]);
  });

  test("the checker finds a dead file, a dead anchor, and passes a good one", () => {
    expect(linksOf("see [a](docs/x.md#y), `[b](c.md)`, [web](https://e.org)")).toEqual([["docs/x.md#y", 1]]);
    expect(anchorsOf("# The SDK\n## Supported Node versions and package managers\n## The SDK\n")).toEqual(
      new Set(["the-sdk", "supported-node-versions-and-package-managers", "the-sdk-1"]),
    );
  });
});

describe("the docs' TypeScript blocks", () => {
  // The same folder each run (so the build info below applies), removed after: the root tsconfig includes test/.
  const dir = join(ROOT, "test", ".tmp", "docs-snippets");
  afterAll(() => rm(dir, { recursive: true, force: true }));

  test("markers: skip needs a reason, continues appends, declare prepends", () => {
    const page = [
      "```ts",
      "const a = 1;",
      "```",
      "<!-- typecheck: continues -->",
      "```ts",
      "console.log(a);",
      "```",
      "<!-- typecheck: skip (a signature) -->",
      "```typescript",
      "new X(name: string);",
      "```",
      "<!-- typecheck: declare declare const b: number; -->",
      "  ```ts",
      "  console.log(b);",
      "  ```",
    ].join("\n");
    expect(snippetsOf("p.md", page)).toEqual([
      { page: "p.md", line: 1, code: "const a = 1;\nconsole.log(a);" },
      { page: "p.md", line: 13, code: "declare const b: number;\nconsole.log(b);" },
    ]);
    expect(() => snippetsOf("p.md", "<!-- typecheck: skip -->\n```ts\nx\n```")).toThrow(/say why/);
  });

  test("every block type-checks against this checkout's sources, as written", {
    timeout: 120_000,
  }, async () => {
    const snippets = markdownFiles()
      .filter((page) => page !== "CHANGELOG.md")
      .flatMap((page) => snippetsOf(page, readFileSync(join(ROOT, page), "utf8")));
    expect(snippets.length).toBeGreaterThan(5);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const names = new Map<string, Snippet>();
    for (const [index, snippet] of snippets.entries()) {
      // .mts: each block is an ES module of its own (top-level await, no names shared between blocks).
      const name = `${snippet.page.replace(/[^A-Za-z0-9]+/g, "-")}-${snippet.line}-${index}.mts`;
      names.set(name, snippet);
      await writeFile(join(dir, name), `${snippet.code}\n`);
    }
    await writeFile(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        extends: relative(dir, join(ROOT, "tsconfig.json")),
        // The docs show programs as users write them: unused names are fine, indexing as TypeScript's default.
        compilerOptions: {
          noEmit: true,
          noUncheckedIndexedAccess: false,
          declaration: false,
          sourceMap: false,
          // Kept between runs (test/.tmp is ignored): a run whose sources did not change checks in seconds.
          incremental: true,
          tsBuildInfoFile: relative(dir, join(ROOT, "test", ".tmp", "docs-snippets.tsbuildinfo")),
        },
        include: ["*.mts"],
      }),
    );
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    const result = await run(process.execPath, [tsc, "-p", dir, "--pretty", "false"], { cwd: dir }).then(
      () => "",
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ""}${error.stderr ?? ""}`,
    );
    // Each error named by the page and line of the block it is in.
    const errors = result
      .split("\n")
      .filter(Boolean)
      .map((line) => {
        const at = /^(.+?\.mts)\((\d+),(\d+)\): (.*)$/.exec(line);
        const snippet = at ? names.get(at[1]!.split("/").at(-1)!) : undefined;
        return snippet ? `${snippet.page}, block at line ${snippet.line} (+${at![2]}): ${at![4]}` : line;
      });
    expect(errors).toEqual([]);
  });
});

/** The commands of a page's ```sh / ```bash / ```shell blocks, as [command, line]: continuations joined, comments dropped. */
function shellCommandsOf(text: string): Array<[string, number]> {
  const commands: Array<[string, number]> = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*```(sh|bash|shell)\s*$/.test(lines[i]!)) continue;
    let pending = "";
    let start = 0;
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) {
      const line = lines[i]!.replace(/(^|\s)#.*$/, "").trimEnd();
      if (!pending) start = i + 1;
      if (line.endsWith("\\")) {
        pending += `${line.slice(0, -1)} `;
        continue;
      }
      // Each command of a line: split at &&, ||, ; and | (not inside quotes: the docs' quoted parts hold none).
      for (const part of `${pending}${line}`.split(/&&|\|\||;|\||\$\(/)) {
        const command = part.trim();
        if (command) commands.push([command, start]);
      }
      pending = "";
    }
  }
  return commands;
}

/** The program a command runs: its first word after `NAME=value` assignments and `export` ("" for none). */
function programOf(command: string): string {
  const words = command.split(/\s+/);
  while (words.length > 0 && (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!) || words[0] === "export"))
    words.shift();
  return words[0] ?? "";
}

describe("the docs' shell blocks", () => {
  // What a newcomer pastes must find its program: the package puts `runpodkit` (and tsx) in
  // node_modules/.bin, on no PATH, and this checkout has no `runpodkit` command before `npm run build`.
  const NOT_ON_PATH = new Set(["runpodkit", "tsx"]);

  test("run the CLI as it can be found: `npx runpodkit` in a project, `npm run serve --` or `npx tsx` here", () => {
    const bare: string[] = [];
    for (const page of markdownFiles().filter((p) => p !== "CHANGELOG.md")) {
      for (const [command, line] of shellCommandsOf(readFileSync(join(ROOT, page), "utf8"))) {
        if (NOT_ON_PATH.has(programOf(command))) bare.push(`${page}:${line}: ${command}`);
      }
    }
    expect(bare).toEqual([]);
  });

  test("the reader finds each command's program through assignments, continuations and chains", () => {
    const page = [
      "```sh",
      "RUNPODKIT_API_KEYS=k runpodkit --handler a=b.ts \\",
      "   --handler c=d.ts   # a comment",
      "cd x && npm install y; export A=1",
      "export B=$(cd ../q && pulumi stack output u)",
      "```",
      "runpodkit outside a block",
    ].join("\n");
    expect(shellCommandsOf(page).map(([c, l]) => [programOf(c), l])).toEqual([
      ["runpodkit", 2],
      ["cd", 4],
      ["npm", 4],
      ["", 4],
      ["", 5],
      ["cd", 5],
      ["pulumi", 5],
    ]);
  });
});

/** The commands a page shows: its shell blocks' commands and its inline code spans, as [command, line]. */
function commandsShown(text: string): Array<[string, number]> {
  const inline: Array<[string, number]> = [];
  let inFence = false;
  text.split("\n").forEach((line, index) => {
    if (/^\s*```/.test(line)) inFence = !inFence;
    if (inFence) return;
    for (const [, code] of line.matchAll(/`([^`]+)`/g)) {
      for (const part of code!.split(/&&|\|\||;|\|/)) if (part.trim()) inline.push([part.trim(), index + 1]);
    }
  });
  return [...shellCommandsOf(text), ...inline];
}

/** The npm scripts a command runs (`npm run <name>`, `npm start`, `npm test`), "" for none. */
function npmScriptOf(command: string): string {
  const words = command.split(/\s+/);
  while (words.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0]!)) words.shift();
  if (words[0] !== "npm") return "";
  if (words[1] === "run" && words[2] && !words[2].startsWith("-")) return words[2];
  return words[1] === "start" || words[1] === "test" ? words[1] : "";
}

/** The flags a command gives the runpodkit CLI (as `npx runpodkit`, `npm run serve --`, `npx tsx service/main.ts`). */
function cliFlagsOf(command: string): string[] {
  const at = /(?:\b(?:npx|yarn) runpodkit\b|\bnpm run serve --(?=\s|$)|service\/main\.ts\b)(.*)$/.exec(
    command,
  );
  return at ? [...at[1]!.matchAll(/(?:^|\s|\[)(--[a-z][a-z-]*)/g)].map((m) => m[1]!) : [];
}

describe("the docs' commands", () => {
  const pages = () => markdownFiles().filter((p) => p !== "CHANGELOG.md");
  const scriptsOf = (dir: string): string[] => {
    const file = join(ROOT, dir, "package.json");
    return existsSync(file) ? Object.keys(JSON.parse(readFileSync(file, "utf8")).scripts ?? {}) : [];
  };

  test("every npm script a page runs is one of the nearest package.json's, or the repository's", () => {
    const unknown: string[] = [];
    for (const page of pages()) {
      const known = new Set([...scriptsOf(dirname(page)), ...scriptsOf(".")]);
      for (const [command, line] of commandsShown(readFileSync(join(ROOT, page), "utf8"))) {
        const script = npmScriptOf(command);
        if (script && !known.has(script)) unknown.push(`${page}:${line}: ${command}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  test("every flag a page gives the runpodkit CLI is one its --help names", { timeout: 60_000 }, async () => {
    const tsx = join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");
    const { stdout, stderr } = await run(
      process.execPath,
      [tsx, join(ROOT, "service", "main.ts"), "--help"],
      {
        cwd: ROOT,
      },
    );
    const known = new Set([...`${stdout}${stderr}`.matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0]));
    expect(known).toContain("--handler");
    const unknown: string[] = [];
    for (const page of pages()) {
      for (const [command, line] of commandsShown(readFileSync(join(ROOT, page), "utf8"))) {
        for (const flag of cliFlagsOf(command))
          if (!known.has(flag)) unknown.push(`${page}:${line}: ${flag} in ${command}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  test("the readers find npm scripts and CLI flags in blocks and inline code", () => {
    const page = [
      "Run `npm run docs -- --check` or `cd x && npm start`.",
      "```sh",
      "RUNPODKIT_API_KEYS=k npm run serve -- --port 8080 [--data file] \\",
      "  --handler a=b.ts",
      "npx runpodkit logs <id> --follow",
      "```",
    ].join("\n");
    const shown = commandsShown(page);
    expect(shown.map(([c]) => npmScriptOf(c)).filter(Boolean)).toEqual(["serve", "docs", "start"]);
    expect(shown.flatMap(([c]) => cliFlagsOf(c))).toEqual(["--port", "--data", "--handler", "--follow"]);
  });
});
