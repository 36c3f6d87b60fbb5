import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LocalStack, OutputMap } from "../../engine/engine";
import { CREATE_MARK } from "../../provider/endpoint";
import { type FixtureStack, openFixtureStack } from "./support/fixture-stack";
import type { ServiceFixture } from "./support/service";

const FIXTURE = join(__dirname, "fixtures", "replace-on-changes");
const STEP_TIMEOUT = 180_000;

const str = (outputs: OutputMap, key: string) => String(outputs[key]?.value);

/**
 * The engine applies replaceOnChanges as Pulumi's does: only to keys a provider's diff names, which
 * Pulumi's dynamic-provider host never does. So these replacements come from runpodkit's own diff.
 */
describe("replaceOnChanges on a named Template and an Endpoint, through the engine", () => {
  let fixture: FixtureStack | undefined;
  let svc: ServiceFixture;
  let stack: LocalStack;
  let first: OutputMap;

  const changed = (steps: Array<{ op: string; urn: string; keys: string[] }>) =>
    steps.filter((s) => s.op !== "same").map((s) => [s.op, s.urn.split("::").at(-1), s.keys]);

  beforeAll(async () => {
    fixture = await openFixtureStack(FIXTURE);
    ({ svc, stack } = fixture);
    first = (await stack.up()).outputs;
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test(
    "a change the option does not name is an update; a new image replaces the template under its name, and the endpoint moves over",
    async () => {
      stack.setConfig("log", { value: "debug" });
      expect(changed((await stack.up()).steps)).toEqual([["update", "api", ["env"]]]);
      expect(svc.endpoint(str(first, "endpointId"))?.env).toEqual({
        MODEL: "small",
        LOG: "debug",
        [CREATE_MARK]: expect.any(String),
      });

      stack.setConfig("image", { value: "runpodkit/echo:1.1" });
      expect(changed((await stack.preview()).steps)).toEqual([
        ["replace", "worker", ["imageName"]],
        ["update", "api", ["templateId"]],
      ]);
      const up = await stack.up();
      const templateId = str(up.outputs, "templateId");
      expect(templateId).not.toBe(str(first, "templateId"));
      expect(str(up.outputs, "endpointId")).toBe(str(first, "endpointId"));
      expect(svc.endpoint(str(first, "endpointId"))?.templateId).toBe(templateId);
      const templates = await svc.rest.templates.list({ includeEndpointBoundTemplates: true });
      expect(templates.map((t) => [t.name, t.id, t.imageName])).toEqual([
        ["roc-worker", templateId, "runpodkit/echo:1.1"],
      ]);
      expect((await stack.up()).changes).toEqual({ same: 3 });
    },
    STEP_TIMEOUT,
  );

  test(
    "a new MODEL (a nested path) replaces the endpoint: a new one is made and the old one deleted",
    async () => {
      const before = (await stack.outputs()).endpointId?.value;
      stack.setConfig("model", { value: "large" });
      const up = await stack.up();
      expect(changed(up.steps)).toEqual([["replace", "api", ["env"]]]);
      const endpointId = str(up.outputs, "endpointId");
      expect(endpointId).not.toBe(String(before));
      expect(svc.endpoint(endpointId)?.env).toEqual({
        MODEL: "large",
        LOG: "debug",
        [CREATE_MARK]: expect.any(String),
      });
      expect(svc.endpoint(String(before))).toBeUndefined();
      expect((await stack.up()).changes).toEqual({ same: 3 });
    },
    STEP_TIMEOUT,
  );
});
