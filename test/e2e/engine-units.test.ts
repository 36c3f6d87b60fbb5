/**
 * The engine's pure parts: URNs, secret marking, sealing secrets for disk, update plans' matching,
 * and deletion order.
 */
import { describe, expect, test } from "vitest";
import { baseEntry, deleteResource } from "../../engine/deployment";
import { newPlan, planChecker, planInputs } from "../../engine/plan";
import { parsePropertyPath, resetPath } from "../../engine/property-path";
import { isSealed, SecretBox } from "../../engine/secret-box";
import { dependencyOrder, type ResourceState } from "../../engine/state";
import { makeUrn, nameOf, typeOf } from "../../engine/urn";
import {
  makeSecret,
  markSecret,
  type PropertyMap,
  reveal,
  SECRET_SIG,
  SIG_KEY,
  secretKeys,
  UNKNOWN,
} from "../../engine/values";

function resource(urn: string, deps: string[] = [], parent = ""): ResourceState {
  return { ...baseEntry(urn, "t", parent), custom: true, id: urn, dependencies: deps };
}

describe("URNs", () => {
  const stackUrn = makeUrn("dev", "proj", "pulumi:pulumi:Stack", "proj-dev", "");
  test("children of the stack are not prefixed, children of components are", () => {
    expect(stackUrn).toBe("urn:pulumi:dev::proj::pulumi:pulumi:Stack::proj-dev");
    const comp = makeUrn("dev", "proj", "my:index:Comp", "c", stackUrn);
    expect(comp).toBe("urn:pulumi:dev::proj::my:index:Comp::c");
    const child = makeUrn("dev", "proj", "pulumi-nodejs:dynamic/x:R", "r", comp);
    expect(child).toBe("urn:pulumi:dev::proj::my:index:Comp$pulumi-nodejs:dynamic/x:R::r");
    expect(typeOf(child)).toBe("pulumi-nodejs:dynamic/x:R");
    expect(nameOf(child)).toBe("r");
  });
});

describe("secret values", () => {
  test("same-key and listed outputs are marked, reveal unwraps deeply", () => {
    const inputs = { password: makeSecret("pw"), nested: { a: [makeSecret(1)] }, plain: "x" };
    expect([...secretKeys(inputs)].sort()).toEqual(["nested", "password"]);
    const outputs = markSecret({ password: "pw", token: "t", plain: "x" }, ["password", "token"]);
    expect(outputs.password).toEqual({ [SIG_KEY]: SECRET_SIG, value: "pw" });
    expect(outputs.token).toEqual({ [SIG_KEY]: SECRET_SIG, value: "t" });
    expect(outputs.plain).toBe("x");
    expect(reveal(inputs)).toEqual({ password: "pw", nested: { a: [1] }, plain: "x" });
  });

  test("sealing keeps no plaintext, opening needs the same passphrase and salt", () => {
    const box = SecretBox.create("pass");
    const sealed = box.seal({ key: makeSecret({ deep: "value-123" }), list: [makeSecret("second value!")] });
    const text = JSON.stringify(sealed);
    expect(text.includes("value-123")).toBe(false);
    // "!" and spaces are in no base64 alphabet: the sealed text cannot hold them by chance (a short
    // value like "v2" did, now and then, in the random ciphertext).
    expect(text.includes("second value!")).toBe(false);
    expect(isSealed((sealed as Record<string, never>).key)).toBe(true);
    const again = SecretBox.create("pass", box.salt);
    expect(again.open(sealed)).toEqual({
      key: makeSecret({ deep: "value-123" }),
      list: [makeSecret("second value!")],
    });
    expect(() => SecretBox.create("other", box.salt).verify(box.checkValue())).toThrow(
      expect.objectContaining({ code: "PASSPHRASE_MISMATCH" }),
    );
  });
});

describe("update plans", () => {
  /** The error `up --plan` raises for `applied` against a plan recorded from `previewed`, or undefined. */
  function violation(previewed: PropertyMap, applied: PropertyMap): string | undefined {
    const { plan, record } = newPlan("p", "dev");
    record("r", "update", planInputs(previewed));
    // The plan file holds no secret value, known or partly known.
    expect(JSON.stringify(plan).includes("tok-1")).toBe(false);
    try {
      planChecker(JSON.parse(JSON.stringify(plan)))("r", "update", applied);
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }

  test("a secret unknown at preview accepts any value at up, as any planned unknown does", () => {
    const previewed = { env: makeSecret(UNKNOWN), kind: "a" };
    expect(violation(previewed, { env: makeSecret({ TOKEN: "tok-1" }), kind: "a" })).toBeUndefined();
    expect(violation(previewed, { env: makeSecret("anything"), kind: "a" })).toBeUndefined();
    expect(violation(previewed, { env: makeSecret(UNKNOWN), kind: "b" })).toBe(
      "up r: resource r violates plan: properties changed: kind",
    );
  });

  test("a partly known secret: its unknown parts accept anything, its known parts must stay", () => {
    const previewed = { env: makeSecret({ TOKEN: "tok-1", REF: UNKNOWN }), ids: [UNKNOWN, "v2"] };
    const applied = { env: makeSecret({ TOKEN: "tok-1", REF: "ref-9" }), ids: ["v1", "v2"] };
    expect(violation(previewed, applied)).toBeUndefined();
    expect(violation(previewed, { ...applied, env: makeSecret({ TOKEN: "tok-2", REF: "ref-9" }) })).toBe(
      "up r: resource r violates plan: properties changed: env",
    );
    expect(violation(previewed, { ...applied, env: makeSecret({ TOKEN: "tok-1" }) })).toBe(
      "up r: resource r violates plan: properties changed: env",
    );
    expect(violation(previewed, { ...applied, ids: ["v1", "v3"] })).toBe(
      "up r: resource r violates plan: properties changed: ids",
    );
  });

  test("a known secret must keep its value, and stay secret", () => {
    const previewed = { env: makeSecret({ TOKEN: "tok-1" }) };
    expect(violation(previewed, { env: makeSecret({ TOKEN: "tok-1" }) })).toBeUndefined();
    expect(violation(previewed, { env: makeSecret({ TOKEN: "tok-2" }) })).toBe(
      "up r: resource r violates plan: properties changed: env",
    );
    expect(violation(previewed, { env: { TOKEN: "tok-1" } })).toBe(
      "up r: resource r violates plan: properties changed: env",
    );
  });
});

describe("deleting", () => {
  test("a protected resource is refused before any provider call", async () => {
    let hostStarted = false;
    const provider = async () => {
      hostStarted = true;
      throw new Error("no provider in this test");
    };
    await expect(deleteResource({ ...resource("p"), protect: true }, provider)).rejects.toMatchObject({
      code: "PROTECTED",
      urn: "p",
    });
    // Components, external reads and retained resources never reach the provider either.
    await deleteResource({ ...resource("c"), custom: false }, provider);
    await deleteResource({ ...resource("e"), external: true }, provider);
    await deleteResource({ ...resource("r"), retainOnDelete: true }, provider);
    expect(hostStarted).toBe(false);
  });
});

describe("dependency order", () => {
  test("every resource comes after its dependencies and its parent", () => {
    const stack = resource("s");
    const a = resource("a", [], "s");
    const b = resource("b", ["a"], "s");
    const c = resource("c", ["b"], "s");
    const order = dependencyOrder([c, b, stack, a]).map((r) => r.urn);
    expect(order).toEqual(["s", "a", "b", "c"]);
  });

  test("property dependencies count and unknown URNs are ignored", () => {
    const a = resource("a");
    const b = { ...resource("b", ["gone"]), propertyDependencies: { x: ["a"] } };
    expect(dependencyOrder([b, a]).map((r) => r.urn)).toEqual(["a", "b"]);
  });
});

describe("ignoreChanges property paths", () => {
  test("Pulumi's spellings parse to the same segments; wildcards are refused by name", () => {
    expect(parsePropertyPath("env.TOKEN")).toEqual(["env", "TOKEN"]);
    expect(parsePropertyPath('env["TOKEN"]')).toEqual(["env", "TOKEN"]);
    expect(parsePropertyPath('env["a.b"].c')).toEqual(["env", "a.b", "c"]);
    expect(parsePropertyPath("ports[0]")).toEqual(["ports", 0]);
    expect(() => parsePropertyPath("env.*")).toThrow('"env.*": wildcards are not modelled');
    expect(() => parsePropertyPath("env[")).toThrow("never closed");
  });

  test("a nested key takes the old value (through a secret, kept secret) or goes when the old has none", () => {
    const olds: PropertyMap = { env: makeSecret({ TOKEN: "old", MODE: "a" }), ports: ["80/http"] };
    const news: PropertyMap = {
      env: makeSecret({ TOKEN: "new", MODE: "b", EXTRA: "x" }),
      ports: ["81/http"],
    };
    expect(resetPath("env.TOKEN", olds, news)).toEqual({
      env: makeSecret({ TOKEN: "old", MODE: "b", EXTRA: "x" }),
      ports: ["81/http"],
    });
    expect(resetPath('env["EXTRA"]', olds, news)?.env).toEqual(makeSecret({ TOKEN: "new", MODE: "b" }));
    expect(resetPath("ports[0]", olds, news)?.ports).toEqual(["80/http"]);
    // A top-level key as before: the old value, or its absence.
    expect(resetPath("ports", olds, { env: null })).toEqual({ env: null, ports: ["80/http"] });
    expect(resetPath("size", olds, { size: 3 })).toEqual({});
    // The old inputs have a value there but the new ones lack its container: Pulumi's error.
    expect(resetPath("env.TOKEN", olds, { ports: [] })).toBeUndefined();
    expect(olds.env).toEqual(makeSecret({ TOKEN: "old", MODE: "a" }));
  });
});
