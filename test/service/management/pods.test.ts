import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BillingRecords } from "../../../sdk/schemas/billing";
import type { ErrorBody } from "../../../sdk/schemas/common";
import { DATA_CENTER_IDS, GPU_TYPE_IDS } from "../../../sdk/schemas/defaults";
import { GqlPod, type Pod } from "../../../sdk/schemas/pod";
import { ManualClock } from "../../../service/clock";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "./client";

/*
 * Rented pods: REST and GraphQL over one state machine (desiredStatus), references checked like the
 * other resources, in-use refusals, and billing of running periods on the service clock.
 */

const HOUR = 3_600_000;
/** The countries of the catalogue's data centers, as errors list them. */
const COUNTRIES = "AU, CA, CZ, FR, IS, JP, NL, NO, RO, SE, US";
let service: TestService;
let api: ReturnType<typeof clients>;
let clock: ManualClock;

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 2, 2, 0, 0, 0));
  service = await withService({ clock });
  api = clients(service);
});
afterAll(() => service.close());

async function ok<T = Pod>(method: string, path: string, body?: unknown, status = 200): Promise<T> {
  const reply = await api.rest<T>(method, path, body);
  expect(reply.status, reply.text).toBe(status);
  return reply.body;
}

async function refused(method: string, path: string, body: unknown, message: RegExp) {
  const reply = await api.rest<ErrorBody>(method, path, body);
  expect(reply.status, reply.text).toBe(400);
  expect(reply.body.message).toMatch(message);
}

const POD_FIELDS = `id name machineId imageName dockerArgs gpuCount vcpuCount memoryInGb containerDiskInGb volumeInGb
  volumeMountPath desiredStatus costPerHr env ports templateId networkVolumeId containerRegistryAuthId podType
  lastStatusChange uptimeSeconds`;

async function gql<T>(query: string, variables?: Record<string, unknown>): Promise<T> {
  const reply = await api.gql<T>(query, variables);
  expect(reply.body.errors, JSON.stringify(reply.body.errors)).toBeUndefined();
  return reply.body.data;
}

async function gqlError(query: string, variables?: Record<string, unknown>) {
  const reply = await api.gql(query, variables);
  expect(reply.status).toBe(200);
  return reply.body.errors?.[0];
}

describe("REST pods", () => {
  it("creates a GPU pod RUNNING at the offer's price; get and list show it; workers only on request", async () => {
    const pod = await ok("POST", "/pods", {
      name: "trainer",
      imageName: "repo/train:1",
      gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
      gpuCount: 2,
      cloudType: "COMMUNITY",
      env: { A: "1" },
      ports: ["8888/http"],
      dataCenterIds: ["US-TX-3"],
    });
    expect(pod).toMatchObject({
      name: "trainer",
      desiredStatus: "RUNNING",
      image: "repo/train:1",
      gpu: { id: "NVIDIA GeForce RTX 4090", count: 2, displayName: "RTX 4090" },
      costPerHr: 0.68,
      env: { A: "1" },
      ports: ["8888/http"],
      containerDiskInGb: 50,
      volumeInGb: 20,
      volumeMountPath: "/workspace",
      vcpuCount: 4,
      memoryInGb: 16,
      machine: { dataCenterId: "US-TX-3", gpuTypeId: "NVIDIA GeForce RTX 4090" },
      lastStartedAt: new Date(clock.now()).toISOString(),
      locked: false,
      interruptible: false,
      publicIp: "",
    });
    expect(pod.endpointId).toBeUndefined();
    expect(await ok("GET", `/pods/${pod.id}`)).toEqual(pod);
    expect((await ok<Pod[]>("GET", "/pods")).map((p) => p.id)).toContain(pod.id);
    expect(await ok<Pod[]>("GET", "/pods?computeType=CPU")).toEqual([]);
    expect(await ok<Pod[]>("GET", `/pods?desiredStatus=EXITED`)).toEqual([]);
    // Another account sees nothing of it.
    expect((await api.rest("GET", `/pods/${pod.id}`, undefined, service.otherApiKey)).status).toBe(404);
    await ok("DELETE", `/pods/${pod.id}`, undefined, 204);
  });

  it("creates a CPU pod from flavors and vCPUs; refuses unknown GPU types and unoffered counts", async () => {
    const cpu = await ok("POST", "/pods", {
      computeType: "CPU",
      imageName: "repo/cpu:1",
      cpuFlavorIds: ["cpu3g"],
      vcpuCount: 4,
      containerDiskInGb: 20,
    });
    expect(cpu).toMatchObject({
      cpuFlavorId: "cpu3g",
      vcpuCount: 4,
      memoryInGb: 16,
      costPerHr: 0.16,
      gpu: null,
    });
    expect(cpu.name).toBe("my pod");
    await refused("POST", "/pods", { computeType: "CPU", imageName: "x", vcpuCount: 3 }, /vCPUs/);
    await refused(
      "POST",
      "/pods",
      { computeType: "CPU", imageName: "x", vcpuCount: 2, containerDiskInGb: 500 },
      /^containerDiskInGb: .*at most 20 GB/,
    );
    await refused(
      "POST",
      "/pods",
      { imageName: "x", gpuTypeIds: ["NVIDIA A40"], cloudType: "COMMUNITY" },
      /^gpuTypeIds: none of NVIDIA A40 is offered/,
    );
    await refused(
      "POST",
      "/pods",
      { imageName: "x", gpuTypeIds: ["Tesla T4"], gpuCount: 5 },
      /^gpuTypeIds: /,
    );
    await refused("POST", "/pods", { gpuTypeIds: ["NVIDIA L4"] }, /^imageName: /);
    await ok("DELETE", `/pods/${cpu.id}`, undefined, 204);
  });

  it("names the fields each wire sent (REST gpuTypeIds, dataCenterIds, countryCodes; GraphQL singular) and lists allowed values", async () => {
    const rest = async (body: object) =>
      (await api.rest<ErrorBody>("POST", "/pods", { imageName: "x", ...body })).body;
    expect(await rest({})).toMatchObject({
      field: "gpuTypeIds",
      message: "gpuTypeIds: a GPU pod needs a GPU type",
    });
    expect(await rest({ gpuTypeIds: ["NVIDIA B200"], gpuCount: 9 })).toMatchObject({ field: "gpuTypeIds" });
    expect(
      await rest({ gpuTypeIds: ["NVIDIA A40"], countryCodes: ["JP"], dataCenterIds: ["EU-RO-1"] }),
    ).toMatchObject({
      field: "countryCodes",
      message: `countryCodes: no data center in JP among EU-RO-1; data centers are in ${COUNTRIES}`,
    });
    const deploy = (input: string) =>
      gqlError(
        `mutation { podFindAndDeployOnDemand(input: {imageName: "x", gpuCount: 1, ${input}}) { id } }`,
      );
    expect(await deploy('gpuTypeId: "NVIDIA FOO"')).toMatchObject({
      message: `gpuTypeId: unknown GPU type "NVIDIA FOO"; expected one of ${GPU_TYPE_IDS.join(", ")}`,
      extensions: { code: "VALIDATION", field: "gpuTypeId" },
    });
    expect(await deploy('gpuTypeId: "NVIDIA A40", dataCenterId: "XX-1"')).toMatchObject({
      message: `dataCenterId: unknown data center "XX-1"; expected one of ${DATA_CENTER_IDS.join(", ")}`,
      extensions: { field: "dataCenterId" },
    });
    expect(await deploy('gpuTypeId: "NVIDIA A40", countryCode: "ZZ"')).toMatchObject({
      message: `countryCode: no data center in ZZ; data centers are in ${COUNTRIES}`,
      extensions: { field: "countryCode" },
    });
  });

  it("refuses an update of a field only create takes as not updatable, naming it (PATCH and POST /update)", async () => {
    const pod = await ok("POST", "/pods", { name: "fixed", imageName: "x", gpuTypeIds: ["NVIDIA A40"] });
    for (const [path, method] of [
      [`/pods/${pod.id}`, "PATCH"],
      [`/pods/${pod.id}/update`, "POST"],
    ] as const) {
      for (const [field, value] of [
        ["gpuTypeIds", ["NVIDIA L4"]],
        ["gpuCount", 2],
        ["dataCenterIds", ["EU-CZ-1"]],
        ["computeType", "CPU"],
        ["templateId", "t"],
      ] as const) {
        const reply = await api.rest<ErrorBody>(method, path, { name: "renamed", [field]: value });
        expect(reply.status).toBe(400);
        expect(reply.body).toMatchObject({
          code: "VALIDATION",
          field,
          message: `${field}: is not updatable; it is chosen when the pod is created; create a new pod instead`,
        });
      }
    }
    // Nothing changed; an unknown key is still refused as such.
    expect((await ok("GET", `/pods/${pod.id}`)).name).toBe("fixed");
    const unknown = await api.rest<ErrorBody>("PATCH", `/pods/${pod.id}`, { banana: 1 });
    expect(unknown.body.message).toBe('Unrecognized key: "banana"');
    await ok("DELETE", `/pods/${pod.id}`, undefined, 204);
  });

  it("filters by gpuTypeId, dataCenterId and cpuFlavorId, one value or several (repeated)", async () => {
    const a40 = await ok("POST", "/pods", {
      imageName: "f",
      gpuTypeIds: ["NVIDIA A40"],
      dataCenterIds: ["EU-RO-1"],
    });
    const l4 = await ok("POST", "/pods", {
      imageName: "f",
      gpuTypeIds: ["NVIDIA L4"],
      dataCenterIds: ["US-TX-3"],
    });
    const cpu = await ok("POST", "/pods", {
      computeType: "CPU",
      imageName: "f",
      cpuFlavorIds: ["cpu5c"],
      vcpuCount: 2,
      containerDiskInGb: 10,
      dataCenterIds: ["EU-CZ-1"],
    });
    const mine = [a40.id, l4.id, cpu.id];
    const listed = async (query: string) =>
      (await ok<Pod[]>("GET", `/pods?${query}`))
        .map((p) => p.id)
        .filter((id) => mine.includes(id))
        .sort();
    expect(await listed("gpuTypeId=NVIDIA%20A40")).toEqual([a40.id]);
    expect(await listed("gpuTypeId=NVIDIA%20A40&gpuTypeId=NVIDIA%20L4")).toEqual([a40.id, l4.id].sort());
    expect(await listed("dataCenterId=US-TX-3")).toEqual([l4.id]);
    expect(await listed("dataCenterId=EU-CZ-1&dataCenterId=EU-RO-1")).toEqual([a40.id, cpu.id].sort());
    expect(await listed("cpuFlavorId=cpu5c")).toEqual([cpu.id]);
    expect(await listed("cpuFlavorId=cpu3c&cpuFlavorId=cpu3g")).toEqual([]);
    expect(await listed("gpuTypeId=NVIDIA%20L4&dataCenterId=EU-RO-1")).toEqual([]);
    await refused("GET", "/pods?gpuTypeId=NVIDIA%20GTX%209999", undefined, /^gpuTypeId: /);
    await refused("GET", "/pods?dataCenterId=MARS-1", undefined, /^dataCenterId: /);
    for (const id of mine) await ok("DELETE", `/pods/${id}`, undefined, 204);
  });

  it("includeNetworkVolume, includeMachine and includeSavingsPlans add what the OpenAPI describes", async () => {
    const volume = await ok<{ id: string }>("POST", "/networkvolumes", {
      name: "inc",
      size: 15,
      dataCenterId: "US-TX-3",
    });
    const gpu = await ok("POST", "/pods", {
      imageName: "inc",
      gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
      gpuCount: 2,
      cloudType: "COMMUNITY",
      networkVolumeId: volume.id,
    });
    const plain = await ok("GET", `/pods/${gpu.id}`);
    expect(plain).not.toHaveProperty("networkVolume");
    expect(plain).not.toHaveProperty("savingsPlans");
    expect(plain.machine).toEqual({ dataCenterId: "US-TX-3", gpuTypeId: "NVIDIA GeForce RTX 4090" });
    const full = await ok(
      "GET",
      `/pods/${gpu.id}?includeNetworkVolume=true&includeMachine=true&includeSavingsPlans=true`,
    );
    expect(full.networkVolume).toEqual({ id: volume.id, name: "inc", size: 15, dataCenterId: "US-TX-3" });
    expect(full.savingsPlans).toEqual([]);
    expect(full.machine).toEqual({
      dataCenterId: "US-TX-3",
      gpuTypeId: "NVIDIA GeForce RTX 4090",
      location: "United States (Texas)",
      secureCloud: false,
      supportPublicIp: expect.any(Boolean),
      costPerHr: 0.68,
      currentPricePerGpu: 0.34,
      minPodGpuCount: 1,
      gpuDisplayName: "RTX 4090",
      gpuType: {
        id: "NVIDIA GeForce RTX 4090",
        count: 2,
        displayName: "RTX 4090",
        securePrice: expect.any(Number),
        communityPrice: 0.34,
      },
    });
    // The list form says the same; a pod without a volume has no networkVolume.
    const cpu = await ok("POST", "/pods", {
      computeType: "CPU",
      imageName: "inc",
      cpuFlavorIds: ["cpu3g"],
      vcpuCount: 4,
      containerDiskInGb: 20,
    });
    const list = await ok<Pod[]>("GET", "/pods?includeNetworkVolume=true&includeMachine=true");
    expect(list.find((p) => p.id === gpu.id)?.networkVolume).toEqual(full.networkVolume);
    const cpuListed = list.find((p) => p.id === cpu.id);
    expect(cpuListed).not.toHaveProperty("networkVolume");
    expect(cpuListed?.machine).toMatchObject({
      cpuTypeId: "cpu3g",
      cpuCount: 4,
      cpuType: { id: "cpu3g", displayName: "3rd gen, general", groupId: "cpu3g" },
      costPerHr: 0.16,
    });
    for (const id of [gpu.id, cpu.id]) await ok("DELETE", `/pods/${id}`, undefined, 204);
    await ok("DELETE", `/networkvolumes/${volume.id}`, undefined, 204);
  });

  it("follows the state machine: stop, start, restart only when running, reset, lock, update, terminate", async () => {
    const pod = await ok("POST", "/pods", {
      imageName: "repo/app:1",
      gpuTypeIds: ["NVIDIA L4"],
      volumeInGb: 30,
    });
    const started = pod.lastStartedAt;
    await clock.advance(60_000);
    const stopped = await ok("POST", `/pods/${pod.id}/stop`);
    expect(stopped).toMatchObject({ desiredStatus: "EXITED", lastStartedAt: started });
    expect(stopped.lastStatusChange).toMatch(/^Stopped by user/);
    expect(await ok("POST", `/pods/${pod.id}/stop`)).toMatchObject({ desiredStatus: "EXITED" });
    await refused("POST", `/pods/${pod.id}/restart`, undefined, /only a running pod restarts/);
    await clock.advance(60_000);
    const resumed = await ok("POST", `/pods/${pod.id}/start`);
    expect(resumed).toMatchObject({
      desiredStatus: "RUNNING",
      lastStartedAt: new Date(clock.now()).toISOString(),
    });
    await clock.advance(60_000);
    const restarted = await ok("POST", `/pods/${pod.id}/restart`);
    expect(restarted.lastStartedAt).toBe(new Date(clock.now()).toISOString());
    expect(restarted.lastStatusChange).toMatch(/^Restarted by user/);

    // Locked: no stop, no reset, no runtime change; name and unlock still apply.
    expect(await ok("PATCH", `/pods/${pod.id}`, { locked: true, name: "kept" })).toMatchObject({
      locked: true,
      name: "kept",
    });
    await refused("POST", `/pods/${pod.id}/stop`, undefined, /locked/);
    await refused("POST", `/pods/${pod.id}/reset`, undefined, /locked/);
    await refused("PATCH", `/pods/${pod.id}`, { imageName: "repo/app:2" }, /locked/);
    await ok("POST", `/pods/${pod.id}/update`, { locked: false });

    // An image change is a reset: the running pod starts again now.
    await clock.advance(60_000);
    const updated = await ok("PATCH", `/pods/${pod.id}`, { imageName: "repo/app:2", env: { B: "2" } });
    expect(updated).toMatchObject({ image: "repo/app:2", env: { B: "2" }, desiredStatus: "RUNNING" });
    expect(updated.lastStartedAt).toBe(new Date(clock.now()).toISOString());
    expect(updated.lastStatusChange).toMatch(/^Reset by update/);
    await refused("PATCH", `/pods/${pod.id}`, { volumeInGb: 10 }, /^volumeInGb: a pod volume can only grow/);
    expect(await ok("PATCH", `/pods/${pod.id}`, { volumeInGb: 40 })).toMatchObject({ volumeInGb: 40 });

    // Reset starts a stopped pod.
    await ok("POST", `/pods/${pod.id}/stop`);
    expect(await ok("POST", `/pods/${pod.id}/reset`)).toMatchObject({ desiredStatus: "RUNNING" });

    await ok("DELETE", `/pods/${pod.id}`, undefined, 204);
    expect((await api.rest("GET", `/pods/${pod.id}`)).status).toBe(404);
    expect((await api.rest("POST", `/pods/${pod.id}/start`)).status).toBe(404);
    expect((await api.rest("DELETE", `/pods/${pod.id}`)).status).toBe(404);
  });
});

describe("pod references", () => {
  it("checks template, network volume (data center) and registry auth like other resources", async () => {
    const volume = await ok<{ id: string }>("POST", "/networkvolumes", {
      name: "pod-data",
      size: 10,
      dataCenterId: "EU-RO-1",
    });
    const auth = await ok<{ id: string }>("POST", "/containerregistryauth", {
      name: "pod-registry",
      username: "u",
      password: "p",
    });
    const template = await ok<{ id: string }>("POST", "/templates", {
      name: "pod-template",
      imageName: "repo/from-template:1",
      env: { FROM: "template", SHARED: "template" },
      ports: ["7860/http"],
      containerRegistryAuthId: auth.id,
    });

    await refused(
      "POST",
      "/pods",
      { gpuTypeIds: ["NVIDIA L4"], templateId: "nope" },
      /^templateId: template nope/,
    );
    await refused(
      "POST",
      "/pods",
      { imageName: "x", gpuTypeIds: ["NVIDIA L4"], networkVolumeId: "nope" },
      /^networkVolumeId: network volume nope not found/,
    );
    await refused(
      "POST",
      "/pods",
      { imageName: "x", gpuTypeIds: ["NVIDIA L4"], networkVolumeId: volume.id, dataCenterIds: ["US-TX-3"] },
      /^networkVolumeId: network volume .* is in EU-RO-1/,
    );
    await refused(
      "POST",
      "/pods",
      { imageName: "x", gpuTypeIds: ["NVIDIA L4"], containerRegistryAuthId: "nope" },
      /^containerRegistryAuthId: /,
    );
    // Another account's volume reads as missing.
    const foreign = await api.rest<ErrorBody>(
      "POST",
      "/pods",
      { imageName: "x", gpuTypeIds: ["NVIDIA L4"], networkVolumeId: volume.id },
      service.otherApiKey,
    );
    expect(foreign.status).toBe(400);
    expect(foreign.body.message).toMatch(/not found/);

    const pod = await ok("POST", "/pods", {
      gpuTypeIds: ["NVIDIA L4"],
      templateId: template.id,
      networkVolumeId: volume.id,
      env: { SHARED: "pod" },
    });
    expect(pod).toMatchObject({
      image: "repo/from-template:1",
      env: { FROM: "template", SHARED: "pod" },
      ports: ["7860/http"],
      templateId: template.id,
      networkVolumeId: volume.id,
      containerRegistryAuthId: auth.id,
      machine: { dataCenterId: "EU-RO-1" },
    });

    for (const [path, message] of [
      [`/networkvolumes/${volume.id}`, /attached to pod\(s\) /],
      [`/containerregistryauth/${auth.id}`, /used by template\(s\) /],
      [`/templates/${template.id}`, /used by pod\(s\) /],
    ] as const) {
      const reply = await api.rest<ErrorBody>("DELETE", path);
      expect(reply.status).toBe(400);
      expect(reply.body.message).toMatch(message);
    }
    // The registry auth is held by the pod too once the template lets go of it.
    await ok("PATCH", `/templates/${template.id}`, { containerRegistryAuthId: null });
    const authInUse = await api.rest<ErrorBody>("DELETE", `/containerregistryauth/${auth.id}`);
    expect(authInUse.body.message).toMatch(/used by pod\(s\) /);

    await ok("DELETE", `/pods/${pod.id}`, undefined, 204);
    await ok("DELETE", `/templates/${template.id}`, undefined, 204);
    await ok("DELETE", `/containerregistryauth/${auth.id}`, undefined, 204);
    await ok("DELETE", `/networkvolumes/${volume.id}`, undefined, 204);
  });
});

describe("GraphQL pods", () => {
  it("deploys, reads, stops, resumes with another gpuCount, restarts, resets, edits and terminates", async () => {
    const { podFindAndDeployOnDemand: created } = await gql<{ podFindAndDeployOnDemand: GqlPod }>(
      `mutation Deploy($input: PodFindAndDeployOnDemandInput) { podFindAndDeployOnDemand(input: $input) { ${POD_FIELDS} } }`,
      {
        input: {
          name: "gql-pod",
          imageName: "repo/gql:1",
          gpuTypeIdList: ["NVIDIA A40", "NVIDIA RTX A6000"],
          cloudType: "COMMUNITY",
          gpuCount: 1,
          dockerArgs: "python -u serve.py",
          env: [{ key: "K", value: "v" }],
          ports: "8888/http,22/tcp",
          volumeInGb: 5,
        },
      },
    );
    expect(GqlPod.parse(created)).toMatchObject({
      name: "gql-pod",
      imageName: "repo/gql:1",
      dockerArgs: "python -u serve.py",
      gpuCount: 1,
      desiredStatus: "RUNNING",
      costPerHr: 0.33,
      env: ["K=v"],
      ports: "8888/http,22/tcp",
      volumeInGb: 5,
      podType: "RESERVED",
      uptimeSeconds: 0,
    });
    await clock.advance(90_000);
    const podQuery = `query($input: PodFilter) { pod(input: $input) { id desiredStatus uptimeSeconds runtime { uptimeInSeconds ports { privatePort } } machine { podHostId gpuDisplayName } } }`;
    const read = await gql<{ pod: Record<string, unknown> }>(podQuery, { input: { podId: created.id } });
    expect(read.pod).toEqual({
      id: created.id,
      desiredStatus: "RUNNING",
      uptimeSeconds: 90,
      runtime: { uptimeInSeconds: 90, ports: [] },
      machine: { podHostId: expect.stringContaining(created.id), gpuDisplayName: "RTX A6000" },
    });

    const stop = `mutation($id: String!) { podStop(input: {podId: $id}) { id desiredStatus } }`;
    expect((await gql<{ podStop: unknown }>(stop, { id: created.id })).podStop).toEqual({
      id: created.id,
      desiredStatus: "EXITED",
    });
    const restartError = await gqlError(`mutation($id: String!) { podRestart(input: {podId: $id}) { id } }`, {
      id: created.id,
    });
    expect(restartError?.extensions).toMatchObject({ code: "PRECONDITION" });
    const resumed = await gql<{ podResume: GqlPod }>(
      `mutation($id: String!) { podResume(input: {podId: $id, gpuCount: 2}) { id desiredStatus gpuCount costPerHr } }`,
      { id: created.id },
    );
    expect(resumed.podResume).toEqual({
      id: created.id,
      desiredStatus: "RUNNING",
      gpuCount: 2,
      costPerHr: 0.66,
    });
    expect(
      (
        await gql<{ podRestart: { desiredStatus: string } }>(
          `mutation($id: String!) { podRestart(input: {podId: $id}) { desiredStatus lastStatusChange } }`,
          { id: created.id },
        )
      ).podRestart,
    ).toMatchObject({ desiredStatus: "RUNNING", lastStatusChange: expect.stringMatching(/^Restarted/) });
    expect(
      (
        await gql<{ podReset: { lastStatusChange: string } }>(
          `mutation($id: String!) { podReset(input: {podId: $id}) { lastStatusChange } }`,
          { id: created.id },
        )
      ).podReset.lastStatusChange,
    ).toMatch(/^Reset by user/);

    const edited = await gql<{ podEditJob: GqlPod }>(
      `mutation($input: PodEditJobInput!) { podEditJob(input: $input) { ${POD_FIELDS} } }`,
      {
        input: {
          podId: created.id,
          imageName: "repo/gql:2",
          containerDiskInGb: 40,
          dockerArgs: 'bash -c "echo hi && sleep 1"',
          env: [{ key: "NEW", value: "1" }],
          volumeInGb: 6,
        },
      },
    );
    expect(edited.podEditJob).toMatchObject({
      imageName: "repo/gql:2",
      containerDiskInGb: 40,
      dockerArgs: 'bash -c "echo hi && sleep 1"',
      env: ["NEW=1"],
      volumeInGb: 6,
      lastStatusChange: expect.stringMatching(/^Reset by update/),
    });
    // The string is kept as written; REST's argv is read from it with shell quoting (as templates).
    expect((await ok("GET", `/pods/${created.id}`)).dockerStartCmd).toEqual([
      "bash",
      "-c",
      "echo hi && sleep 1",
    ]);
    // One that needs a shell is kept too; REST shows it run by /bin/sh -c.
    const unquoted = await gql<{ podEditJob: { dockerArgs: string } }>(
      `mutation($input: PodEditJobInput!) { podEditJob(input: $input) { dockerArgs } }`,
      {
        input: { podId: created.id, imageName: "repo/gql:2", containerDiskInGb: 40, dockerArgs: "a && b" },
      },
    );
    expect(unquoted.podEditJob.dockerArgs).toBe("a && b");
    expect((await ok("GET", `/pods/${created.id}`)).dockerStartCmd).toEqual(["/bin/sh", "-c", "a && b"]);
    const shrink = await gqlError(`mutation($input: PodEditJobInput!) { podEditJob(input: $input) { id } }`, {
      input: { podId: created.id, imageName: "repo/gql:2", containerDiskInGb: 40, volumeInGb: 1 },
    });
    expect(shrink?.extensions).toMatchObject({ code: "VALIDATION", field: "volumeInGb" });

    const mine = await gql<{ myself: { pods: { id: string }[] } }>(`{ myself { pods { id } } }`);
    expect(mine.myself.pods.map((p) => p.id)).toContain(created.id);

    const terminated = await gql<{ podTerminate: null }>(
      `mutation($id: String!) { podTerminate(input: {podId: $id}) }`,
      { id: created.id },
    );
    expect(terminated.podTerminate).toBeNull();
    expect((await gql<{ pod: null }>(podQuery, { input: { podId: created.id } })).pod).toBeNull();
    const again = await gqlError(`mutation($id: String!) { podStop(input: {podId: $id}) { id } }`, {
      id: created.id,
    });
    expect(again?.extensions).toMatchObject({ code: "NOT_FOUND" });
  });

  it("deployCpuPod without instanceId rents the smallest cpu3c; with one, exactly it", async () => {
    const small = await gql<{ deployCpuPod: GqlPod }>(
      `mutation { deployCpuPod(input: {name: "cpu", imageName: "repo/cpu:1"}) { ${POD_FIELDS} } }`,
    );
    expect(small.deployCpuPod).toMatchObject({
      gpuCount: 0,
      vcpuCount: 2,
      memoryInGb: 4,
      costPerHr: 0.06,
      containerDiskInGb: 10,
      desiredStatus: "RUNNING",
    });
    const big = await gql<{ deployCpuPod: GqlPod }>(
      `mutation { deployCpuPod(input: {instanceId: "cpu5g-8-32", imageName: "repo/cpu:1"}) { vcpuCount memoryInGb costPerHr } }`,
    );
    expect(big.deployCpuPod).toEqual({ vcpuCount: 8, memoryInGb: 32, costPerHr: 0.36 });
    const bad = await gqlError(
      `mutation { deployCpuPod(input: {instanceId: "cpu3c-2-8", imageName: "x"}) { id } }`,
    );
    expect(bad?.extensions).toMatchObject({ code: "VALIDATION", field: "instanceId" });
    for (const id of [small.deployCpuPod.id]) {
      await gql(`mutation($id: String!) { podTerminate(input: {podId: $id}) }`, { id });
    }
  });
});

describe("pod billing", () => {
  it("bills running periods at the pod's price on the service clock, after stop and terminate too", async () => {
    const billingClock = new ManualClock(Date.UTC(2026, 4, 1, 0, 0, 0));
    const fresh = await withService({ clock: billingClock });
    try {
      const c = clients(fresh);
      const created = await c.rest<Pod>("POST", "/pods", {
        imageName: "x",
        gpuTypeIds: ["NVIDIA L4"],
        gpuCount: 2,
      });
      expect(created.body.costPerHr).toBe(0.86);
      const id = created.body.id;
      const cpu = await c.rest<Pod>("POST", "/pods", { imageName: "x", computeType: "CPU" });
      expect(cpu.body.costPerHr).toBe(0.06);
      await billingClock.advance(2 * HOUR); // running 00:00-02:00
      await c.rest("POST", `/pods/${id}/stop`);
      await billingClock.advance(HOUR); // stopped 02:00-03:00
      await c.rest("POST", `/pods/${id}/start`);
      await billingClock.advance(HOUR / 2); // running 03:00-03:30
      expect((await c.rest("DELETE", `/pods/${id}`)).status).toBe(204);
      await c.rest("DELETE", `/pods/${cpu.body.id}`);
      await billingClock.advance(HOUR); // gone

      const range = "startTime=2026-05-01T00:00:00Z&endTime=2026-05-01T05:00:00Z";
      const byPod = BillingRecords.parse(
        (await c.rest("GET", `/billing/pods?bucketSize=hour&grouping=podId&podId=${id}&${range}`)).body,
      );
      expect(byPod.map((r) => [r.time, r.timeBilledMs, r.amount])).toEqual([
        ["2026-05-01T00:00:00.000Z", HOUR, 0.86],
        ["2026-05-01T01:00:00.000Z", HOUR, 0.86],
        ["2026-05-01T03:00:00.000Z", HOUR / 2, 0.43],
      ]);
      const byGpu = BillingRecords.parse((await c.rest("GET", `/billing/pods?bucketSize=day&${range}`)).body);
      expect(byGpu.sort((a, b) => String(a.gpuTypeId).localeCompare(String(b.gpuTypeId)))).toEqual([
        { time: "2026-05-01T00:00:00.000Z", gpuTypeId: "cpu3c", timeBilledMs: 3.5 * HOUR, amount: 0.21 },
        { time: "2026-05-01T00:00:00.000Z", gpuTypeId: "NVIDIA L4", timeBilledMs: 2.5 * HOUR, amount: 2.15 },
      ]);
      const filtered = BillingRecords.parse(
        (await c.rest("GET", `/billing/pods?bucketSize=day&gpuTypeId=NVIDIA%20L4&${range}`)).body,
      );
      expect(filtered.map((r) => r.gpuTypeId)).toEqual(["NVIDIA L4"]);
      // Endpoint billing is serverless only.
      expect((await c.rest("GET", `/billing/endpoints?bucketSize=day&${range}`)).body).toEqual([]);
    } finally {
      await fresh.close();
    }
  });
});

describe("pods in the store", () => {
  it("keep their state, price and billing across a restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), "runpodkit-pods-"));
    const data = join(dir, "store.sqlite");
    const restartClock = new ManualClock(Date.UTC(2026, 6, 1));
    try {
      const first = await withService({ data, clock: restartClock });
      const c1 = clients(first);
      const pod = (await c1.rest<Pod>("POST", "/pods", { imageName: "x", gpuTypeIds: ["NVIDIA A40"] })).body;
      await restartClock.advance(HOUR);
      await c1.rest("POST", `/pods/${pod.id}/stop`);
      await first.close();

      const second = await withService({ data, clock: restartClock });
      try {
        const c2 = clients(second);
        const read = await c2.rest<Pod>("GET", `/pods/${pod.id}`);
        expect(read.body).toMatchObject({ id: pod.id, desiredStatus: "EXITED", costPerHr: 0.4 });
        const billed = BillingRecords.parse(
          (await c2.rest("GET", `/billing/pods?bucketSize=day&startTime=2026-07-01T00:00:00Z&grouping=podId`))
            .body,
        );
        expect(billed).toEqual([
          { time: "2026-07-01T00:00:00.000Z", podId: pod.id, timeBilledMs: HOUR, amount: 0.4 },
        ]);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
