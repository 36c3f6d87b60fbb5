import { afterEach, beforeEach, describe, expect, test } from "vitest";
import type { ManagementApi, ProviderContext } from "../../provider/context";
import { createEndpointProvider, endpointSpec } from "../../provider/endpoint";
import { createNetworkVolumeProvider, networkVolumeSpec } from "../../provider/network-volume";
import { createPodProvider, podSpec } from "../../provider/pod";
import { checkAndCreate, generatedNameOf, type Harness, startHarness } from "./support";

/**
 * A create of a generated name beside a resource of that name that no stack holds: what an `up`
 * killed during that very create leaves (the provider learned no id, and the next up creates again).
 * Simulated by creating the resource out of band under the generated name.
 */

let h: Harness;
let warnings: string[];
let context: ProviderContext;
/** The inventory lists the provider made, by kind. */
let lists: Record<"endpoints" | "pods" | "volumes", number>;

beforeEach(async () => {
  h = await startHarness();
  warnings = [];
  context = {
    ...h.context,
    warn: (message) => {
      warnings.push(message);
    },
  };
  lists = { endpoints: 0, pods: 0, volumes: 0 };
  h.intercept(
    (api): ManagementApi => ({
      ...api,
      endpoints: {
        ...api.endpoints,
        list: () => {
          lists.endpoints++;
          return api.endpoints.list();
        },
      },
      pods: {
        ...api.pods,
        list: () => {
          lists.pods++;
          return api.pods.list();
        },
      },
      networkVolumes: {
        ...api.networkVolumes,
        listGraphql: () => {
          lists.volumes++;
          return api.networkVolumes.listGraphql();
        },
      },
    }),
  );
});
afterEach(async () => {
  await h.close();
});

describe("a create beside a leftover of its generated name", () => {
  test("Endpoint: warns naming the leftover's id and the adoptId, and creates its own (two now exist)", async () => {
    const templateId = (await h.rest.templates.create({ name: "w", imageName: "img:1", isServerless: true }))
      .id;
    const program = { templateId, workersMin: 1, workersMax: 2 };
    const name = generatedNameOf(endpointSpec, "api", program);
    const leftover = await h.graphql.saveEndpoint({ name, templateId, gpuIds: "AMPERE_16", workersMin: 1 });
    const made = await checkAndCreate(createEndpointProvider(context), "api", program);
    expect(made.outs.name).toBe(name);
    expect(made.id).not.toBe(leftover.id);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(
      `create endpoint ${name} (resource Endpoint "api"): an endpoint named "${name}" already exists in the account (id ${leftover.id}), and this create makes another.`,
    );
    expect(warnings[0]).toContain("killed while creating this resource");
    expect(warnings[0]).toContain(`adoptId: "${leftover.id}"`);
    expect(warnings[0]).not.toContain(h.settings.apiKey);
    const named = (await h.graphql.listEndpoints()).filter((e) => e.name === name).map((e) => e.id);
    expect(named.sort()).toEqual([leftover.id, made.id].sort());
  });

  test("Pod: warns naming every leftover of the name", async () => {
    const program = { imageName: "img:1", gpuTypeIds: ["NVIDIA GeForce RTX 4090" as const], gpuCount: 1 };
    const name = generatedNameOf(podSpec, "box", program);
    const first = await h.rest.pods.create({ name, ...program });
    const second = await h.rest.pods.create({ name, ...program });
    const made = await checkAndCreate(createPodProvider(context), "box", program);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      new RegExp(
        `2 pods named "${name}" already exist in the account \\(ids (${first.id}, ${second.id}|${second.id}, ${first.id})\\)`,
      ),
    );
    expect(warnings[0]).toMatch(new RegExp(`adoptId: "(${first.id}|${second.id})"`));
    expect([first.id, second.id]).not.toContain(made.id);
  });

  test("NetworkVolume: warns, and a second create of the kind in the same process lists nothing again", async () => {
    const program = { size: 10, dataCenterId: "EU-RO-1" as const };
    const name = generatedNameOf(networkVolumeSpec, "data", program);
    const leftover = await h.rest.networkVolumes.create({ name, ...program });
    const provider = createNetworkVolumeProvider(context);
    await checkAndCreate(provider, "data", program);
    await checkAndCreate(provider, "scratch", program);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(
      `a network volume named "${name}" already exists in the account (id ${leftover.id})`,
    );
    // Each create reads the volumes once for its outputs (storageType); the look adds one in all.
    expect(lists.volumes).toBe(3);
  });
});

describe("what the look costs, and when it says nothing", () => {
  test("no leftover: no warning; one list per kind and process, none for an explicit name or adoptId", async () => {
    const program = { imageName: "img:1", gpuTypeIds: ["NVIDIA GeForce RTX 4090" as const], gpuCount: 1 };
    const provider = createPodProvider(context);
    await checkAndCreate(provider, "named", { ...program, name: "mine" });
    expect(lists.pods).toBe(0);
    await checkAndCreate(provider, "a", program);
    await checkAndCreate(provider, "b", program);
    expect(lists.pods).toBe(1);
    expect(warnings).toEqual([]);
  });

  test("a name the program chose is not looked for, though one of it exists (another stack's, the console's)", async () => {
    const program = { imageName: "img:1", gpuTypeIds: ["NVIDIA GeForce RTX 4090" as const], gpuCount: 1 };
    const elsewhere = await h.rest.pods.create({ name: "shared", ...program });
    const made = await checkAndCreate(createPodProvider(context), "named", { ...program, name: "shared" });
    expect(made.id).not.toBe(elsewhere.id);
    expect(lists.pods).toBe(0);
    expect(warnings).toEqual([]);
  });

  test("the advice holds: with adoptId set to the leftover, the create takes it over and warns of nothing", async () => {
    const program = { size: 10, dataCenterId: "EU-RO-1" as const };
    const name = generatedNameOf(networkVolumeSpec, "data", program);
    const leftover = await h.rest.networkVolumes.create({ name, ...program });
    const made = await checkAndCreate(createNetworkVolumeProvider(context), "data", {
      ...program,
      adoptId: leftover.id,
    });
    expect(made.id).toBe(leftover.id);
    expect(warnings).toEqual([]);
    expect((await h.graphql.listNetworkVolumes()).filter((v) => v.name === name)).toHaveLength(1);
  });

  test("a forced replacement under the same generated name (replaceOnChanges) does not warn of its predecessor", async () => {
    const templateId = (await h.rest.templates.create({ name: "w", imageName: "img:1", isServerless: true }))
      .id;
    const program = { templateId, env: { A: "1" }, __replaceOnChanges: ["env"] };
    const first = await checkAndCreate(createEndpointProvider(context), "api", program);
    // The next up: another provider process, whose list holds the endpoint being replaced.
    const provider = createEndpointProvider(context);
    const changed = { ...program, env: { A: "2" } };
    const next = await provider.check(first.inputs, { ...first.inputs, env: { A: "2" } });
    const diff = await provider.diff(first.id, first.outs, next.inputs);
    expect(diff.replaces).toEqual(["env"]);
    const replacement = await checkAndCreate(provider, "api", changed);
    expect(replacement.outs.name).toBe(first.outs.name);
    expect(replacement.id).not.toBe(first.id);
    expect(warnings).toEqual([]);
    expect(lists.endpoints).toBe(2);
  });

  test("a context with no warning channel asks nothing more than before", async () => {
    const program = { size: 10, dataCenterId: "EU-RO-1" as const };
    const name = generatedNameOf(networkVolumeSpec, "data", program);
    await h.rest.networkVolumes.create({ name, ...program });
    await checkAndCreate(createNetworkVolumeProvider(h.context), "data", program);
    // Only the create's own read of its outputs (storageType).
    expect(lists.volumes).toBe(1);
  });
});
