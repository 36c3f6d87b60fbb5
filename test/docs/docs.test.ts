/**
 * docs/ against schema.json: the committed pages are exactly what `npm run docs` makes (so a schema
 * change without regenerated docs fails here), every resource of the schema has a page with every input
 * and output, what replaces, defaults and secrets, and an example; the generator covers whatever
 * resources and functions a schema holds; the config page names every key and its environment variable.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import semver from "semver";
import { describe, expect, test } from "vitest";
import * as runpodkit from "../../index";
import { CONFIG_KEYS, DEFAULT_URLS } from "../../provider/config";
import { kebab, PackageSchema, tokenName } from "../../scripts/docs/package-schema";
import { DocsError, renderDocs } from "../../scripts/docs/render";
import {
  currentDocs,
  DOCS_DIR,
  driftOf,
  expectedDocs,
  PROJECT_ROOT,
  readDocSources,
} from "../../scripts/gen-docs";

const schema = PackageSchema.parse(JSON.parse(readFileSync(join(PROJECT_ROOT, "schema.json"), "utf8")));
const page = (path: string) => readFileSync(join(DOCS_DIR, path), "utf8");

/** The rows of the markdown table under a `### heading` of a page, by their first cell (`name`). */
function tableRows(text: string, heading: string): Map<string, string[]> {
  const at = text.indexOf(`\n### ${heading}\n`);
  if (at === -1) throw new Error(`no ### ${heading}`);
  const rows = new Map<string, string[]>();
  const lines = text.slice(at).split("\n").slice(2);
  for (const line of lines.slice(lines.findIndex((l) => l.startsWith("|")))) {
    if (!line.startsWith("|")) break;
    const cells = line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim());
    const name = /^`([^`]+)`$/.exec(cells[0] ?? "")?.[1];
    if (name) rows.set(name, cells);
  }
  return rows;
}

describe("docs/", () => {
  test("is exactly what `npm run docs` makes from schema.json and docs/src", async () => {
    const expected = await expectedDocs();
    const current = await currentDocs(DOCS_DIR, expected.keys());
    expect(driftOf(expected, current), "run `npm run docs`").toEqual([]);
    for (const [path, text] of expected) expect(current.get(path), path).toBe(text);
  });

  for (const [token, resource] of Object.entries(schema.resources)) {
    const name = tokenName(token);
    describe(name, () => {
      const path = `api-docs/${kebab(name)}.md`;

      test("has a page with every input: type, required, default, replace-on-change, secret", () => {
        const inputs = tableRows(page(path), "Inputs");
        expect([...inputs.keys()].sort()).toEqual(Object.keys(resource.inputProperties).sort());
        for (const [key, prop] of Object.entries(resource.inputProperties)) {
          const [, type = "", required, fallback, replaces, description] = inputs.get(key)!;
          expect(required, `${key} required`).toBe(resource.requiredInputs.includes(key) ? "yes" : "");
          expect(replaces, `${key} replaces`).toBe(prop.willReplaceOnChanges ? "yes" : "");
          expect(fallback, `${key} default`).toBe(
            prop.default === undefined ? "" : `\`${JSON.stringify(prop.default)}\``,
          );
          expect(type.endsWith("(secret)"), `${key} secret`).toBe(prop.secret === true);
          expect(description, `${key} description`).toBe((prop.description ?? "").replace(/\|/g, "\\|"));
        }
      });

      test("lists the outputs beyond the inputs, and names the inputs that replace it", () => {
        const text = page(path);
        const outputs = tableRows(text, "Outputs");
        const computed = Object.keys(resource.properties).filter((k) => !(k in resource.inputProperties));
        expect([...outputs.keys()].sort()).toEqual(["id", ...computed].sort());
        const replacing = Object.entries(resource.inputProperties).filter(([, p]) => p.willReplaceOnChanges);
        const replacement = text.slice(
          text.indexOf("## Replacement"),
          text.indexOf("\n## ", text.indexOf("## Replacement") + 3),
        );
        for (const [key] of replacing) expect(replacement).toContain(`\`${key}\``);
        if (replacing.length === 0) expect(replacement).toContain("every change is an update in place");
      });

      test("has at least one example, a program the typecheck covers (docs/src/examples)", () => {
        expect(page(path)).toMatch(/## Example Usage\n\n### \S.*\n[\s\S]*?```typescript\nimport /);
        expect(
          existsSync(join(DOCS_DIR, "src", "examples", kebab(name))),
          `docs/src/examples/${kebab(name)}/`,
        ).toBe(true);
      });
    });
  }

  test("the index links a page for every resource, and every relative link of docs/ resolves", () => {
    const index = page("_index.md");
    for (const token of Object.keys(schema.resources)) {
      expect(index).toContain(`[${tokenName(token)}](api-docs/${kebab(tokenName(token))}.md)`);
    }
    const pages = [
      "_index.md",
      "installation-configuration.md",
      ...readdirSync(join(DOCS_DIR, "api-docs")).map((f) => `api-docs/${f}`),
    ];
    for (const path of pages) {
      for (const [, target] of page(path).matchAll(/\]\(([^)#:\s]+\.md)(?:#[^)]*)?\)/g)) {
        expect(existsSync(resolve(dirname(join(DOCS_DIR, path)), target!)), `${path} -> ${target}`).toBe(
          true,
        );
      }
    }
  });

  test("installation & configuration: npm, pnpm and yarn, every config key with its environment variable and default", () => {
    const text = page("installation-configuration.md");
    for (const command of ["npm install runpodkit", "pnpm add runpodkit", "yarn add runpodkit"]) {
      expect(text).toContain(command);
    }
    for (const { key, env } of Object.values(CONFIG_KEYS)) {
      const line = text.split("\n").find((l) => l.startsWith(`| \`${key}\` |`));
      expect(line, key).toBeDefined();
      expect(line, key).toContain(env);
    }
    for (const url of Object.values(DEFAULT_URLS)) expect(text).toContain(url);
    expect(text).toContain("npm run serve");
  });

  test("the index documents every lookup the package exports: its arguments, what it returns, an example", () => {
    const lookups = Object.keys(runpodkit).filter((name) => /^get[A-Z]/.test(name));
    expect(lookups.length).toBeGreaterThanOrEqual(3);
    const index = page("_index.md");
    const section = index.slice(
      index.indexOf("\n## Lookups\n"),
      index.indexOf("\n## ", index.indexOf("\n## Lookups\n") + 3),
    );
    expect(section.length, "a ## Lookups section").toBeGreaterThan(20);
    for (const name of lookups) expect(section, name).toContain(`\`${name}`);
    expect(section).toMatch(/```typescript\nimport [\s\S]*from "runpodkit";/);
  });

  test("the README's set-up: the EBADENGINE warnings of npm ci on an older Node, and none from 22.19", () => {
    // What `npm ci` checks: the engines of every package the lock installs (this one included).
    const lock = JSON.parse(readFileSync(join(PROJECT_ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { engines?: { node?: string } | string[] }>;
    };
    const ranges = Object.entries(lock.packages).flatMap(([path, info]) => {
      const node = Array.isArray(info.engines) ? undefined : info.engines?.node;
      return node ? [[path, node] as const] : [];
    });
    const refusing = (version: string) =>
      ranges.filter(([, range]) => !semver.satisfies(version, range)).map(([path]) => path);
    const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
    const setUp = readme.slice(readme.indexOf("## Set up"), readme.indexOf("## The three parts"));
    expect(setUp).toContain(
      "On a Node older than 22.19, `npm ci` prints\n`npm warn EBADENGINE Unsupported engine`",
    );
    expect(setUp).toContain("from 22.19 on there are none");
    // The machine's Node 20 gets warnings (so the note is needed), 22.19 none (so it is true).
    expect(refusing("20.20.2").length).toBeGreaterThan(0);
    expect(refusing("22.19.0")).toEqual([]);
  });

  test("the README links the docs", () => {
    const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
    expect(readme).toContain("(docs/_index.md)");
    expect(readme).toContain("(docs/installation-configuration.md)");
  });
});

describe("the generator", () => {
  const sources = { pages: {}, members: {}, examples: {} };

  test("makes a page for any resource and function a schema holds, with its own types", () => {
    const grown = PackageSchema.parse({
      name: "runpodkit",
      resources: {
        "runpodkit:index:Secret": {
          description: "A secret.",
          inputProperties: {
            value: { type: "string", secret: true, description: "The value." },
            scope: { $ref: "#/types/runpodkit:index:SecretScope", willReplaceOnChanges: true },
          },
          requiredInputs: ["value"],
          properties: { value: { type: "string", secret: true }, createdAt: { type: "string" } },
        },
      },
      functions: {
        "runpodkit:index:getGpuTypes": {
          description: "Lists GPU types.",
          inputs: { properties: { pool: { type: "string" } } },
          outputs: { properties: { ids: { type: "array", items: { type: "string" } } }, required: ["ids"] },
        },
      },
      types: {
        "runpodkit:index:SecretScope": { type: "string", enum: [{ value: "POD" }, { value: "ENDPOINT" }] },
      },
    });
    const pages = renderDocs(grown, sources);
    expect([...pages.keys()].sort()).toEqual(["api-docs/get-gpu-types.md", "api-docs/secret.md"]);
    const secret = pages.get("api-docs/secret.md")!;
    expect(tableRows(secret, "Inputs").get("value")).toEqual([
      "`value`",
      "string (secret)",
      "yes",
      "",
      "",
      "The value.",
    ]);
    expect(tableRows(secret, "Inputs").get("scope")?.slice(1, 5)).toEqual([
      "[SecretScope](#secretscope)",
      "",
      "",
      "yes",
    ]);
    expect([...tableRows(secret, "Outputs").keys()]).toEqual(["id", "createdAt"]);
    expect(secret).toContain('### SecretScope\n\nOne of: `"POD"`, `"ENDPOINT"`.');
    expect(secret).toContain("Changing `scope` replaces the Secret");
    const fn = pages.get("api-docs/get-gpu-types.md")!;
    expect(fn).toContain("# runpodkit.getGpuTypes");
    expect(tableRows(fn, "Outputs").get("ids")).toEqual(["`ids`", "string[]", ""]);
  });

  test("fills the index's resource table and refuses an unknown placeholder or a missing example", () => {
    const index = "---\ntitle: t\n---\n\n{{ resources }}\n";
    const pages = renderDocs(schema, { ...sources, pages: { "_index.md": index } });
    expect(pages.get("_index.md")).toContain("| [Endpoint](api-docs/endpoint.md) |");
    expect(() => renderDocs(schema, { ...sources, pages: { "x.md": "{{ everything }}\n" } })).toThrow(
      DocsError,
    );
    expect(() =>
      renderDocs(schema, { ...sources, pages: { "x.md": "{{ example endpoint/none }}\n" } }),
    ).toThrow(/no example docs\/src\/examples\/endpoint\/none.ts/);
  });

  test("reads the sources of docs/src: the two top-level pages, each resource's prose and examples", async () => {
    const read = await readDocSources();
    expect(Object.keys(read.pages).sort()).toEqual(["_index.md", "installation-configuration.md"]);
    for (const token of Object.keys(schema.resources))
      expect(read.members[kebab(tokenName(token))]).toBeDefined();
    expect(Object.keys(read.examples)).toContain("endpoint/1-queue");
  });
});
