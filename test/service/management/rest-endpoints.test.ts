import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ErrorBody } from "../../../sdk/schemas/common";
import { Endpoint, EndpointList } from "../../../sdk/schemas/endpoint";
import type { NetworkVolume } from "../../../sdk/schemas/network-volume";
import type { Template } from "../../../sdk/schemas/template";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "./client";

let service: TestService;
let api: ReturnType<typeof clients>;
let template: Template;

beforeAll(async () => {
  service = await withService();
  api = clients(service);
  template = (
    await api.rest<Template>("POST", "/templates", { name: "worker", imageName: "img:1", isServerless: true })
  ).body;
});
afterAll(() => service.close());

async function createEndpoint(body: Record<string, unknown> = {}) {
  const reply = await api.rest<Endpoint>("POST", "/endpoints", { templateId: template.id, ...body });
  expect(reply.status).toBe(200);
  return Endpoint.parse(reply.body);
}

describe("REST endpoints", () => {
  it("creates with only templateId and the real service's defaults", async () => {
    const endpoint = await createEndpoint();
    expect(endpoint.id).toMatch(/^[a-z0-9]{14}$/);
    expect(endpoint).toMatchObject({
      templateId: template.id,
      computeType: "GPU",
      gpuCount: 1,
      idleTimeout: 5,
      scalerType: "QUEUE_DELAY",
      scalerValue: 4,
      workersMin: 0,
      flashboot: false,
      executionTimeoutMs: 600_000,
      version: 0,
    });
    expect(endpoint.dataCenterIds).toHaveLength(26);
    expect(endpoint).not.toHaveProperty("gpuIds");
  });

  it("gets, lists as a bare array, and answers 404 for an unknown id", async () => {
    const endpoint = await createEndpoint({ name: "listed" });
    const got = await api.rest<Endpoint>("GET", `/endpoints/${endpoint.id}`);
    expect(got.body).toEqual(endpoint);
    const list = await api.rest("GET", "/endpoints");
    expect(EndpointList.parse(list.body).map((e) => e.id)).toContain(endpoint.id);
    const missing = await api.rest<ErrorBody>("GET", "/endpoints/doesnotexist00");
    expect(missing.status).toBe(404);
    expect(missing.body.message).toContain("doesnotexist00");
  });

  it("PATCH is partial: absent fields are unchanged and 0 / false are values", async () => {
    const endpoint = await createEndpoint({
      name: "p",
      workersMin: 1,
      workersMax: 4,
      flashboot: true,
      idleTimeout: 30,
    });
    const patched = await api.rest<Endpoint>("PATCH", `/endpoints/${endpoint.id}`, {
      workersMin: 0,
      flashboot: false,
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      name: "p",
      workersMin: 0,
      workersMax: 4,
      flashboot: false,
      idleTimeout: 30,
    });
    const again = await api.rest<Endpoint>("GET", `/endpoints/${endpoint.id}`);
    expect(again.body).toMatchObject({ workersMin: 0, workersMax: 4, flashboot: false, idleTimeout: 30 });
  });

  it("POST /update takes the same body as PATCH", async () => {
    const endpoint = await createEndpoint({ name: "u" });
    const updated = await api.rest<Endpoint>("POST", `/endpoints/${endpoint.id}/update`, {
      name: "renamed",
      scalerValue: 9,
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: "renamed", scalerValue: 9, idleTimeout: 5 });
  });

  it("refuses a computeType change, naming the field", async () => {
    const endpoint = await createEndpoint();
    const reply = await api.rest<ErrorBody>("PATCH", `/endpoints/${endpoint.id}`, { computeType: "CPU" });
    expect(reply.status).toBe(400);
    expect(reply.body.message).toMatch(/^computeType: is not updatable/);
  });

  it("refuses a pod template (isServerless false) on create and update, on both wires, naming templateId", async () => {
    const pod = (await api.rest<Template>("POST", "/templates", { name: "pod-only", imageName: "img:1" }))
      .body;
    expect(pod.isServerless).toBe(false);
    const message = `templateId: template ${pod.id} ("pod-only") is a pod template (isServerless: false); an endpoint needs a serverless template: create one with isServerless: true`;
    const before = (await api.rest<Endpoint[]>("GET", "/endpoints")).body.length;
    const created = await api.rest<ErrorBody>("POST", "/endpoints", { templateId: pod.id, workersMax: 0 });
    expect(created).toMatchObject({
      status: 400,
      body: { message, code: "VALIDATION", field: "templateId" },
    });
    const endpoint = await createEndpoint({ workersMax: 0 });
    const patched = await api.rest<ErrorBody>("PATCH", `/endpoints/${endpoint.id}`, { templateId: pod.id });
    expect(patched).toMatchObject({ status: 400, body: { message, field: "templateId" } });
    const saved = await saveEndpoint({ templateId: pod.id, gpuIds: "AMPERE_24" });
    expect(saved.errors?.[0]).toMatchObject({
      message,
      extensions: { code: "VALIDATION", field: "templateId" },
    });
    const updated = await saveEndpoint({ id: endpoint.id, templateId: pod.id, gpuIds: "AMPERE_24" });
    expect(updated.errors?.[0]).toMatchObject({ message });
    // Nothing was created or changed; the endpoint keeps its serverless template.
    expect((await api.rest<Endpoint[]>("GET", "/endpoints")).body.length).toBe(before + 1);
    expect((await api.rest<Endpoint>("GET", `/endpoints/${endpoint.id}`)).body.templateId).toBe(template.id);
  });

  it("refuses workersMin above workersMax and references missing in the account", async () => {
    const tooMany = await api.rest<ErrorBody>("POST", "/endpoints", {
      templateId: template.id,
      workersMin: 5,
      workersMax: 1,
    });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toContain("workersMin");
    const noTemplate = await api.rest<ErrorBody>("POST", "/endpoints", { templateId: "nosuchtmpl" });
    expect(noTemplate.status).toBe(400);
    expect(noTemplate.body.message).toContain("templateId");
    const noVolume = await api.rest<ErrorBody>("POST", "/endpoints", {
      templateId: template.id,
      networkVolumeId: "novolume00",
    });
    expect(noVolume.status).toBe(400);
    expect(noVolume.body.message).toContain("networkVolumeId");
  });

  it("bumps version when the template or env changes, not for other fields", async () => {
    const other = (
      await api.rest<Template>("POST", "/templates", {
        name: "other",
        imageName: "img:2",
        isServerless: true,
      })
    ).body;
    const endpoint = await createEndpoint();
    const renamed = await api.rest<Endpoint>("PATCH", `/endpoints/${endpoint.id}`, { name: "same-version" });
    expect(renamed.body.version).toBe(0);
    const repointed = await api.rest<Endpoint>("PATCH", `/endpoints/${endpoint.id}`, {
      templateId: other.id,
    });
    expect(repointed.body.version).toBe(1);
    const released = await api.rest<Template>("PATCH", `/templates/${other.id}`, { imageName: "img:3" });
    expect(released.status).toBe(200);
    const after = await api.rest<Endpoint>("GET", `/endpoints/${endpoint.id}`);
    expect(after.body.version).toBe(2);
  });

  it("includeTemplate and includeWorkers add the template and the workers", async () => {
    const endpoint = await createEndpoint();
    const plain = await api.rest<Endpoint>("GET", `/endpoints/${endpoint.id}`);
    expect(plain.body).not.toHaveProperty("template");
    expect(plain.body).not.toHaveProperty("workers");
    const full = await api.rest<Endpoint>(
      "GET",
      `/endpoints/${endpoint.id}?includeTemplate=true&includeWorkers=true`,
    );
    expect(full.body.template?.name).toBe("worker");
    expect(full.body.workers).toEqual([]);
    const listed = await api.rest<Endpoint[]>("GET", "/endpoints?includeTemplate=true");
    expect(listed.body.every((e) => e.template?.id === e.templateId)).toBe(true);
  });

  it("maps REST gpuTypeIds to GraphQL pools and back", async () => {
    const endpoint = await createEndpoint({ gpuTypeIds: ["NVIDIA A40"] });
    expect(await gpuIdsOf(endpoint.id)).toBe("AMPERE_48,-NVIDIA RTX A6000");
  });
});

async function gpuIdsOf(id: string): Promise<string> {
  const read = await api.gql<{ myself: { endpoint: { gpuIds: string } } }>(
    `query($id: String!) { myself { endpoint(id: $id) { gpuIds } } }`,
    { id },
  );
  expect(read.body.errors).toBeUndefined();
  return read.body.data.myself.endpoint.gpuIds;
}

/** GraphQL saveEndpoint (a full replace) of what the test names; answers the reply's errors too. */
async function saveEndpoint(input: Record<string, unknown>) {
  const reply = await api.gql<{ saveEndpoint: { id: string; gpuIds: string } | null }>(
    `mutation($input: EndpointInput!) { saveEndpoint(input: $input) { id gpuIds } }`,
    { input: { name: "gpu", templateId: template.id, workersMax: 0, ...input } },
  );
  return { data: reply.body.data?.saveEndpoint, errors: reply.body.errors };
}

async function gpuTypeIdsOf(id: string): Promise<string[]> {
  return Endpoint.parse((await api.rest("GET", `/endpoints/${id}`)).body).gpuTypeIds;
}

describe("the GPU choice on both wires (REST gpuTypeIds, GraphQL gpuIds)", () => {
  it('GPU types no pools describe read as gpuIds "", which drifts visibly and cannot be saved back', async () => {
    for (const gpuTypeIds of [["NVIDIA GeForce RTX 5090"], ["NVIDIA B200"], ["NVIDIA A40", "NVIDIA B200"]]) {
      const endpoint = await createEndpoint({ gpuTypeIds, workersMax: 0 });
      expect(await gpuIdsOf(endpoint.id)).toBe("");
      // Saving back what was read is refused naming gpuIds; the GPUs are unchanged.
      const saved = await saveEndpoint({ id: endpoint.id, gpuIds: "" });
      expect(saved.errors?.[0]).toMatchObject({
        message: expect.stringMatching(/^gpuIds: is empty: name at least one GPU pool/),
        extensions: { code: "VALIDATION", field: "gpuIds" },
      });
      expect(await gpuTypeIdsOf(endpoint.id)).toEqual(gpuTypeIds);
    }
    // A change made through REST is seen through GraphQL: no stale pool list.
    const created = await saveEndpoint({ gpuIds: "AMPERE_16" });
    const id = created.data?.id ?? "";
    expect(created.data?.gpuIds).toBe("AMPERE_16");
    await api.rest("PATCH", `/endpoints/${id}`, { gpuTypeIds: ["NVIDIA B200"] });
    expect(await gpuIdsOf(id)).toBe("");
    await api.rest("PATCH", `/endpoints/${id}`, { gpuTypeIds: ["NVIDIA L4"] });
    expect(await gpuIdsOf(id)).toBe("AMPERE_24,-NVIDIA RTX A5000,-NVIDIA GeForce RTX 3090");
  });

  it("lists pools in the order of the first type each holds, and a GraphQL round trip keeps gpuTypeIds' order", async () => {
    const order = ["NVIDIA A40", "NVIDIA RTX A4000"];
    const endpoint = await createEndpoint({ gpuTypeIds: order, workersMax: 0 });
    const gpuIds = await gpuIdsOf(endpoint.id);
    expect(gpuIds).toBe(
      "AMPERE_48,AMPERE_16,-NVIDIA RTX A6000,-NVIDIA RTX A4500,-NVIDIA RTX 4000 Ada Generation," +
        "-NVIDIA RTX 2000 Ada Generation,-NVIDIA RTX 4000 SFF Ada Generation,-NVIDIA RTX A2000",
    );
    // Read, then save back (saveEndpoint is a full replace): the REST priority order stands.
    const saved = await saveEndpoint({ id: endpoint.id, gpuIds });
    expect(saved.errors).toBeUndefined();
    expect(await gpuTypeIdsOf(endpoint.id)).toEqual(order);
    // The same set written differently keeps the order too; another set takes the pools' order.
    await saveEndpoint({
      id: endpoint.id,
      gpuIds:
        "AMPERE_16,AMPERE_48,-NVIDIA RTX A6000,-NVIDIA RTX A4500,-NVIDIA RTX 4000 Ada Generation,-NVIDIA RTX 2000 Ada Generation,-NVIDIA RTX 4000 SFF Ada Generation,-NVIDIA RTX A2000",
    });
    expect(await gpuTypeIdsOf(endpoint.id)).toEqual(order);
    await saveEndpoint({ id: endpoint.id, gpuIds: "AMPERE_48" });
    expect(await gpuTypeIdsOf(endpoint.id)).toEqual(["NVIDIA RTX A6000", "NVIDIA A40"]);
  });

  it("refuses a GPU endpoint with no GPU type, naming the field", async () => {
    const create = await api.rest<ErrorBody>("POST", "/endpoints", {
      templateId: template.id,
      gpuTypeIds: [],
    });
    expect(create).toMatchObject({
      status: 400,
      body: { message: "gpuTypeIds: a GPU endpoint needs at least one GPU type", field: "gpuTypeIds" },
    });
    const endpoint = await createEndpoint({ workersMax: 0 });
    const patch = await api.rest<ErrorBody>("PATCH", `/endpoints/${endpoint.id}`, { gpuTypeIds: [] });
    expect(patch).toMatchObject({
      status: 400,
      body: { message: "gpuTypeIds: a GPU endpoint needs at least one GPU type", field: "gpuTypeIds" },
    });
    const excluded = await saveEndpoint({ gpuIds: "AMPERE_48,-NVIDIA A40,-NVIDIA RTX A6000" });
    expect(excluded.errors?.[0]).toMatchObject({
      message:
        'gpuIds: excludes every GPU type of its pools ("AMPERE_48,-NVIDIA A40,-NVIDIA RTX A6000"); a GPU endpoint needs at least one',
      extensions: { code: "VALIDATION", field: "gpuIds" },
    });
    // A CPU endpoint has no GPU type, and needs none.
    const cpu = await createEndpoint({ computeType: "CPU", gpuTypeIds: [], workersMax: 0 });
    expect(cpu.gpuTypeIds).toEqual([]);
  });

  it("a CPU endpoint saved through GraphQL keeps no GPU types, whatever gpuIds it sends", async () => {
    const cpu = await saveEndpoint({ computeType: "CPU", gpuIds: "AMPERE_16", instanceIds: ["cpu3c-2-4"] });
    expect(cpu.errors).toBeUndefined();
    const id = cpu.data?.id ?? "";
    expect(await gpuTypeIdsOf(id)).toEqual([]);
    // A full replace (the provider's update) sends gpuIds again: still none.
    expect((await saveEndpoint({ id, gpuIds: "ADA_24", instanceIds: ["cpu3c-2-4"] })).errors).toBeUndefined();
    expect(await gpuTypeIdsOf(id)).toEqual([]);
  });
});

describe("CPU instance ids (GraphQL instanceIds)", () => {
  it("are refused unless <flavor>-<vCPUs>-<memory GB> of the catalogue, and only on CPU endpoints", async () => {
    const refused: [Record<string, unknown>, string][] = [
      [
        { computeType: "CPU", instanceIds: ["banana"] },
        'instanceIds: "banana" is not <flavor>-<vcpus>-<memoryGb>, e.g. cpu3c-2-4',
      ],
      [
        { computeType: "CPU", instanceIds: ["cpu9x-2-4"] },
        'instanceIds: unknown CPU flavor "cpu9x"; expected one of',
      ],
      [
        { computeType: "CPU", instanceIds: ["cpu3c-3-6"] },
        "instanceIds: a cpu3c instance has 2, 4, 8, 16, 32 vCPUs, not 3",
      ],
      [
        { computeType: "CPU", instanceIds: ["cpu3c-2-4", "cpu3g-2-4"] },
        "instanceIds: a cpu3g instance with 2 vCPUs has 8 GB, not 4",
      ],
      [
        { instanceIds: ["cpu3c-2-4"] },
        'instanceIds: CPU instance ids are only for CPU endpoints (computeType "CPU")',
      ],
    ];
    for (const [input, message] of refused) {
      const saved = await saveEndpoint({ gpuIds: "AMPERE_16", ...input });
      expect(saved.data ?? null).toBeNull();
      expect(saved.errors?.[0]?.message).toContain(message);
      expect(saved.errors?.[0]).toMatchObject({ extensions: { code: "VALIDATION", field: "instanceIds" } });
    }
    const ok = await saveEndpoint({
      computeType: "CPU",
      gpuIds: "AMPERE_16",
      instanceIds: ["cpu3c-2-4", "cpu5g-8-32"],
    });
    expect(ok.errors).toBeUndefined();
    expect(Endpoint.parse((await api.rest("GET", `/endpoints/${ok.data?.id}`)).body).instanceIds).toEqual([
      "cpu3c-2-4",
      "cpu5g-8-32",
    ]);
  });
});

describe("REST endpoints and volumes", () => {
  it("refuses two network volumes in one data center: a worker mounts the one where it runs", async () => {
    const volume = async (name: string, dataCenterId: string) =>
      (await api.rest<NetworkVolume>("POST", "/networkvolumes", { name, size: 10, dataCenterId })).body;
    const [a, b, c] = [
      await volume("a", "EU-RO-1"),
      await volume("b", "EU-RO-1"),
      await volume("c", "US-TX-3"),
    ];
    const twice = await api.rest<ErrorBody>("POST", "/endpoints", {
      templateId: template.id,
      networkVolumeIds: [a.id, c.id, b.id],
      workersMax: 0,
    });
    expect(twice).toMatchObject({
      status: 400,
      body: {
        message: `networkVolumeIds: network volumes ${a.id} and ${b.id} are both in EU-RO-1; an endpoint takes at most one per data center`,
        field: "networkVolumeIds",
      },
    });
    const endpoint = await createEndpoint({ networkVolumeIds: [a.id, c.id], workersMax: 0 });
    const added = await api.rest<ErrorBody>("PATCH", `/endpoints/${endpoint.id}`, {
      networkVolumeIds: [a.id, c.id, b.id],
    });
    expect(added).toMatchObject({ status: 400, body: { field: "networkVolumeIds" } });
  });

  it("refuses a network volume outside the endpoint's data centers, as pods do, on create and on update", async () => {
    const volume = (
      await api.rest<NetworkVolume>("POST", "/networkvolumes", {
        name: "tx",
        size: 10,
        dataCenterId: "US-TX-3",
      })
    ).body;
    const outside = `network volume ${volume.id} is in US-TX-3, which is not among the endpoint's data centers`;
    const create = await api.rest<ErrorBody>("POST", "/endpoints", {
      templateId: template.id,
      networkVolumeId: volume.id,
      dataCenterIds: ["EU-RO-1"],
      workersMax: 0,
    });
    expect(create).toMatchObject({
      status: 400,
      body: {
        message: `networkVolumeId: ${outside} (EU-RO-1)`,
        code: "VALIDATION",
        field: "networkVolumeId",
      },
    });
    const many = await api.rest<ErrorBody>("POST", "/endpoints", {
      templateId: template.id,
      networkVolumeIds: [volume.id],
      dataCenterIds: ["EU-RO-1", "EU-CZ-1"],
    });
    expect(many.body).toMatchObject({
      message: `networkVolumeIds: ${outside} (EU-RO-1, EU-CZ-1)`,
      field: "networkVolumeIds",
    });

    // Inside its data centers it is taken; moving the data centers away from it is refused.
    const endpoint = await createEndpoint({
      networkVolumeId: volume.id,
      dataCenterIds: ["US-TX-3", "EU-RO-1"],
      workersMax: 0,
    });
    const moved = await api.rest<ErrorBody>("PATCH", `/endpoints/${endpoint.id}`, {
      dataCenterIds: ["EU-RO-1"],
    });
    expect(moved.body).toMatchObject({
      message: `networkVolumeId: ${outside} (EU-RO-1)`,
      field: "networkVolumeId",
    });
    const other = (
      await api.rest<NetworkVolume>("POST", "/networkvolumes", {
        name: "cz",
        size: 10,
        dataCenterId: "EU-CZ-1",
      })
    ).body;
    const swapped = await api.rest<ErrorBody>("PATCH", `/endpoints/${endpoint.id}`, {
      networkVolumeId: other.id,
    });
    expect(swapped.body.message).toBe(
      `networkVolumeId: network volume ${other.id} is in EU-CZ-1, which is not among the endpoint's data centers (US-TX-3, EU-RO-1)`,
    );
    expect((await api.rest<Endpoint>("GET", `/endpoints/${endpoint.id}`)).body).toMatchObject({
      networkVolumeId: volume.id,
      dataCenterIds: ["US-TX-3", "EU-RO-1"],
    });

    // GraphQL locations narrow the data centers the same way.
    const save = (input: Record<string, unknown>) =>
      api.gql<{ saveEndpoint: { id: string; locations: string | null } | null }>(
        `mutation($input: EndpointInput!) { saveEndpoint(input: $input) { id locations } }`,
        { input: { name: "loc", templateId: template.id, gpuIds: "AMPERE_16", workersMax: 0, ...input } },
      );
    const cz = await save({ networkVolumeId: volume.id, locations: "CZ" });
    expect(cz.body.errors?.[0]).toMatchObject({
      message: `networkVolumeId: ${outside} (EU-CZ-1: dataCenterIds within locations CZ)`,
      extensions: { code: "VALIDATION", field: "networkVolumeId" },
    });
    const us = await save({ networkVolumeId: volume.id, locations: "US" });
    expect(us.body.errors).toBeUndefined();
    const id = us.body.data.saveEndpoint?.id;
    const narrowed = await save({ id, networkVolumeId: volume.id, locations: "RO,CZ" });
    expect(narrowed.body.errors?.[0]?.extensions?.field).toBe("networkVolumeId");
  });

  it("deletes only when workersMin and workersMax are both 0; delete answers 204 with no body", async () => {
    const endpoint = await createEndpoint({ workersMin: 0, workersMax: 2 });
    const refused = await api.rest<ErrorBody>("DELETE", `/endpoints/${endpoint.id}`);
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain("workersMax=2");
    await api.rest("PATCH", `/endpoints/${endpoint.id}`, { workersMax: 0 });
    const deleted = await api.rest("DELETE", `/endpoints/${endpoint.id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe("");
    expect((await api.rest("GET", `/endpoints/${endpoint.id}`)).status).toBe(404);
    expect((await api.rest("DELETE", `/endpoints/${endpoint.id}`)).status).toBe(404);
  });

  it("attaches a volume that then cannot be deleted until detached", async () => {
    const volume = (
      await api.rest<NetworkVolume>("POST", "/networkvolumes", {
        name: "v",
        size: 10,
        dataCenterId: "EU-RO-1",
      })
    ).body;
    const endpoint = await createEndpoint({ networkVolumeId: volume.id });
    expect(endpoint.networkVolumeId).toBe(volume.id);
    const refused = await api.rest<ErrorBody>("DELETE", `/networkvolumes/${volume.id}`);
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain(endpoint.id);
    const detached = await api.rest<Endpoint>("PATCH", `/endpoints/${endpoint.id}`, {
      networkVolumeId: null,
    });
    expect(detached.body.networkVolumeId).toBeNull();
    expect((await api.rest("DELETE", `/networkvolumes/${volume.id}`)).status).toBe(204);
  });

  it("tells the job plane about saves and deletes", async () => {
    const events: string[] = [];
    const unsubscribe = [
      service.events.on("endpoint.saved", (_a, id) => events.push(`saved ${id}`)),
      service.events.on("endpoint.deleted", (_a, id) => events.push(`deleted ${id}`)),
    ];
    const endpoint = await createEndpoint({ workersMax: 0 });
    await api.rest("PATCH", `/endpoints/${endpoint.id}`, { idleTimeout: 7 });
    await api.rest("DELETE", `/endpoints/${endpoint.id}`);
    expect(events).toEqual([`saved ${endpoint.id}`, `saved ${endpoint.id}`, `deleted ${endpoint.id}`]);
    for (const off of unsubscribe) off();
  });
});
