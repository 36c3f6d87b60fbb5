/**
 * The real-engine rules the test engine models (engine/README.md), each shown on the rules fixture:
 * parallel steps bounded like --parallel, dependent replacements for delete-before-replace, secret
 * config sent secret-wrapped to Configure, saved plans checked by up, customTimeouts sent as request
 * timeouts, and cancellation.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LocalStack } from "../../engine/engine";
import { EngineError } from "../../engine/errors";

const FIXTURE = join(__dirname, "fixtures", "rules");
const RUN_TIMEOUT = 120_000;
const urn = (name: string) => `urn:pulumi:dev::rules::pulumi-nodejs:dynamic/rules:Thing::${name}`;

interface Harness {
  root: string;
  dir: string;
  stack: LocalStack;
  journal: () => string[];
  things: () => string[];
}

async function harness(parallel: number, config: Record<string, string>): Promise<Harness> {
  const root = mkdtempSync(join(tmpdir(), "runpodkit-rules-"));
  const dir = join(root, "things");
  mkdirSync(dir);
  const stack = await LocalStack.open({
    programDir: FIXTURE,
    stackName: "dev",
    stateDir: join(root, "state"),
    passphrase: "rules passphrase",
    env: { THINGS_DIR: dir, PULUMI_NODEJS_TRANSPILE_ONLY: "true" },
    parallel,
  });
  stack.setAllConfig({
    token: { value: `token-${randomUUID()}`, secret: true },
    ...Object.fromEntries(Object.entries(config).map(([k, v]) => [k, { value: v }])),
  });
  const journal = () => {
    const file = join(dir, "journal.log");
    return existsSync(file) ? readFileSync(file, "utf8").trim().split("\n") : [];
  };
  const things = () =>
    readdirSync(dir)
      .filter((f) => f.endsWith(".json"))
      .map((f) => f.slice(0, -5))
      .sort();
  return { root, dir, stack, journal, things };
}

/** The most creates (or slow deletes) in flight at once, read from the journal's start/end lines. */
function maxInFlight(lines: string[], op: "create" | "delete" = "create"): number {
  const end = op === "create" ? "end create " : "delete ";
  const inFlight = new Set<string>();
  let most = 0;
  for (const line of lines) {
    if (line.startsWith(`start ${op} `)) {
      inFlight.add(line.slice(`start ${op} `.length));
      most = Math.max(most, inFlight.size);
    }
    if (line.startsWith(end)) inFlight.delete(line.slice(end.length));
  }
  return most;
}

describe("engine rules on the rules fixture", () => {
  let h: Harness;

  beforeAll(async () => {
    h = await harness(3, { slowCount: "6", slowDelayMs: "400" });
  });
  afterAll(() => rmSync(h.root, { recursive: true, force: true }));

  test(
    "independent creates run in parallel, never more than --parallel at once; timeouts reach the host",
    async () => {
      const up = await h.stack.up();
      expect(up.changes).toEqual({ create: 11 });
      // Six slow things and a chain that waits on outputs: three at once at most, and more than one.
      expect(maxInFlight(h.journal())).toBe(3);
      const slowCreates = h.stack.providerCalls.filter((c) => c.op === "create" && c.urn.includes("slow-"));
      expect(slowCreates).toHaveLength(6);
      expect(slowCreates.every((c) => c.timeoutSeconds === 120)).toBe(true);
      const others = h.stack.providerCalls.filter((c) => c.op === "create" && !c.urn.includes("slow-"));
      expect(others.every((c) => c.timeoutSeconds === undefined)).toBe(true);
    },
    RUN_TIMEOUT,
  );

  test("secret config reaches Configure secret-wrapped and the provider reads its plain value", async () => {
    const configure = h.stack.providerCalls.find((c) => c.op === "configure");
    expect(configure?.secretKeys).toEqual(["rules:token"]);
    const token = h.stack.getAllConfig()["rules:token"]?.value;
    expect(readFileSync(join(h.dir, "configured.txt"), "utf8")).toBe(token);
    expect(h.stack.logText().includes(String(token))).toBe(false);
  });

  test(
    "delete-before-replace first deletes the dependents whose inputs it feeds, deepest first",
    async () => {
      const before = await h.stack.outputs();
      const ids = before.ids?.value as Record<string, string>;
      const start = h.journal().length;
      h.stack.setConfig("baseKind", { value: "b" });
      const preview = await h.stack.preview();
      expect(preview.steps.filter((s) => s.op === "replace").map((s) => s.urn)).toEqual([
        urn("base"),
        urn("child"),
        urn("grandchild"),
      ]);
      const up = await h.stack.up();
      expect(up.changes).toEqual({ same: 8, replace: 3 });
      const lines = h.journal().slice(start);
      // The in-use refusal never happens: grandchild, child, then base go before anything is created.
      expect(lines.slice(0, 3)).toEqual([
        `delete ${ids.grandchild}`,
        `delete ${ids.child}`,
        `delete ${ids.base}`,
      ]);
      expect(lines.filter((l) => l.startsWith("end create"))).toHaveLength(3);
      // The dependsOn-only watcher is untouched.
      const after = (await h.stack.outputs()).ids?.value as Record<string, string>;
      expect(after.watcher).toBe(ids.watcher);
      expect(after.base).not.toBe(ids.base);
      expect(lines.some((l) => l.includes(ids.watcher ?? "?"))).toBe(false);
      // Delete timeouts come from state.
      expect(
        h.stack.providerCalls.filter((c) => c.op === "delete").every((c) => c.timeoutSeconds === undefined),
      ).toBe(true);
    },
    RUN_TIMEOUT,
  );

  test(
    "a saved plan applies when nothing changed since, and a changed program violates it",
    async () => {
      const planFile = join(h.root, "plan.json");
      h.stack.setConfig("baseKind", { value: "c" });
      const preview = await h.stack.preview({ savePlan: planFile });
      expect(preview.changes).toMatchObject({ replace: 3 });
      const token = String(h.stack.getAllConfig()["rules:token"]?.value);
      expect(readFileSync(planFile, "utf8").includes(token)).toBe(false);

      // The program changed after the preview: base's kind is no longer what the plan says.
      h.stack.setConfig("baseKind", { value: "d" });
      const violated = await h.stack.up({ plan: planFile }).catch((e: unknown) => e);
      expect(violated).toBeInstanceOf(EngineError);
      expect((violated as EngineError).code).toBe("PLAN_VIOLATION");
      expect((violated as EngineError).message).toContain(
        `${urn("base")} violates plan: properties changed: kind`,
      );

      h.stack.setConfig("baseKind", { value: "c" });
      const up = await h.stack.up({ plan: planFile });
      expect(up.changes).toEqual({ same: 8, replace: 3 });
    },
    RUN_TIMEOUT * 2,
  );

  test(
    "a plan applies when a secret input was still unknown at preview (a planned unknown matches anything)",
    async () => {
      const s = await harness(3, { withSealed: "true" });
      try {
        expect((await s.stack.up()).changes).toEqual({ create: 6 });
        const planFile = join(s.root, "plan.json");
        s.stack.setConfig("baseKind", { value: "b" });
        // base is replaced, so its new id, and the secret label made from it, are unknown at preview.
        const preview = await s.stack.preview({ savePlan: planFile });
        expect(preview.changes).toMatchObject({ replace: 3, update: 1 });
        const up = await s.stack.up({ plan: planFile });
        expect(up.changes).toEqual({ same: 2, replace: 3, update: 1 });
        const ids = (await s.stack.outputs()).ids?.value as Record<string, string>;
        const sealed = readdirSync(s.dir)
          .filter((f) => f.endsWith(".json"))
          .map((f) => JSON.parse(readFileSync(join(s.dir, f), "utf8")) as { label?: string })
          .find((t) => t.label?.startsWith("sealed-"));
        expect(sealed?.label).toBe(`sealed-${ids.base}`);
      } finally {
        rmSync(s.root, { recursive: true, force: true });
      }
    },
    RUN_TIMEOUT * 2,
  );

  test(
    "refresh reads in parallel and changes nothing; destroy deletes in parallel, dependents first, with each delete timeout from state",
    async () => {
      const refresh = await h.stack.refresh();
      expect(refresh.changes).toEqual({ same: 10 });
      const start = h.stack.providerCalls.length;
      const journalBefore = h.journal().length;
      const destroy = await h.stack.destroy();
      expect(destroy.changes).toEqual({ delete: 11 }); // the ten things and the stack itself
      const deletes = h.stack.providerCalls.slice(start).filter((c) => c.op === "delete");
      expect(deletes).toHaveLength(10);
      expect(deletes.filter((c) => c.timeoutSeconds === 90)).toHaveLength(6);
      const lines = h.journal().slice(journalBefore);
      // The six slow deletes (400 ms each) overlap, never more than --parallel (3) at once.
      expect(maxInFlight(lines, "delete")).toBe(3);
      // The chain: a thing in use refuses deletion, so any other order would have failed the destroy.
      const order = lines.filter((l) => l.startsWith("delete ")).map((l) => l.slice("delete ".length));
      expect(order).toHaveLength(10);
      expect(h.things()).toEqual([]);
      // Steps are reported in dependency order (dependents first) whatever order the deletes finished in.
      const reported = destroy.steps.map((s) => s.urn);
      expect(reported.indexOf(urn("grandchild"))).toBeLessThan(reported.indexOf(urn("child")));
      expect(reported.indexOf(urn("child"))).toBeLessThan(reported.indexOf(urn("base")));
      expect(reported.indexOf(urn("watcher"))).toBeLessThan(reported.indexOf(urn("base")));
    },
    RUN_TIMEOUT,
  );
});

describe("replaceOnChanges", () => {
  test(
    "applies only to keys the diff names: not to a dynamic provider's verdict 'some' (its host names no key), to the engine's own diff after 'unknown'",
    async () => {
      const h = await harness(3, { withForced: "true" });
      try {
        await h.stack.up();
        h.stack.setConfig("forcedLabel", { value: "two" });
        const up = await h.stack.up();
        const steps = up.steps.filter((s) => s.urn.includes("::forced"));
        expect(steps.map((s) => [s.op, s.urn.split("::").at(-1), s.keys])).toEqual([
          ["update", "forced", ["label"]],
          ["replace", "forced-unsure", ["label"]],
        ]);
        await h.stack.destroy();
      } finally {
        rmSync(h.root, { recursive: true, force: true });
      }
    },
    RUN_TIMEOUT,
  );
});

describe("cancelling an update", () => {
  test(
    "stops new steps, sends Cancel to the provider host, keeps every created resource in state",
    async () => {
      const h = await harness(1, { slowCount: "8", slowDelayMs: "600" });
      try {
        const running = h.stack.up().catch((e: unknown) => e);
        // Cancel once the first create has started.
        while (!h.journal().some((l) => l.startsWith("start create"))) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await h.stack.cancel();
        const outcome = await running;
        expect(outcome).toBeInstanceOf(EngineError);
        expect((outcome as EngineError).code).toBe("CANCELED");
        expect(h.stack.providerCalls.some((c) => c.op === "cancel")).toBe(true);
        const created = h.things();
        expect(created.length).toBeGreaterThan(0);
        expect(created.length).toBeLessThan(12);
        const inState = (await h.stack.state()).resources.filter((r) => r.custom).map((r) => r.id);
        expect(inState.sort()).toEqual(created);
        await h.stack.destroy();
        expect(h.things()).toEqual([]);
      } finally {
        rmSync(h.root, { recursive: true, force: true });
      }
    },
    RUN_TIMEOUT,
  );
});
