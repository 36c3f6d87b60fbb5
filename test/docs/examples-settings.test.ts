/**
 * examples/README.md against the programs: "Settings each program reads" names every config key each
 * Pulumi example reads, under the example's name, and says which are required. A user running an
 * example learns its settings there before `pulumi up` stops on a missing one.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";

const EXAMPLES = resolve(__dirname, "../../examples");
const readme = readFileSync(join(EXAMPLES, "README.md"), "utf8");
const settings = readme.slice(
  readme.indexOf("Settings each program reads"),
  readme.indexOf("## How the tests"),
);

/**
 * The config keys a program reads, each with whether it is required: read only with `config.require*`
 * (a key also read with `config.get*` first is optional, as gitops' `gitCommit`).
 */
function keysOf(program: string): Map<string, boolean> {
  const keys = new Map<string, boolean>();
  for (const [, verb, key] of program.matchAll(/config\.(get|require)\w*(?:<[^>]*>)?\("(\w+)"/g)) {
    keys.set(String(key), (keys.get(String(key)) ?? true) && verb === "require");
  }
  return keys;
}

/** The part of the settings paragraph about one example: from its name to the next `; `. */
function sectionOf(example: string): string {
  const at = settings.search(new RegExp(`(^|[\\s;])${example} \``));
  if (at === -1) return "";
  const rest = settings.slice(at);
  const next = rest.search(/; [a-z-]+ `/);
  return next === -1 ? rest : rest.slice(0, next);
}

const programs = readdirSync(EXAMPLES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .filter((name) => {
    try {
      return readFileSync(join(EXAMPLES, name, "Pulumi.yaml"), "utf8").length > 0;
    } catch {
      return false;
    }
  });

describe("examples/README.md names each program's settings", () => {
  test("the Pulumi examples are found", () => {
    expect(programs).toEqual(
      expect.arrayContaining(["quickstart", "private-model", "hub-release", "secrets-cpu", "gitops"]),
    );
  });

  test.each(programs)("%s: every key it reads, and which are required", (example) => {
    const keys = keysOf(readFileSync(join(EXAMPLES, example, "index.ts"), "utf8"));
    const section = sectionOf(example);
    for (const [key, required] of keys) {
      expect(section, `${example} reads ${key}`).toContain(`\`${key}\``);
      if (required)
        expect(section, `${example} requires ${key}`).toMatch(new RegExp(`\`${key}\`\\s+\\(required`));
    }
  });
});
