/**
 * Every install the examples and docs show a pipeline or an image doing is reproducible: it installs
 * a committed lockfile with `npm ci`, never resolves the ranges afresh with `npm install` (two builds
 * of one commit could then get different dependencies). Covers the Dockerfiles under examples/, the
 * workflows under examples/, and the YAML (CI) blocks of the READMEs and docs. Before, the gitops
 * worker's Dockerfile ran `npm install` on package.json alone, and the README's CI snippet ran
 * `pulumi up` with no install step at all.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, test } from "vitest";
import { PROJECT_ROOT } from "../../engine/package";

function filesUnder(dir: string, keep: (name: string) => boolean): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && keep(entry.name) && !entry.parentPath.includes("node_modules"))
    .map((entry) => join(entry.parentPath, entry.name));
}

const EXAMPLES = join(PROJECT_ROOT, "examples");
const dockerfiles = filesUnder(EXAMPLES, (name) => name === "Dockerfile" || name.endsWith(".Dockerfile"));
const workflows = filesUnder(EXAMPLES, (name) => /\.ya?ml$/.test(name) && name !== "Pulumi.yaml");
const markdown = [
  join(PROJECT_ROOT, "README.md"),
  ...filesUnder(join(PROJECT_ROOT, "docs"), (name) => name.endsWith(".md")),
  ...filesUnder(EXAMPLES, (name) => name.endsWith(".md")),
];

/** The YAML code blocks of a markdown file. */
function yamlBlocks(text: string): string[] {
  return [...text.matchAll(/```ya?ml\n([\s\S]*?)```/g)].map(([, body]) => body ?? "");
}

/** A pipeline that deploys (pulumi up, preview, or the Pulumi action) needs its npm dependencies installed. */
const DEPLOYS = /\bpulumi (up|preview)\b|pulumi\/actions@/;

describe("reproducible installs in the examples and docs", () => {
  test("there is something to check", () => {
    expect(dockerfiles.map((f) => relative(PROJECT_ROOT, f))).toContain("examples/gitops/worker/Dockerfile");
    expect(workflows.map((f) => relative(PROJECT_ROOT, f))).toContain(
      "examples/gitops/.github/workflows/deploy.yml",
    );
  });

  test.each(dockerfiles.map((f) => [relative(PROJECT_ROOT, f), f]))(
    "%s copies package-lock.json and installs it with npm ci",
    (_, file) => {
      const text = readFileSync(file, "utf8");
      const runs = [...text.matchAll(/^RUN (.*)$/gm)].map(([, line]) => line ?? "");
      const installs = runs.filter((line) => /\bnpm (i|install|ci|add)\b/.test(line));
      expect(installs.length).toBeGreaterThan(0);
      for (const line of installs) expect(line).toMatch(/^npm ci\b/);
      const copy = /^COPY (.*)$/m.exec(text)?.[1] ?? "";
      expect(copy.split(/\s+/)).toContain("package-lock.json");
      expect(text.indexOf("package-lock.json")).toBeLessThan(text.indexOf("RUN npm ci"));
    },
  );

  const pipelines = [
    ...workflows.map((f) => [relative(PROJECT_ROOT, f), readFileSync(f, "utf8")] as const),
    ...markdown.flatMap((f) =>
      yamlBlocks(readFileSync(f, "utf8")).map(
        (block, i) => [`${relative(PROJECT_ROOT, f)} yaml #${i + 1}`, block] as const,
      ),
    ),
  ].filter(([, text]) => DEPLOYS.test(text));

  test("finds the pipelines that deploy", () => {
    expect(pipelines.map(([name]) => name)).toEqual(
      expect.arrayContaining(["examples/gitops/.github/workflows/deploy.yml", "README.md yaml #1"]),
    );
  });

  test.each(pipelines)("%s installs with npm ci before it deploys, never npm install", (_, source) => {
    // Its commands, not its comments (which may say what `npm install` writes).
    const text = source.replace(/(^|\s)#.*$/gm, "");
    expect(text).not.toMatch(/\bnpm (i|install)\b/);
    const ci = text.search(/\bnpm ci\b/);
    expect(ci).toBeGreaterThanOrEqual(0);
    expect(ci).toBeLessThan(text.search(DEPLOYS));
  });
});
