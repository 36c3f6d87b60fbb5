import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ACCOUNT, ADOPTED_NAME } from "../../provider/bookkeeping";
import { templateForwarder } from "../../provider/template";
import { RestClient } from "../../sdk/rest";
import { ManualClock } from "../../service/clock";
import { accountIdOf } from "../../service/edge/auth";
import {
  type DynamicProviderHost,
  dynamicUrn,
  type Props,
  serializeProvider,
  stackConfig,
  startCheckoutHost,
} from "../helpers/pulumi-host";
import { type TestService, withService } from "../helpers/service";

/**
 * State written by an earlier runpodkit, read by this one through Pulumi's own provider host. Earlier
 * outputs lack the keys later versions added; the read path must bring them up to date, since a stack
 * that sees no change is never updated and a refresh is the only call that rewrites its outputs.
 */

let service: TestService;
let owner: DynamicProviderHost;
let stranger: DynamicProviderHost;
let text: string;
let rest: RestClient;

async function configured(apiKey: string): Promise<DynamicProviderHost> {
  const host = await startCheckoutHost();
  await host.configure(stackConfig(service, apiKey));
  return host;
}

beforeAll(async () => {
  service = await withService({ clock: new ManualClock() });
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
  text = await serializeProvider(templateForwarder);
  [owner, stranger] = await Promise.all([configured(service.apiKey), configured(service.otherApiKey)]);
}, 120_000);

afterAll(async () => {
  await Promise.all([owner?.close(), stranger?.close(), rest?.close()]);
  await service?.close();
});

/** A template created by this version, its outputs as a version that kept no owner wrote them. */
async function createdBeforeOwners(name: string): Promise<{ urn: string; id: string; outputs: Props }> {
  const urn = dynamicUrn("Template", name);
  const news = { imageName: "img:1", __logicalName: name, __scope: "p/s", __provider: text };
  const checked = await owner.check(urn, {}, news);
  expect(checked.failures).toEqual([]);
  const created = await owner.create(urn, checked.inputs);
  expect(created.properties[ACCOUNT]).toBe(accountIdOf(service.apiKey));
  const { [ACCOUNT]: _kept, ...outputs } = created.properties;
  return { urn, id: created.id, outputs };
}

describe("state written before each resource recorded its account", () => {
  test("a refresh with the owner's key records the account, so another account's key is then refused", async () => {
    const t = await createdBeforeOwners("upgraded");
    const read = await owner.read(t.urn, t.id, t.outputs);
    expect(read.id).toBe(t.id);
    expect(read.properties[ACCOUNT]).toBe(accountIdOf(service.apiKey));
    // Nothing else changed: the refresh reports the account alone.
    const { [ACCOUNT]: _added, ...rest } = read.properties;
    expect(rest).toEqual(t.outputs);

    // A key of another account sees nothing: refused, not taken for "deleted" (the stack keeps it).
    await expect(stranger.read(t.urn, t.id, read.properties)).rejects.toThrow(
      `was created in account ${accountIdOf(service.apiKey)}, but the API key is one of account ${accountIdOf(service.otherApiKey)}`,
    );
    await expect(stranger.delete(t.urn, t.id, read.properties)).rejects.toThrow("runpodkit:apiKey");
    expect((await owner.read(t.urn, t.id, read.properties)).id).toBe(t.id);
    await owner.delete(t.urn, t.id, read.properties);
  });

  test("a resource refreshed with its account already recorded keeps it", async () => {
    const t = await createdBeforeOwners("recorded");
    const withOwner = { ...t.outputs, [ACCOUNT]: "acct-recorded-earlier" };
    expect((await owner.read(t.urn, t.id, withOwner)).properties[ACCOUNT]).toBe("acct-recorded-earlier");
    await owner.delete(t.urn, t.id, { ...t.outputs, [ACCOUNT]: accountIdOf(service.apiKey) });
  });
});

describe("a resource adopted without a name, its outputs written before the adopted name was recorded", () => {
  test("the next diff and update keep the name it had, and a refresh records it", async () => {
    const existing = await rest.templates.create({ name: "made-in-console", imageName: "img:1" });
    const urn = dynamicUrn("Template", "adopted");
    const program = { imageName: "img:1", adoptId: existing.id, __logicalName: "adopted", __scope: "p/s" };
    const checked = await owner.check(urn, {}, { ...program, __provider: text });
    const created = await owner.create(urn, checked.inputs);
    expect(created.properties).toMatchObject({ name: "made-in-console", [ADOPTED_NAME]: "made-in-console" });
    const { [ADOPTED_NAME]: _recorded, ...legacy } = created.properties;

    const next = await owner.check(urn, checked.inputs, { ...program, __provider: text });
    expect(next.inputs.name).not.toBe("made-in-console"); // the name check generated
    expect((await owner.diff(urn, existing.id, legacy, next.inputs)).changes).toBe("none");
    const changed = { ...next.inputs, imageName: "img:2" };
    const updated = await owner.update(urn, existing.id, legacy, changed);
    expect(updated.properties).toMatchObject({ name: "made-in-console", [ADOPTED_NAME]: "made-in-console" });
    expect((await rest.templates.get(existing.id)).name).toBe("made-in-console");
    expect((await owner.read(urn, existing.id, legacy)).properties[ADOPTED_NAME]).toBe("made-in-console");
    await owner.delete(urn, existing.id, updated.properties);
  });
});
