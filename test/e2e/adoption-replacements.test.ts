import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LocalStack } from "../../engine/engine";
import { type FixtureStack, openFixtureStack } from "./support/fixture-stack";
import type { ServiceFixture } from "./support/service";

const FIXTURE = join(__dirname, "fixtures", "adopt");
const STEP_TIMEOUT = 180_000;

interface Ids {
  volume: string;
  template: string;
  endpoint: string;
}

/** The fixture's stack with a volume, a template and an endpoint made elsewhere, adopted by its first up. */
async function adoptedStack(): Promise<{ fixture: FixtureStack; adopted: Ids }> {
  const fixture = await openFixtureStack(FIXTURE);
  const { svc, stack } = fixture;
  const volume = await svc.rest.networkVolumes.create({
    name: "console-vol",
    size: 10,
    dataCenterId: "EU-RO-1",
  });
  const template = await svc.rest.templates.create({
    name: "console-tpl",
    imageName: "img:1",
    isServerless: true,
    env: { A: "1" },
  });
  const endpoint = await svc.rest.endpoints.create({
    name: "console-ep",
    templateId: template.id,
    gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
    workersMax: 2,
    networkVolumeId: volume.id,
  });
  const adopted = { volume: volume.id, template: template.id, endpoint: endpoint.id };
  stack.setConfig("volumeId", { value: adopted.volume });
  stack.setConfig("templateId", { value: adopted.template });
  stack.setConfig("endpointId", { value: adopted.endpoint });
  await stack.up();
  expect(await stackIds(stack)).toEqual(adopted);
  return { fixture, adopted };
}

async function stackIds(stack: LocalStack): Promise<Ids> {
  const ids = (await stack.outputs()).ids?.value;
  expect(ids).toHaveLength(3);
  const [volume, template, endpoint] = ids as [string, string, string];
  return { volume, template, endpoint };
}

const changed = async (run: Promise<{ steps: { op: string; urn: string }[] }>) =>
  (await run).steps.filter((s) => s.op !== "same").map((s) => `${s.op} ${s.urn.split("::").pop()}`);

/** Flips the endpoint's type (QB <-> LB), which replaces it; returns the new type. */
function flipType(stack: LocalStack): string {
  const key = `${stack.project.name}:endpointType`;
  const type = stack.getAllConfig()[key]?.value === "LB" ? "QB" : "LB";
  stack.setConfig("endpointType", { value: type });
  return type;
}

/**
 * Resources adopted with adoptId, the adoptId left in the program (as the docs allow), then replaced
 * through the engine: the replacement is a new resource, never the adopted one taken over again.
 */
describe("an adopted resource replaced while the program still sets adoptId (create-before-delete)", () => {
  let fixture: FixtureStack | undefined;
  let svc: ServiceFixture;
  let stack: LocalStack;
  let adopted: Ids;

  beforeAll(async () => {
    ({ fixture, adopted } = await adoptedStack());
    ({ svc, stack } = fixture);
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test(
    "a new endpoint type: the replacement is a new endpoint, the adopted one is deleted, the stack holds a live id",
    async () => {
      const type = flipType(stack);
      expect(await changed(stack.up())).toEqual(["replace ep"]);
      // It used to adopt the endpoint again, then delete it: the stack held a deleted id.
      const { endpoint } = await stackIds(stack);
      expect(endpoint).not.toBe(adopted.endpoint);
      expect((await svc.rest.endpoints.list()).map((e) => e.id)).toEqual([endpoint]);
      expect(svc.endpoint(endpoint)?.type).toBe(type);
      expect(await changed(stack.up())).toEqual([]);
      expect(await changed(stack.refresh())).toEqual([]);
      // Still after a refresh, the next replacement makes a new one too.
      flipType(stack);
      expect(await changed(stack.up())).toEqual(["replace ep"]);
      const next = (await stackIds(stack)).endpoint;
      expect(next).not.toBe(endpoint);
      expect((await svc.rest.endpoints.list()).map((e) => e.id)).toEqual([next]);
    },
    STEP_TIMEOUT,
  );

  test(
    "a new data center: a new volume, the endpoint moved to it, the adopted volume deleted",
    async () => {
      stack.setConfig("dataCenterId", { value: "US-KS-2" });
      // It used to fail: adopting the volume again refused its data center.
      expect(await changed(stack.up())).toEqual(["replace vol", "update ep"]);
      const { volume, endpoint } = await stackIds(stack);
      expect(volume).not.toBe(adopted.volume);
      expect((await svc.rest.networkVolumes.get(volume)).dataCenterId).toBe("US-KS-2");
      expect((await svc.rest.endpoints.get(endpoint)).networkVolumeId).toBe(volume);
      expect((await svc.rest.networkVolumes.list()).map((v) => v.id)).toEqual([volume]);
    },
    STEP_TIMEOUT,
  );

  test(
    "pulumi up --replace of the adopted template: taken over again and kept, not deleted under the endpoint",
    async () => {
      const before = await stackIds(stack);
      const urn = (await stack.state()).resources.find((r) => r.urn.endsWith("::tpl"))?.urn ?? "";
      // Pulumi asks a --replace'd resource no diff and checks it without old inputs: its create
      // cannot be told from the first one, so the template is adopted again; its old half is not deleted.
      expect(await changed(stack.up({ replace: [urn] }))).toEqual(["replace tpl"]);
      expect(await stackIds(stack)).toEqual(before);
      expect((await svc.rest.templates.get(adopted.template)).name).toBe("console-tpl");
      expect((await svc.rest.endpoints.get(before.endpoint)).templateId).toBe(adopted.template);
      expect(await changed(stack.up())).toEqual([]);
    },
    STEP_TIMEOUT,
  );
});

describe("an adopted resource replaced while the program still sets adoptId (deleteBeforeReplace)", () => {
  let fixture: FixtureStack | undefined;
  let svc: ServiceFixture;
  let stack: LocalStack;
  let adopted: Ids;

  beforeAll(async () => {
    ({ fixture, adopted } = await adoptedStack());
    ({ svc, stack } = fixture);
    stack.setConfig("deleteFirst", { value: "true" });
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test(
    "a new endpoint type: the adopted endpoint is deleted and a new one made, not looked for again",
    async () => {
      const type = flipType(stack);
      // It used to fail after deleting the endpoint: "adoptId <id> names no endpoint of this account".
      expect(await changed(stack.up())).toEqual(["replace ep"]);
      const { endpoint } = await stackIds(stack);
      expect(endpoint).not.toBe(adopted.endpoint);
      expect((await svc.rest.endpoints.list()).map((e) => e.id)).toEqual([endpoint]);
      expect(svc.endpoint(endpoint)?.type).toBe(type);
      expect(await changed(stack.up())).toEqual([]);
    },
    STEP_TIMEOUT,
  );

  test(
    "pulumi up --replace of the endpoint: deleted first, then a new one",
    async () => {
      const before = (await stackIds(stack)).endpoint;
      const urn = (await stack.state()).resources.find((r) => r.urn.endsWith("::ep"))?.urn ?? "";
      expect(await changed(stack.up({ replace: [urn] }))).toEqual(["replace ep"]);
      const { endpoint } = await stackIds(stack);
      expect(endpoint).not.toBe(before);
      expect((await svc.rest.endpoints.list()).map((e) => e.id)).toEqual([endpoint]);
    },
    STEP_TIMEOUT,
  );
});
