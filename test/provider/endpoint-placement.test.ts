/**
 * Endpoint fields the official provider has and this one now does: volumes in several data centers
 * (networkVolumeIds), minCudaVersion and PRIORITY_FLASHBOOT — through the provider's methods to the
 * service's GraphQL saveEndpoint and back, and the service's own answers on both wires.
 */
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { inputFields } from "../../provider/check";
import { createEndpointProvider, endpointSpec } from "../../provider/endpoint";
import { createNetworkVolumeProvider } from "../../provider/network-volume";
import { checkAndCreate, type Harness, inputsOf, startHarness } from "./support";

let h: Harness;
let provider: ReturnType<typeof createEndpointProvider>;
let templateId: string;
let volumes: { ro: string; ks: string };

beforeEach(async () => {
  h = await startHarness({ deleteTimeoutMs: 5_000 });
  provider = createEndpointProvider(h.context);
  templateId = (await h.rest.templates.create({ name: "worker", imageName: "img:1", isServerless: true })).id;
  volumes = {
    ro: (await h.rest.networkVolumes.create({ name: "ro", size: 10, dataCenterId: "EU-RO-1" })).id,
    ks: (await h.rest.networkVolumes.create({ name: "ks", size: 10, dataCenterId: "US-KS-2" })).id,
  };
});
afterEach(async () => {
  await h.close();
});

const fields = inputFields(endpointSpec);

describe("Endpoint placement fields", () => {
  test("networkVolumeIds, minCudaVersion and PRIORITY_FLASHBOOT are saved, read back whole, and stable", async () => {
    const args = {
      templateId,
      gpuIds: "AMPERE_24",
      networkVolumeIds: [volumes.ro, volumes.ks],
      minCudaVersion: "12.4",
      flashBootType: "PRIORITY_FLASHBOOT",
    };
    const created = await checkAndCreate(provider, "api", args);
    expect(created.outs).toMatchObject({
      networkVolumeIds: [volumes.ro, volumes.ks],
      minCudaVersion: "12.4",
      flashBootType: "PRIORITY_FLASHBOOT",
    });
    const gql = await h.graphql.getEndpoint(created.id);
    expect(gql).toMatchObject({
      minCudaVersion: "12.4",
      flashBootType: "PRIORITY_FLASHBOOT",
      networkVolumeIds: [
        { networkVolumeId: volumes.ro, dataCenterId: "EU-RO-1" },
        { networkVolumeId: volumes.ks, dataCenterId: "US-KS-2" },
      ],
    });
    // REST shows the same endpoint: flashboot on, the volumes and the CUDA floor.
    expect(await h.rest.endpoints.get(created.id)).toMatchObject({
      flashboot: true,
      networkVolumeIds: [volumes.ro, volumes.ks],
      minCudaVersion: "12.4",
    });
    const next = await provider.check(inputsOf(created.outs, fields), { __logicalName: "api", ...args });
    expect((await provider.diff(created.id, created.outs, next.inputs)).changes).toBe(false);

    // Dropping them clears them (saveEndpoint is a full replace of what the program declares).
    const cleared = (
      await provider.check(created.inputs, { __logicalName: "api", templateId, gpuIds: "AMPERE_24" })
    ).inputs;
    const updated = await provider.update(created.id, created.outs, cleared);
    expect(updated.outs).toMatchObject({ networkVolumeIds: [], minCudaVersion: null, flashBootType: "OFF" });
    expect(await h.graphql.getEndpoint(created.id)).toMatchObject({
      networkVolumeIds: [],
      minCudaVersion: null,
    });
  });

  test("CPU instance ids: checked at preview (shape, flavor, CPU endpoints only), created on a CPU endpoint", async () => {
    const cases = [
      [
        { computeType: "CPU", instanceIds: ["banana"] },
        "instanceIds.0",
        /<flavor>-<vCPUs>-<memory GB>.*cpu3c, cpu3g/,
      ],
      [{ computeType: "CPU", instanceIds: ["cpu3c-2-4", "cpu9x-2-4"] }, "instanceIds.1", /e\.g\. cpu3c-2-4/],
      [{ instanceIds: ["cpu3c-2-4"] }, "instanceIds", /only for CPU endpoints \(set computeType: "CPU"\)/],
    ] as const;
    for (const [news, property, reason] of cases) {
      const checked = await provider.check({}, { __logicalName: "api", templateId, ...news });
      expect(checked.failures.map((f) => f.property)).toEqual([property]);
      expect(checked.failures[0]?.reason).toMatch(reason);
    }
    // Memory that does not fit the flavor passes the shape check; the service names it.
    await expect(
      checkAndCreate(provider, "api", { templateId, computeType: "CPU", instanceIds: ["cpu3g-2-4"] }),
    ).rejects.toThrow(/instanceIds: a cpu3g instance with 2 vCPUs has 8 GB, not 4/);
    const created = await checkAndCreate(provider, "api", {
      templateId,
      computeType: "CPU",
      instanceIds: ["cpu3g-2-8"],
    });
    expect(created.outs).toMatchObject({ computeType: "CPU", instanceIds: ["cpu3g-2-8"] });
    expect((await h.rest.endpoints.get(created.id)).gpuTypeIds).toEqual([]);
  });

  test("an unknown CUDA version or a missing volume is refused naming the field", async () => {
    const bad = await provider.check(
      {},
      { __logicalName: "api", templateId, gpuIds: "AMPERE_24", minCudaVersion: "9.9" },
    );
    expect(bad.failures.map((f) => f.property)).toEqual(["minCudaVersion"]);
    await expect(
      checkAndCreate(provider, "api", {
        templateId,
        gpuIds: "AMPERE_24",
        networkVolumeIds: ["no-such-volume"],
      }),
    ).rejects.toThrow(/networkVolume/);
  });

  test("a volume listed in networkVolumeIds is in use: its delete names the endpoint", async () => {
    await checkAndCreate(provider, "api", {
      templateId,
      gpuIds: "AMPERE_24",
      networkVolumeIds: [volumes.ks],
    });
    const volumeProvider = createNetworkVolumeProvider(h.context);
    const ks = await h.rest.networkVolumes.get(volumes.ks);
    await expect(volumeProvider.delete(volumes.ks, { ...ks, __autoNamed: false })).rejects.toThrow(
      /still used by endpoint/,
    );
  });
});
