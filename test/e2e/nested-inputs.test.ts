/**
 * Outputs inside env maps and id arrays, deployed through the engine from the packed package (the
 * program is type-checked as it runs): Pulumi resolves the nested inputs before check, so the service
 * receives plain values, the secret one stays out of the state and the plan file, and a plan saved by
 * a preview that could not know the volume's id yet applies.
 */
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LocalStack, OutputMap } from "../../engine/engine";
import { CREATE_MARK } from "../../provider/endpoint";
import { type FixtureStack, openFixtureStack } from "./support/fixture-stack";
import type { ServiceFixture } from "./support/service";

const FIXTURE = join(__dirname, "fixtures", "nested-inputs");
const STEP_TIMEOUT = 180_000;
const token = `hf_${randomBytes(16).toString("hex")}`;

const str = (outputs: OutputMap, key: string) => String(outputs[key]?.value);

describe("Outputs inside env values and array elements, deployed through the engine", () => {
  let fixture: FixtureStack | undefined;
  let svc: ServiceFixture;
  let stack: LocalStack;
  let workDir: string;

  beforeAll(async () => {
    fixture = await openFixtureStack(FIXTURE, { hfToken: { value: token, secret: true } });
    ({ svc, stack, workDir } = fixture);
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test(
    "a plan saved by the preview (the volume's id still unknown) applies, and the service gets resolved values",
    async () => {
      const planFile = join(workDir, "plan.json");
      const preview = await stack.preview({ savePlan: planFile });
      expect(preview.changes).toEqual({ create: 4 });
      expect((await readFile(planFile, "utf8")).includes(token)).toBe(false);

      const { outputs, changes } = await stack.up({ plan: planFile });
      expect(changes).toEqual({ create: 4 });
      const volumeId = str(outputs, "volumeId");
      const templateName = str(outputs, "templateName");
      expect(volumeId).toMatch(/^[a-z0-9]+$/);

      const endpoint = svc.endpoint(str(outputs, "endpointId"));
      expect(endpoint?.networkVolumeIds).toEqual([volumeId]);
      expect(endpoint?.templateId).toBe(str(outputs, "templateId"));
      expect(endpoint?.env).toEqual({
        HF_TOKEN: token,
        TEMPLATE_NAME: templateName,
        [CREATE_MARK]: expect.any(String),
      });
      const template = await svc.rest.templates.get(str(outputs, "templateId"));
      // A generated name: the create's mark (CREATE_MARK) is on the template too, outside its outputs.
      expect(template.env).toEqual({
        HF_TOKEN: token,
        VOLUME_ID: volumeId,
        [CREATE_MARK]: expect.any(String),
      });
      expect(template.dockerStartCmd).toEqual(["python", "handler.py", "--volume", volumeId]);

      // The secret env stays secret: in the stack outputs, and nowhere in plain text.
      expect(outputs.endpointEnv).toMatchObject({ secret: true });
      expect((await stack.exportState()).includes(token)).toBe(false);
      expect(stack.logText().includes(token)).toBe(false);
    },
    STEP_TIMEOUT,
  );

  test(
    "a second up changes nothing; destroy removes everything",
    async () => {
      const again = await stack.up();
      expect(again.changes).toEqual({ same: 4 });
      await stack.destroy();
      expect(await svc.rest.endpoints.list()).toEqual([]);
      expect(await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).toEqual([]);
      expect(await svc.rest.networkVolumes.list()).toEqual([]);
    },
    STEP_TIMEOUT,
  );
});
