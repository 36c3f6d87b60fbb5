/**
 * The installed package carries the pages it sends its users to: the CLI's --help and the service's
 * non-loopback warning say "see SECURITY.md", and README.md (the package's front page) links the docs
 * pages. `npm pack --dry-run` lists what a tarball of this checkout holds.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, test } from "vitest";
import { z } from "zod";

const ROOT = resolve(__dirname, "../..");
const PackList = z.array(z.object({ files: z.array(z.object({ path: z.string() })) })).length(1);

describe("the package's own pages", () => {
  test("holds SECURITY.md and every docs page README.md links, and the CLI still names SECURITY.md", async () => {
    const { stdout } = await promisify(execFile)("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: ROOT,
      maxBuffer: 16 * 1024 * 1024,
    });
    const packed = new Set(PackList.parse(JSON.parse(stdout))[0]!.files.map((f) => f.path));

    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const linked = [...readme.matchAll(/\]\((docs\/[^)#\s]+\.md)(?:#[^)]*)?\)/g)].map((m) => m[1]!);
    expect(linked).toContain("docs/installation-configuration.md");
    const wanted = [...new Set(["SECURITY.md", ...linked])];
    expect(wanted.filter((path) => !packed.has(path))).toEqual([]);
    // The generated page of every resource, which the installation page and _index link.
    expect([...packed].filter((p) => p.startsWith("docs/api-docs/")).length).toBeGreaterThanOrEqual(6);
    // docs/src is the generator's input, not a page.
    expect([...packed].filter((p) => p.startsWith("docs/src/"))).toEqual([]);

    expect(readFileSync(join(ROOT, "service", "main.ts"), "utf8")).toContain("see SECURITY.md");
  });
});
