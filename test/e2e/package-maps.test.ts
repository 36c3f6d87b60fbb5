/**
 * What the packed package says about its sources resolves inside the tarball: a compiled file that
 * names a source map names one the tarball holds, and that map's sources are either inline
 * (`sourcesContent`) or files of the tarball. The package ships no maps (the sources inline would
 * grow the tarball by half; without them, stack traces and debuggers named .ts files it does not
 * hold): the compiled .js files are what traces name, and they are there.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { packProject } from "../../engine/package";

const SourceMap = z.looseObject({
  sources: z.array(z.string()),
  sourcesContent: z.array(z.string().nullable()).optional(),
});

let root: string;
let files: string[];

beforeAll(async () => {
  const { tarball } = await packProject();
  root = await mkdtemp(join(tmpdir(), "runpodkit-maps-"));
  await promisify(execFile)("tar", ["-xzf", tarball, "-C", root]);
  files = (readdirSync(join(root, "package"), { recursive: true }) as string[]).map((f) =>
    join(root, "package", f),
  );
}, 300_000);
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe("the packed package's source maps", () => {
  it("every sourceMappingURL resolves to a map in the tarball whose sources are inline or shipped", () => {
    const unresolved: string[] = [];
    const scripts = files.filter((f) => f.endsWith(".js"));
    expect(scripts.length).toBeGreaterThan(50);
    for (const script of scripts) {
      const match = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(script, "utf8"));
      if (!match?.[1]) continue;
      const mapFile = resolve(dirname(script), match[1]);
      if (!existsSync(mapFile)) {
        unresolved.push(`${script}: ${match[1]} is not in the tarball`);
        continue;
      }
      const map = SourceMap.parse(JSON.parse(readFileSync(mapFile, "utf8")));
      map.sources.forEach((source, i) => {
        const inline = typeof map.sourcesContent?.[i] === "string";
        if (!inline && !existsSync(resolve(dirname(mapFile), source))) {
          unresolved.push(`${mapFile}: source ${source} is neither inline nor in the tarball`);
        }
      });
    }
    expect(unresolved.slice(0, 5)).toEqual([]);
  });

  it("ships no maps at all (the choice made for size), so no file names one", () => {
    expect(files.filter((f) => f.endsWith(".map"))).toEqual([]);
  });
});
