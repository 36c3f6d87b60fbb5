import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LocalStack } from "../../engine/engine";
import { type FixtureStack, openFixtureStack } from "./support/fixture-stack";
import type { ServiceFixture } from "./support/service";

const FIXTURE = join(__dirname, "fixtures", "adopt");
const STEP_TIMEOUT = 180_000;
const NAMES = ["console-vol", "console-tpl", "console-ep"];

/** Resources made elsewhere, adopted by id without a name, through the engine: the names they had stay. */
describe("adoptId without a name, through the engine", () => {
  let fixture: FixtureStack | undefined;
  let svc: ServiceFixture;
  let stack: LocalStack;
  const ids = { volume: "", template: "", endpoint: "" };

  const liveNames = async () => [
    (await svc.rest.networkVolumes.get(ids.volume)).name,
    (await svc.rest.templates.get(ids.template)).name,
    (await svc.rest.endpoints.get(ids.endpoint)).name,
  ];
  const changed = async (run: Promise<{ steps: { op: string; urn: string }[] }>) =>
    (await run).steps.filter((s) => s.op !== "same").map((s) => `${s.op} ${s.urn.split("::").pop()}`);

  beforeAll(async () => {
    fixture = await openFixtureStack(FIXTURE);
    ({ svc, stack } = fixture);
    const [volumeName, templateName, endpointName] = NAMES as [string, string, string];
    ids.volume = (
      await svc.rest.networkVolumes.create({ name: volumeName, size: 10, dataCenterId: "EU-RO-1" })
    ).id;
    ids.template = (
      await svc.rest.templates.create({
        name: templateName,
        imageName: "img:1",
        isServerless: true,
        env: { A: "1" },
      })
    ).id;
    ids.endpoint = (
      await svc.rest.endpoints.create({
        name: endpointName,
        templateId: ids.template,
        gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
        workersMax: 2,
        networkVolumeId: ids.volume,
      })
    ).id;
    stack.setConfig("volumeId", { value: ids.volume });
    stack.setConfig("templateId", { value: ids.template });
    stack.setConfig("endpointId", { value: ids.endpoint });
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test(
    "the adopted names stay through the next ups, a refresh and dropping adoptId; a rename elsewhere is put back",
    async () => {
      const adopted = await stack.up();
      expect(adopted.outputs.names?.value).toEqual(NAMES);
      // The next up has nothing to do (it used to rename all three to generated names).
      expect(await changed(stack.up())).toEqual([]);
      expect(await liveNames()).toEqual(NAMES);
      expect(await changed(stack.refresh())).toEqual([]);
      stack.setConfig("adopt", { value: "false" });
      expect(await changed(stack.up())).toEqual([]);
      expect(await liveNames()).toEqual(NAMES);

      // Renamed in the console: a refresh shows it, the next up puts the adopted name back.
      await svc.rest.templates.update(ids.template, { name: "renamed-elsewhere" });
      expect(await changed(stack.refresh())).toEqual(["update tpl"]);
      expect(await changed(stack.up())).toEqual(["update tpl"]);
      expect(await liveNames()).toEqual(NAMES);
      expect((await stack.outputs()).names?.value).toEqual(NAMES);
    },
    STEP_TIMEOUT,
  );
});
