/**
 * Through the engine, with the package packed and installed as users get it: a secret given in either
 * spelling of a template's start command (dockerArgs, dockerStartCmd) is secret under both keys, in
 * the state file and in the stack outputs; a Pod without env settles (a second up does nothing); a
 * number given as a string fails check naming the property once and the config getter to use.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LocalStack, OutputMap } from "../../engine/engine";
import { EngineError } from "../../engine/errors";
import { isSealed } from "../../engine/secret-box";
import type { PropertyMap } from "../../engine/values";
import { type FixtureStack, openFixtureStack } from "./support/fixture-stack";
import type { ServiceFixture } from "./support/service";

const FIXTURE = join(__dirname, "fixtures", "secret-start");
const STEP_TIMEOUT = 180_000;

describe("secret start commands, a Pod without env, and a number from config, through the engine", () => {
  const token = `TOK${randomBytes(8).toString("hex")}`;
  let fixture: FixtureStack | undefined;
  let svc: ServiceFixture;
  let stack: LocalStack;
  let first: OutputMap;

  beforeAll(async () => {
    fixture = await openFixtureStack(FIXTURE, { token: { value: token, secret: true } });
    ({ svc, stack } = fixture);
    first = (await stack.up()).outputs;
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test("the derived spelling of a secret start command is secret in the outputs and sealed in the state", async () => {
    expect(first.argsCmd).toEqual({ value: ["run", "--token", token], secret: true });
    expect(first.argsArgs).toEqual({ value: `run --token ${token}`, secret: true });
    expect(first.cmdArgs).toEqual({ value: `run --token ${token}`, secret: true });
    expect(first.cmdCmd).toEqual({ value: ["run", "--token", token], secret: true });
    // A start command that was never secret stays readable.
    expect(first.plainArgs).toEqual({ value: "run --plain", secret: false });
    // The service has the command; the state file and the engine's log hold no trace of the token.
    const started = (await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).filter((t) =>
      t.dockerStartCmd.includes(token),
    );
    expect(started).toHaveLength(2);
    const text = await stack.exportState();
    expect(text).not.toContain(token);
    expect(stack.logText()).not.toContain(token);
    const templates = (await stack.state()).resources.filter(
      (r) => r.type === "pulumi-nodejs:dynamic/runpodkit:Template" && r.urn.match(/from-(args|cmd)$/),
    );
    expect(templates).toHaveLength(2);
    const sealed = JSON.parse(text) as {
      resources: { urn: string; inputs: PropertyMap; outputs: PropertyMap }[];
    };
    for (const r of sealed.resources.filter((x) => /from-(args|cmd)$/.test(x.urn))) {
      for (const key of ["dockerArgs", "dockerStartCmd"]) {
        expect(isSealed(r.inputs[key]), `${r.urn} inputs.${key}`).toBe(true);
        expect(isSealed(r.outputs[key]), `${r.urn} outputs.${key}`).toBe(true);
      }
    }
  });

  test(
    "a Pod without env: a second up and a preview after refresh change nothing",
    async () => {
      expect(first.podEnv).toEqual({ value: null, secret: true });
      const calls = stack.providerCalls.length;
      const again = await stack.up();
      expect(Object.keys(again.changes)).toEqual(["same"]);
      await stack.refresh();
      const preview = await stack.preview();
      expect(Object.keys(preview.changes)).toEqual(["same"]);
      const writes = stack.providerCalls
        .slice(calls)
        .filter((c) => ["create", "update", "delete"].includes(c.op));
      expect(writes).toEqual([]);
    },
    STEP_TIMEOUT,
  );

  test(
    "a number given as a string fails check naming the property once and config.requireNumber",
    async () => {
      stack.setConfig("maxAsString", { value: "3" });
      const failed = await stack.preview().catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(EngineError);
      expect((failed as EngineError).message).toContain(
        'workersMax: expected a number, got the string "3" (use config.requireNumber / getNumber)',
      );
      expect((failed as EngineError).message).not.toContain("workersMax: workersMax");
      await stack.destroy();
      expect(await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).toEqual([]);
      expect(await svc.rest.pods.list()).toEqual([]);
    },
    STEP_TIMEOUT,
  );
});
