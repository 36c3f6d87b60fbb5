import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { APPLIED } from "../../provider/bookkeeping";
import { containerRegistryAuthForwarder } from "../../provider/container-registry-auth";
import { endpointForwarder } from "../../provider/endpoint";
import { networkVolumeForwarder } from "../../provider/network-volume";
import { templateForwarder } from "../../provider/template";
import { RestClient } from "../../sdk/rest";
import { ManualClock } from "../../service/clock";
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
 * Every resource kind's name in the spelling the service stores (trimmed, composed), through Pulumi's
 * real provider host: a stack that applied " café " (a decomposed accent) with an earlier version,
 * which sent and recorded the name as written, sees no diff and no replacement.
 */

/** " café " with "e" and a combining accent (NFD), and surrounding spaces. */
const WRITTEN = " cafe\u0301 ";
const STORED = "caf\u00e9";

let service: TestService;
let host: DynamicProviderHost;
let rest: RestClient;
let templateId: string;

beforeAll(async () => {
  service = await withService({ clock: new ManualClock() });
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
  host = await startCheckoutHost();
  await host.configure(stackConfig(service, service.apiKey));
  templateId = (await rest.templates.create({ name: "names-tpl", imageName: "img:1", isServerless: true }))
    .id;
}, 120_000);

afterAll(async () => {
  await Promise.all([host?.close(), rest?.close()]);
  await service?.close();
});

const kinds = [
  { type: "Endpoint", forwarder: endpointForwarder, program: () => ({ templateId, gpuIds: "ADA_24" }) },
  {
    type: "NetworkVolume",
    forwarder: networkVolumeForwarder,
    program: () => ({ size: 10, dataCenterId: "US-KS-2" }),
  },
  {
    type: "ContainerRegistryAuth",
    forwarder: containerRegistryAuthForwarder,
    program: () => ({ username: "u", password: "p" }),
  },
  { type: "Template", forwarder: templateForwarder, program: () => ({ imageName: "img:1" }) },
] as const;

describe.each(kinds)("a $type named with surrounding spaces and a decomposed accent", (kind) => {
  test("is created under the stored spelling; a stack that applied the written one sees no diff", async () => {
    const text = await serializeProvider(kind.forwarder);
    const urn = dynamicUrn(kind.type, `names-${kind.type}`);
    const program = { ...kind.program(), name: WRITTEN, __logicalName: `names-${kind.type}`, __scope: "p/s" };
    const checked = await host.check(urn, {}, { ...program, __provider: text });
    expect(checked.failures).toEqual([]);
    expect(checked.inputs.name).toBe(STORED);
    const created = await host.create(urn, checked.inputs);
    expect(created.properties.name).toBe(STORED);

    // The state an earlier version wrote: the name as written, in the outputs and the applied inputs.
    const applied = created.properties[APPLIED] as Props;
    const legacy: Props = { ...created.properties, name: WRITTEN, [APPLIED]: { ...applied, name: WRITTEN } };
    const legacyInputs: Props = { ...checked.inputs, name: WRITTEN };
    const next = await host.check(urn, legacyInputs, { ...program, __provider: text });
    expect(next.inputs.name).toBe(STORED);
    const diff = await host.diff(urn, created.id, legacy, next.inputs, legacyInputs);
    expect([diff.changes, diff.replaces]).toEqual(["none", []]);
    await host.delete(urn, created.id, created.properties);
  });
});

describe("a unique name taken in the other spelling", () => {
  test("a registry auth named with a decomposed accent is refused naming the one of the composed name", async () => {
    const holder = await rest.containerRegistryAuths.create({
      name: "r\u00e9g",
      username: "u",
      password: "p",
    });
    const text = await serializeProvider(containerRegistryAuthForwarder);
    const urn = dynamicUrn("ContainerRegistryAuth", "taken");
    const checked = await host.check(
      urn,
      {},
      {
        name: "re\u0301g",
        username: "u",
        password: "p",
        __logicalName: "taken",
        __scope: "p/s",
        __provider: text,
      },
    );
    await expect(host.create(urn, checked.inputs)).rejects.toThrow(`already exists (id ${holder.id})`);
    expect(
      (await rest.containerRegistryAuths.list()).filter(
        (a: { name: string }) => a.name.normalize("NFC") === "r\u00e9g",
      ),
    ).toHaveLength(1);
  });
});

describe("adoption", () => {
  test("a registry auth adopted under its name in the other spelling is taken over, not refused as a rename", async () => {
    const existing = await rest.containerRegistryAuths.create({
      name: "adopt-\u00e9",
      username: "u",
      password: "p",
    });
    const text = await serializeProvider(containerRegistryAuthForwarder);
    const urn = dynamicUrn("ContainerRegistryAuth", "adopted");
    const program = {
      name: " adopt-e\u0301",
      username: "u",
      password: "p",
      adoptId: existing.id,
      __logicalName: "adopted",
      __scope: "p/s",
    };
    const checked = await host.check(urn, {}, { ...program, __provider: text });
    expect(checked.failures).toEqual([]);
    const created = await host.create(urn, checked.inputs);
    expect([created.id, created.properties.name]).toEqual([existing.id, "adopt-\u00e9"]);
  });
});
