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
  template = (await api.rest<Template>("POST", "/templates", { name: "worker", imageName: "img:1" })).body;
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
    const other = (await api.rest<Template>("POST", "/templates", { name: "other", imageName: "img:2" }))
      .body;
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
    const read = await api.gql<{ myself: { endpoint: { gpuIds: string } } }>(
      `query($id: String!) { myself { endpoint(id: $id) { gpuIds } } }`,
      { id: endpoint.id },
    );
    expect(read.body.data.myself.endpoint.gpuIds).toBe("AMPERE_48,-NVIDIA RTX A6000");
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
