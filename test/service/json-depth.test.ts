import { describe, expect, it } from "vitest";
import { JSON_LIMITS, memberTooDeep, repeatedKey, topLevelString } from "../../service/edge/body";

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

  it("skips JSON5 comments, so a quote in one hides no brackets (worker bodies are read as JSON5)", () => {
    const tooDeep = deep(JSON_LIMITS.depth + 1);
    expect(memberTooDeep(`{"output": // it's\n ${tooDeep} // '\n}`)).toBe("output");
    expect(memberTooDeep(`{"output": /* it's */ ${tooDeep} /* ' */}`)).toBe("output");
    expect(memberTooDeep(`{/* " */"a":1,"b":${tooDeep}}`)).toBe("b");
    // A line comment ends at any JSON5 line terminator; brackets in comments are no levels.
    expect(memberTooDeep(`{"output": // '\u2028 ${tooDeep}}`)).toBe("output");
    expect(memberTooDeep(`{"output": /* ${tooDeep} */ // ${tooDeep}\n 1}`)).toBeNull();
    // A comment not closed ends the scan: the parser refuses the text.
    expect(memberTooDeep(`{"output": /* ${tooDeep}`)).toBeNull();
  });
});

/** What kind a refused worker body was (a progress update or a result), read by the same scan. */
describe("topLevelString", () => {
  const tooDeep = `${"[".repeat(1_000)}${"]".repeat(1_000)}`;

  it("reads a top-level string member, before or after a member too deep, with either quote", () => {
    expect(topLevelString(`{"status":"IN_PROGRESS","output":${tooDeep}}`, "status")).toBe("IN_PROGRESS");
    expect(topLevelString(`{"output":${tooDeep}, 'status' : 'IN_PROGRESS'}`, "status")).toBe("IN_PROGRESS");
    expect(topLevelString(`{"status":"IN_PROGRESS","output":{`, "status")).toBe("IN_PROGRESS");
  });

  it("is null for the same key nested, as a value, not a string, escaped, or in a comment", () => {
    expect(topLevelString(`{"output":{"status":"IN_PROGRESS"}}`, "status")).toBeNull();
    expect(topLevelString(`{"output":"status","x":"IN_PROGRESS"}`, "status")).toBeNull();
    expect(topLevelString(`{"a":["status","IN_PROGRESS"]}`, "status")).toBeNull();
    expect(topLevelString(`{"status":1}`, "status")).toBeNull();
    expect(topLevelString(`{"status":"IN_\\u0050ROGRESS"}`, "status")).toBeNull();
    expect(topLevelString(`{/* "status":"IN_PROGRESS" */"output":1}`, "status")).toBeNull();
    expect(topLevelString(`["status","IN_PROGRESS"]`, "status")).toBeNull();
    // A key with no value before the next member names nothing.
    expect(topLevelString(`{"status","output":"IN_PROGRESS"}`, "status")).toBeNull();
  });
});

/** The scan for a key given twice in one object (management bodies), before any parser runs. */
describe("repeatedKey", () => {
  it("names the object and the key; the same key in other objects, or as a value, is no repeat", () => {
    expect(repeatedKey(`{"env":{"A":"1","A":"2"}}`)).toEqual({ path: "env", key: "A" });
    expect(repeatedKey(`{"a":1, "a" :2}`)).toEqual({ path: "", key: "a" });
    expect(repeatedKey(`{"l":[{"a":1},{"b":[0,{"a":1,"a":2}]}]}`)).toEqual({ path: "l.1.b.1", key: "a" });
    expect(repeatedKey(`{"a":{"a":1},"b":{"a":1},"c":"a","d":["a","a"]}`)).toBeNull();
  });

  it("reads keys as JSON does (escapes decoded) and skips what strings hold", () => {
    expect(repeatedKey(`{"A":1,"\u0041":2}`)).toEqual({ path: "", key: "A" });
    expect(repeatedKey(`{"s":"{"s":1, "s":2}","t":"\\"}`)).toBeNull();
    expect(repeatedKey(`{"k\\\\":1,"k\\\\":2}`)).toEqual({ path: "", key: "k\\" });
    // Not JSON: left to the parser, which says why.
    expect(repeatedKey(`{"a":1,"a`)).toBeNull();
  });

  it("names the object by its keys' first 100 characters (a key may be as long as the body)", () => {
    const long = "x".repeat(400_000);
    expect(repeatedKey(`{"env":{"${long}":[{"a":1,"a":2}]}}`)).toEqual({
      path: `env.${"x".repeat(100)}….0`,
      key: "a",
    });
  });
});
