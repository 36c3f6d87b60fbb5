import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LocalStack, OutputMap } from "../../engine/engine";
import { type FixtureStack, openFixtureStack } from "./support/fixture-stack";
import type { ServiceFixture } from "./support/service";

const FIXTURE = join(__dirname, "fixtures", "components");
const STEP_TIMEOUT = 180_000;

type Named = { id: string; name: string };
const named = (outputs: OutputMap, key: string) => outputs[key]?.value as Named;

describe("generated names of children of two components that share their logical names", () => {
  let fixture: FixtureStack | undefined;
  let svc: ServiceFixture;
  let stack: LocalStack;
  let outputs: OutputMap;

  beforeAll(async () => {
    fixture = await openFixtureStack(FIXTURE);
    ({ svc, stack } = fixture);
    outputs = (await stack.up()).outputs;
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test(
    "both deploy side by side, each with a name of its own, and a second up changes nothing",
    async () => {
      const [blueT, greenT, blueE, greenE] = [
        "blueTemplate",
        "greenTemplate",
        "blueEndpoint",
        "greenEndpoint",
      ].map((key) => named(outputs, key)) as [Named, Named, Named, Named];
      expect(blueT.name).toMatch(/^worker-[0-9a-f]{7}$/);
      expect(greenT.name).toMatch(/^worker-[0-9a-f]{7}$/);
      expect(blueE.name).toMatch(/^api-[0-9a-f]{7}$/);
      expect(greenE.name).toMatch(/^api-[0-9a-f]{7}$/);
      expect(blueT.name).not.toBe(greenT.name);
      expect(blueE.name).not.toBe(greenE.name);
      const templates = await svc.rest.templates.list({ includeEndpointBoundTemplates: true });
      expect(templates.map((t) => [t.id, t.name]).sort()).toEqual(
        [
          [blueT.id, blueT.name],
          [greenT.id, greenT.name],
        ].sort(),
      );
      const endpoints = await svc.rest.endpoints.list();
      expect(endpoints.map((e) => [e.id, e.name, e.templateId]).sort()).toEqual(
        [
          [blueE.id, blueE.name, blueT.id],
          [greenE.id, greenE.name, greenT.id],
        ].sort(),
      );
      const again = await stack.preview();
      expect(again.steps.filter((s) => s.op !== "same")).toEqual([]);
    },
    STEP_TIMEOUT,
  );

  test(
    "after a destroy, up gives each child the same name again (names depend on the program only)",
    async () => {
      const destroyed = await stack.destroy();
      expect(destroyed.steps.length).toBeGreaterThan(0);
      const preview = await stack.preview();
      const up = await stack.up();
      expect(up.changes).toMatchObject({ create: preview.steps.filter((s) => s.op === "create").length });
      expect(named(up.outputs, "blueTemplate").name).toBe(named(outputs, "blueTemplate").name);
      expect(named(up.outputs, "greenEndpoint").name).toBe(named(outputs, "greenEndpoint").name);
    },
    STEP_TIMEOUT,
  );
});
