import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { readApiKeys } from "../../service/api-keys";
import { fuzzParameters, fuzzSeed, hostileString } from "./support";

/*
 * The CLI's --api-key-file (service/api-keys.ts readApiKeys): account keys one a line, and
 * `<further key> = <account key>` lines. Whatever the file holds, reading it gives keys that are
 * keys, or throws the documented refusal naming the file and the line, and no refusal or warning
 * ever holds a key the file gave.
 */
const seed = fuzzSeed("api-keys");
const dir = mkdtempSync(join(tmpdir(), "rpk-fuzz-keys-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Keys: printable ASCII without spaces (some `#`-led, some with `=`), and a few that are no keys. */
const key = fc.oneof(
  { weight: 6, arbitrary: fc.stringMatching(/^rpk_[a-zA-Z0-9]{8,24}$/) },
  { weight: 1, arbitrary: fc.stringMatching(/^[\x21-\x7e]{1,12}$/) },
  { weight: 1, arbitrary: fc.integer({ min: 500, max: 600 }).map((n) => "k".repeat(n)) },
);
const space = fc.constantFrom(" ", "  ", "\t", " \u00a0", "\u2028", "\u3000", "\v");

/** Lines of a key file, most naming keys of a small pool (so `k = of` often names an account key). */
const fileText = fc.uniqueArray(key, { minLength: 1, maxLength: 4 }).chain((pool) => {
  const ofPool = fc.nat().map((i) => pool[i % pool.length] as string);
  const anyKey = fc.oneof({ weight: 3, arbitrary: ofPool }, { weight: 1, arbitrary: key });
  const line = fc.oneof(
    { weight: 4, arbitrary: anyKey },
    {
      weight: 4,
      arbitrary: fc.tuple(anyKey, space, space, anyKey).map(([k, a, b, of]) => `${k}${a}=${b}${of}`),
    },
    { weight: 1, arbitrary: fc.tuple(anyKey, anyKey).map(([k, of]) => `${k}=${of}`) },
    { weight: 1, arbitrary: fc.tuple(anyKey, anyKey).map(([k, of]) => `${k} = ${of} = ${k}`) },
    { weight: 1, arbitrary: fc.constantFrom("", "#", "# a comment", "   ", "=", " = ", "\u0000", "\ufeff") },
    { weight: 1, arbitrary: hostileString.map((text) => text.slice(0, 600)) },
  );
  return fc
    .tuple(fc.array(line, { maxLength: 8 }), fc.constantFrom("\n", "\r\n", "\r"), fc.boolean())
    .map(([lines, eol, last]) => lines.join(eol) + (last ? eol : ""));
});

let files = 0;

describe("fuzz: --api-key-file", () => {
  it("gives keys, or refuses naming the file and the line; never prints a key", () => {
    let accepted = 0;
    let further = 0;
    fc.assert(
      fc.property(fileText, fc.option(key, { nil: undefined }), (text, env) => {
        const file = join(dir, `keys-${++files}`);
        writeFileSync(file, text, { mode: 0o600 });
        // The keys the sources give that no wording could hold (every `rpk_` key, the long ones).
        const given = [...text.split(/[\s=]+/), env ?? ""].filter(
          (w) => w.startsWith("rpk_") || w.length >= 500,
        );
        let read: ReturnType<typeof readApiKeys>;
        try {
          read = readApiKeys({ files: [file], ...(env === undefined ? {} : { env }) });
        } catch (error) {
          expect(error).toBeInstanceOf(Error);
          const message = (error as Error).message;
          expect(
            message.startsWith(`--api-key-file ${file} line `) || message.startsWith("RUNPODKIT_API_KEYS: "),
            message,
          ).toBe(true);
          for (const word of given) expect(message, message).not.toContain(word);
          return;
        }
        accepted++;
        for (const k of read.keys) expect(k).toMatch(/^[\x21-\x7e]{1,512}$/);
        for (const [k, of] of Object.entries(read.sameAccountKeys)) {
          further++;
          expect(read.keys).toContain(of);
          expect(read.keys).not.toContain(k);
        }
        for (const warning of read.warnings) for (const word of given) expect(warning).not.toContain(word);
      }),
      fuzzParameters(seed, 500),
    );
    // Both outcomes were exercised, further keys too.
    expect(accepted).toBeGreaterThan(0);
    expect(further).toBeGreaterThan(0);
  });
});
