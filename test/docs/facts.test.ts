/**
 * Facts the README and docs/ state that the code owns: the figures are read from the code here, so a
 * change of either side fails this test instead of leaving a newcomer with a value the code refuses.
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, test } from "vitest";
import { JOB_LIMITS } from "../../sdk/schemas/job";
import { BUILTIN_HANDLERS, FALLBACK_IMAGE } from "../../service/jobs/workers/handlers/index";

const ROOT = resolve(__dirname, "../..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
/** Prose as read: line breaks and indentation of a wrapped paragraph are one space. */
const flat = (text: string) => text.replace(/\s+/g, " ");

describe("figures the docs take from the code", () => {
  test("the README gives statusSync's `wait` in the unit the SDK takes (milliseconds) and its bounds", () => {
    const readme = flat(read("README.md"));
    const bullet = readme.slice(readme.indexOf("- `statusSync(id, { wait })`"));
    const { min, max, default: fallback } = JOB_LIMITS.runsyncWait;
    expect(bullet.slice(0, 400)).toContain(
      `in milliseconds, as \`runSync\`'s: ${min} to ${max}, default ${fallback}`,
    );
  });

  test("every page that lists the service's built-in images lists all of them, and the fallback", () => {
    const pages = [
      "README.md",
      "docs/installation-configuration.md",
      "docs/api-docs/template.md",
      "examples/handlers/README.md",
    ];
    const images = Object.keys(BUILTIN_HANDLERS);
    expect(images.length).toBeGreaterThanOrEqual(5);
    const missing = pages.flatMap((page) => {
      const text = flat(read(page));
      return [
        ...images.filter((image) => !text.includes(`\`${image}\``)).map((image) => `${page}: ${image}`),
        ...(text.includes(`any other image runs \`${FALLBACK_IMAGE}\``) ? [] : [`${page}: the fallback`]),
      ];
    });
    expect(missing).toEqual([]);
  });
});
