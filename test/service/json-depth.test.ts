import { describe, expect, it } from "vitest";
import { JSON_LIMITS, memberTooDeep } from "../../service/edge/body";

/** The depth scan of body texts (service/edge/body.ts), before any parser runs. */
describe("memberTooDeep", () => {
  const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;

  it("names the top-level member nested too deep, or the body", () => {
    expect(memberTooDeep(`{"a":1,"input":${deep(JSON_LIMITS.depth)}}`)).toBeNull();
    expect(memberTooDeep(`{"a":1,"input":${deep(JSON_LIMITS.depth + 1)}}`)).toBe("input");
    expect(memberTooDeep(`{"a":"x","b":{"c":${deep(JSON_LIMITS.depth)}}}`)).toBe("b");
    expect(memberTooDeep(`[${deep(JSON_LIMITS.depth + 1)}]`)).toBe("body");
    expect(memberTooDeep(`{'single':${deep(JSON_LIMITS.depth + 1)}}`)).toBe("single");
  });

  it("skips brackets and quotes inside strings, escaped or not", () => {
    const brackets = `"${"[".repeat(500)}"`;
    expect(memberTooDeep(`{"input":{"s":${brackets}}}`)).toBeNull();
    expect(memberTooDeep(`{"input":"a\\"[[[[[[[[\\\\","x":${deep(3)}}`)).toBeNull();
    expect(memberTooDeep(`{"k\\\\":${deep(JSON_LIMITS.depth + 1)}}`)).toBe("k\\\\");
    // An unterminated string ends the scan: the parser refuses the text.
    expect(memberTooDeep(`{"input":"${"[".repeat(100)}`)).toBeNull();
  });
});
