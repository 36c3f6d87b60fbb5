/**
 * examples/README.md names every setting each example program reads, and says which are required:
 * a newcomer running one learns them there, not from a "Missing required configuration variable".
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";

const ROOT = resolve(__dirname, "../..");
const EXAMPLES = join(ROOT, "examples");
const readme = readFileSync(join(EXAMPLES, "README.md"), "utf8");
const settings = readme.slice(
  readme.indexOf("Settings each program reads"),
  readme.indexOf("\n## ", readme.indexOf("Settings each program reads")),
);

/**
 * The project config keys a program reads (`config.get("x")`, `config.requireSecret("x")`, ...): required
 * when only a require* reads it (a require* behind a get of the same key is an optional setting).
 */
function keysOf(source: string): Map<string, boolean> {
  const reads = new Map<string, Set<string>>();
  for (const [, method, key] of source.matchAll(
    /\bconfig\.(get\w*|require\w*)(?:<[^>]*>)?\(\s*"([A-Za-z0-9_]+)"/g,
  )) {
    reads.set(key!, (reads.get(key!) ?? new Set()).add(method!.startsWith("require") ? "require" : "get"));
  }
  return new Map([...reads].map(([key, kinds]) => [key, !kinds.has("get")]));
}

describe("examples/README.md", () => {
  const programs = readdirSync(EXAMPLES, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .filter((name) => readdirSync(join(EXAMPLES, name)).includes("Pulumi.yaml"));

  test("finds the Pulumi programs", () => {
    expect(programs).toEqual(expect.arrayContaining(["quickstart", "private-model", "secrets-cpu"]));
  });

  for (const program of programs) {
    test(`names every setting ${program} reads, and the required ones as required`, () => {
      const keys = keysOf(readFileSync(join(EXAMPLES, program, "index.ts"), "utf8"));
      const at = settings.indexOf(` ${program} `);
      expect(at, `${program} in "Settings each program reads"`).toBeGreaterThan(-1);
      // The program's list runs to the next program's name (after a ";") or the end.
      const own = settings.slice(at).split(/;\s*[a-z-]+ `/)[0]!;
      for (const [key, required] of keys) {
        expect(own, `${program}: ${key}`).toContain(`\`${key}\``);
        if (required)
          expect(own, `${program}: ${key} required`).toMatch(new RegExp(`\`${key}\`\\s+\\(required`));
      }
    });
  }
});
