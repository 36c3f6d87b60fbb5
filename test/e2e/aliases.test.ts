import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LocalStack } from "../../engine/engine";
import { type FixtureStack, openFixtureStack } from "./support/fixture-stack";

const FIXTURE = join(__dirname, "fixtures", "aliases");
const STEP_TIMEOUT = 180_000;

/** Pulumi's aliases option through the engine: a rename or a new parent keeps the resource. */
describe("aliases: renamed resources and one moved under a component", () => {
  let fixture: FixtureStack | undefined;
  let stack: LocalStack;

  beforeAll(async () => {
    fixture = await openFixtureStack(FIXTURE, { password: { value: "pw-aliases", secret: true } });
    stack = fixture.stack;
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test(
    "nothing is replaced or renamed on the service; the next up, a refresh and destroy find them under the new URNs",
    async () => {
      const first = await stack.up();
      const ids = first.outputs.ids?.value;
      const names = first.outputs.names?.value;
      stack.setConfig("moved", { value: "true" });
      const changed = (run: { steps: { op: string; urn: string }[] }) =>
        run.steps.filter((s) => s.op !== "same").map((s) => `${s.op} ${s.urn.split("::").pop()}`);
      expect(changed(await stack.preview())).toEqual(["create svc"]);
      const moved = await stack.up();
      expect(changed(moved)).toEqual(["create svc"]);
      expect(moved.outputs.ids?.value).toEqual(ids);
      expect(moved.outputs.names?.value).toEqual(names);
      const urns = (await stack.state()).resources
        .filter((r) => r.custom)
        .map((r) => r.urn.split("::").slice(-2).join("::"));
      expect(urns).toEqual([
        "pulumi-nodejs:dynamic/runpodkit:ContainerRegistryAuth::registry",
        "pulumi-nodejs:dynamic/runpodkit:Template::worker",
        "acme:index:Service$pulumi-nodejs:dynamic/runpodkit:Endpoint::ep",
      ]);
      expect(changed(await stack.up())).toEqual([]);
      expect(changed(await stack.refresh())).toEqual([]);
      expect(changed(await stack.destroy())).toEqual([
        "delete ep",
        "delete worker",
        "delete registry",
        "delete svc",
        "delete runpodkit-aliases-dev",
      ]);
      expect(await fixture?.svc.rest.endpoints.list()).toEqual([]);
    },
    STEP_TIMEOUT,
  );
});
