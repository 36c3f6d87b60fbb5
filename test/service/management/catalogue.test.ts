import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CpuFlavor, DataCenter, GpuType } from "../../../sdk/schemas/catalogue";
import { DATA_CENTER_IDS, GPU_TYPE_IDS } from "../../../sdk/schemas/common";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "./client";

let service: TestService;
let api: ReturnType<typeof clients>;

beforeAll(async () => {
  service = await withService();
  api = clients(service);
});
afterAll(() => service.close());

/** Documents with the selections the official Pulumi provider sends for its lookups. */
describe("GraphQL catalogue: gpuTypes, cpuFlavors, dataCenters", () => {
  it("gpuTypes(input) with variables: all, by ids, and lowestPrice for one GPU", async () => {
    const query = `query GetGpuTypes($input: GpuTypeFilter) {
      gpuTypes(input: $input) {
        id displayName memoryInGb secureCloud communityCloud securePrice communityPrice maxGpuCount
        lowestPrice(input: {gpuCount: 1}) { minimumBidPrice uninterruptablePrice rentedCount totalCount stockStatus }
      }
    }`;
    const all = await api.gql<{ gpuTypes: unknown[] }>(query);
    expect(all.body.errors).toBeUndefined();
    const types = all.body.data.gpuTypes.map((t) => GpuType.parse(t));
    expect(types.map((t) => t.id)).toEqual([...GPU_TYPE_IDS]);
    for (const t of types) {
      expect(t.secureCloud || t.communityCloud).toBe(true);
      expect(t.lowestPrice?.uninterruptablePrice).toBe(
        Math.min(...[t.securePrice, t.communityPrice].filter((p): p is number => typeof p === "number")),
      );
    }
    const some = await api.gql<{ gpuTypes: { id: string }[] }>(query, {
      input: { ids: ["NVIDIA L4", "NVIDIA B200", "nope"] },
    });
    expect(some.body.data.gpuTypes.map((t) => t.id)).toEqual(["NVIDIA L4", "NVIDIA B200"]);
  });

  it("refuses a lowestPrice input without gpuCount (non-null in the schema)", async () => {
    const reply = await api.gql(
      `{ gpuTypes { id lowestPrice(input: {secureCloud: true}) { stockStatus } } }`,
    );
    expect(reply.body.errors?.[0]?.message).toMatch(/gpuCount/);
  });

  it("cpuFlavors: every flavor with its vCPU range and memory ratio; filter by id", async () => {
    const query = `query GetCpuFlavors($input: CpuFlavorInput) {
      cpuFlavors(input: $input) { id groupId groupName displayName minVcpu maxVcpu vcpuBurstable ramMultiplier diskLimitPerVcpu }
    }`;
    const all = await api.gql<{ cpuFlavors: unknown[] }>(query);
    const flavors = all.body.data.cpuFlavors.map((f) => CpuFlavor.parse(f));
    expect(flavors.map((f) => [f.id, f.ramMultiplier])).toEqual([
      ["cpu3c", 2],
      ["cpu3g", 4],
      ["cpu5c", 2],
      ["cpu5g", 4],
    ]);
    expect(flavors[0]).toMatchObject({ minVcpu: 2, maxVcpu: 32, vcpuBurstable: false, diskLimitPerVcpu: 10 });
    const one = await api.gql<{ cpuFlavors: { id: string }[] }>(query, { input: { id: "cpu5g" } });
    expect(one.body.data.cpuFlavors).toEqual([
      expect.objectContaining({ id: "cpu5g", groupName: "General Purpose" }),
    ]);
  });

  it("dataCenters: the ids volumes and endpoints accept, with region and GPU availability", async () => {
    const reply = await api.gql<{ dataCenters: unknown[] }>(`query GetDataCenters {
      dataCenters {
        id name location listed storageSupport globalNetwork region compliance
        gpuAvailability { gpuTypeId gpuTypeDisplayName available stockStatus }
      }
    }`);
    expect(reply.body.errors).toBeUndefined();
    const centers = reply.body.data.dataCenters.map((d) => DataCenter.parse(d));
    expect(centers.map((d) => d.id)).toEqual([...DATA_CENTER_IDS]);
    expect(centers.find((d) => d.id === "EU-RO-1")).toMatchObject({
      location: "Romania",
      region: "EUROPE",
      compliance: ["GDPR"],
      storageSupport: true,
    });
    expect(centers.find((d) => d.id === "US-TX-3")).toMatchObject({
      region: "NORTH_AMERICA",
      compliance: [],
    });
    expect(centers[0]?.gpuAvailability).toContainEqual({
      gpuTypeId: "NVIDIA GeForce RTX 4090",
      gpuTypeDisplayName: "RTX 4090",
      available: true,
      stockStatus: "High",
    });
    const eight = await api.gql<{
      dataCenters: { gpuAvailability: { gpuTypeId: string; available: boolean }[] }[];
    }>(`{ dataCenters { gpuAvailability(input: {gpuCount: 8}) { gpuTypeId available } } }`);
    const first = eight.body.data.dataCenters[0]?.gpuAvailability ?? [];
    expect(first.find((g) => g.gpuTypeId === "Tesla T4")?.available).toBe(false);
    expect(first.find((g) => g.gpuTypeId === "NVIDIA A40")?.available).toBe(true);
  });
});
