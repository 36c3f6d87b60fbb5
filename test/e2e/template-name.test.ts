import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LocalStack } from "../../engine/engine";
import { type FixtureStack, openFixtureStack } from "./support/fixture-stack";

const FIXTURE = join(__dirname, "fixtures", "template-name");
const STEP_TIMEOUT = 180_000;
/** " café " with "e" and a combining accent (NFD), and surrounding spaces. */
const WRITTEN = " cafe\u0301 ";
const STORED = "caf\u00e9";

/** A template name the service stores in another spelling, through Pulumi's real provider host. */
describe("a Template, Endpoint, NetworkVolume and ContainerRegistryAuth named with surrounding spaces and a decomposed accent", () => {
  let fixture: FixtureStack | undefined;
  let stack: LocalStack;

  beforeAll(async () => {
    fixture = await openFixtureStack(FIXTURE, { name: { value: WRITTEN } });
    stack = fixture.stack;
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test(
    "is created under the stored spelling, and the next up and a refresh have nothing to do",
    async () => {
      const first = await stack.up();
      expect(first.outputs.templateName?.value).toBe(STORED);
      const id = String(first.outputs.templateId?.value);
      expect((await fixture?.svc.rest.templates.get(id))?.name).toBe(STORED);
      // Every resource kind follows the template's rule.
      for (const output of ["volumeName", "authName", "endpointName"]) {
        expect([output, first.outputs[output]?.value]).toEqual([output, STORED]);
      }
      const changed = (run: { steps: { op: string }[] }) => run.steps.filter((s) => s.op !== "same");
      expect(changed(await stack.preview())).toEqual([]);
      expect(changed(await stack.refresh())).toEqual([]);
      expect(changed(await stack.up())).toEqual([]);
    },
    STEP_TIMEOUT,
  );
});
