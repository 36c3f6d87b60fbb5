import * as pulumi from "@pulumi/pulumi";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { getCpuFlavors, getDataCenters, getGpuTypes, getGpuTypesOutput } from "../../provider/lookups";
import type { GpuType } from "../../provider/public-types";
import { DATA_CENTER_IDS } from "../../sdk/schemas/common";
import { type TestService, withService } from "../helpers/service";

let service: TestService;
beforeAll(async () => {
  service = await withService();
});
afterAll(async () => {
  await service.close();
});

describe("lookup functions over the service's catalogue", () => {
  test("getGpuTypes: every type with prices, or only the ids asked for", async () => {
    const options = { apiKey: service.apiKey, graphqlUrl: service.graphqlUrl };
    const all = await getGpuTypes({}, options);
    expect(all.length).toBeGreaterThan(5);
    const rtx = all.find((t) => t.id === "NVIDIA GeForce RTX 4090");
    expect(rtx).toMatchObject({ displayName: expect.any(String), memoryInGb: 24 });
    expect(rtx?.securePrice).toBeGreaterThan(0);
    const some = await getGpuTypes({ ids: ["NVIDIA GeForce RTX 4090"] }, options);
    expect(some.map((t) => t.id)).toEqual(["NVIDIA GeForce RTX 4090"]);
  });

  test("getCpuFlavors and getDataCenters read the config from the environment when no option is given", async () => {
    const saved = { key: process.env.RUNPOD_API_KEY, url: process.env.RUNPODKIT_GRAPHQL_URL };
    process.env.RUNPOD_API_KEY = service.apiKey;
    process.env.RUNPODKIT_GRAPHQL_URL = service.graphqlUrl;
    try {
      const flavors = await getCpuFlavors();
      expect(flavors.map((f) => f.id)).toEqual(expect.arrayContaining(["cpu3c", "cpu5c"]));
      expect(await getCpuFlavors({ id: "cpu3g" })).toEqual([expect.objectContaining({ id: "cpu3g" })]);
      const centers = await getDataCenters();
      // The catalogue check validates against is the one the service serves.
      expect(centers.map((d) => d.id).sort()).toEqual([...DATA_CENTER_IDS].sort());
    } finally {
      for (const [name, value] of [
        ["RUNPOD_API_KEY", saved.key],
        ["RUNPODKIT_GRAPHQL_URL", saved.url],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  test("a wrong key fails with the operation named and the key nowhere in the message", async () => {
    const failure = getGpuTypes({}, { apiKey: "rpk_wrong_key_123456", graphqlUrl: service.graphqlUrl });
    await expect(failure).rejects.toMatchObject({ code: "UNAUTHORIZED" });
    await expect(failure).rejects.toThrow(/graphql\.gpuTypes/);
    const message = await failure.catch((e: Error) => e.message);
    expect(message.includes("rpk_wrong_key_123456")).toBe(false);
  });

  test("getGpuTypesOutput resolves to the same list", async () => {
    const output = getGpuTypesOutput(
      { ids: ["NVIDIA GeForce RTX 4090"] },
      {
        apiKey: service.apiKey,
        graphqlUrl: service.graphqlUrl,
      },
    );
    const value = await new Promise((resolve) => output.apply(resolve));
    expect((value as { id: string }[]).map((t) => t.id)).toEqual(["NVIDIA GeForce RTX 4090"]);
  });

  test("getGpuTypesOutput takes an Output for each id or for the list, as Pulumi's Output-form invokes do", async () => {
    const options = { apiKey: service.apiKey, graphqlUrl: service.graphqlUrl };
    // An id from another resource's output, and a whole list computed from one (tsc checks the types).
    const ids: pulumi.Input<string>[] = [pulumi.output("NVIDIA GeForce RTX 4090"), "NVIDIA RTX A6000"];
    const each = getGpuTypesOutput({ ids }, options);
    const list = getGpuTypesOutput({ ids: pulumi.output("NVIDIA RTX A6000").apply((id) => [id]) }, options);
    const read = (output: pulumi.Output<GpuType[]>) =>
      new Promise<string[]>((resolve) => output.apply((types) => resolve(types.map((t) => t.id ?? ""))));
    expect((await read(each)).sort()).toEqual(["NVIDIA GeForce RTX 4090", "NVIDIA RTX A6000"]);
    expect(await read(list)).toEqual(["NVIDIA RTX A6000"]);
  });
});
