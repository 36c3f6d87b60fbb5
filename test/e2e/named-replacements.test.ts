import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LocalStack, OutputMap } from "../../engine/engine";
import { EngineError } from "../../engine/errors";
import { type FixtureStack, openFixtureStack } from "./support/fixture-stack";
import type { ServiceFixture } from "./support/service";

const FIXTURE = join(__dirname, "fixtures", "named");
const STEP_TIMEOUT = 180_000;

const str = (outputs: OutputMap, key: string) => String(outputs[key]?.value);

describe("explicitly named resources in use, replaced through the engine", () => {
  let fixture: FixtureStack | undefined;
  let svc: ServiceFixture;
  let stack: LocalStack;
  let workDir: string;
  let first: OutputMap;

  beforeAll(async () => {
    fixture = await openFixtureStack(FIXTURE, {
      registryPassword: { value: "hunter2-registry", secret: true },
    });
    ({ svc, stack, workDir } = fixture);
    first = (await stack.up()).outputs;
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test(
    "a new category replaces template `worker` without downtime: the endpoint moves over, then the old one goes",
    async () => {
      stack.setConfig("category", { value: "AMD" });
      const preview = await stack.preview();
      expect(
        preview.steps.filter((s) => s.op !== "same").map((s) => [s.op, s.urn.split("::").at(-1)]),
      ).toEqual([
        ["replace", "worker"],
        ["update", "api"],
      ]);
      const up = await stack.up();
      expect(up.changes).toMatchObject({ replace: 1, update: 1 });
      const templateId = str(up.outputs, "templateId");
      expect(templateId).not.toBe(str(first, "templateId"));
      expect(str(up.outputs, "endpointId")).toBe(str(first, "endpointId"));
      expect(svc.endpoint(str(first, "endpointId"))?.templateId).toBe(templateId);
      expect(svc.events.some((e) => e.kind === "deleted")).toBe(false);
      const templates = await svc.rest.templates.list({ includeEndpointBoundTemplates: true });
      expect(templates.map((t) => [t.name, t.id])).toEqual([["worker", templateId]]);
    },
    STEP_TIMEOUT,
  );

  test(
    "a new name replaces the registry auth: the template is repointed in place, then the old auth goes",
    async () => {
      stack.setConfig("authName", { value: "private-registry-2" });
      const up = await stack.up();
      expect(up.changes).toMatchObject({ replace: 1, update: 1 });
      const authId = str(up.outputs, "authId");
      const auths = await svc.rest.containerRegistryAuths.list();
      expect(auths.map((a) => [a.name, a.id])).toEqual([["private-registry-2", authId]]);
      expect((await svc.rest.templates.get(str(up.outputs, "templateId"))).containerRegistryAuthId).toBe(
        authId,
      );
    },
    STEP_TIMEOUT,
  );

  test(
    "forcing deleteBeforeReplace on a template in use fails at the first refusal, naming the endpoint and the fix",
    async () => {
      const before = await stack.outputs();
      stack.setConfig("forceDeleteFirst", { value: "true" });
      stack.setConfig("category", { value: "NVIDIA" });
      const failed = await stack.up().catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(EngineError);
      const message = (failed as EngineError).message;
      expect(message).toContain(`is still used by endpoint`);
      expect(message).toContain(str(before, "endpointId"));
      expect(message).toContain("remove that option");
      // Nothing was lost: the template and the endpoint are still there, still wired.
      expect(svc.endpoint(str(before, "endpointId"))?.templateId).toBe(str(before, "templateId"));
      expect(stack.logText().includes("hunter2-registry")).toBe(false);
    },
    STEP_TIMEOUT,
  );

  test(
    "a plan saved by preview applies: names are derived, so preview and up agree",
    async () => {
      stack.setConfig("forceDeleteFirst", { value: "false" });
      const planFile = join(workDir, "plan.json");
      const preview = await stack.preview({ savePlan: planFile });
      expect(preview.changes).toMatchObject({ replace: 1, update: 1 });
      const up = await stack.up({ plan: planFile });
      expect(up.changes).toMatchObject({ replace: 1, update: 1 });
      expect(
        (await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).map((t) => t.category),
      ).toEqual(["NVIDIA"]);
      await stack.destroy();
      expect(await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).toEqual([]);
    },
    STEP_TIMEOUT,
  );
});
