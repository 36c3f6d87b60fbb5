import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Endpoint } from "../../../sdk/schemas/endpoint";
import type { NetworkVolume } from "../../../sdk/schemas/network-volume";
import type { Template } from "../../../sdk/schemas/template";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "./client";

let service: TestService;
let api: ReturnType<typeof clients>;

beforeAll(async () => {
  service = await withService();
  api = clients(service);
});
afterAll(() => service.close());

describe("accounts are isolated", () => {
  it("answers 404 (not 403) for another account's ids and never lists them", async () => {
    const mine = service.apiKey;
    const theirs = service.otherApiKey;
    const template = (
      await api.rest<Template>(
        "POST",
        "/templates",
        { name: "private", imageName: "i", isServerless: true },
        mine,
      )
    ).body;
    const endpoint = (
      await api.rest<Endpoint>("POST", "/endpoints", { templateId: template.id, workersMax: 0 }, mine)
    ).body;
    const volume = (
      await api.rest<NetworkVolume>(
        "POST",
        "/networkvolumes",
        { name: "v", size: 1, dataCenterId: "EU-RO-1" },
        mine,
      )
    ).body;
    const auth = (
      await api.rest<{ id: string }>(
        "POST",
        "/containerregistryauth",
        { name: "a", username: "u", password: "p" },
        mine,
      )
    ).body;

    for (const path of [
      `/templates/${template.id}`,
      `/endpoints/${endpoint.id}`,
      `/networkvolumes/${volume.id}`,
      `/containerregistryauth/${auth.id}`,
    ]) {
      expect((await api.rest("GET", path, undefined, theirs)).status).toBe(404);
      expect((await api.rest("DELETE", path, undefined, theirs)).status).toBe(404);
    }
    expect((await api.rest("PATCH", `/endpoints/${endpoint.id}`, { name: "x" }, theirs)).status).toBe(404);
    expect((await api.rest("PATCH", `/templates/${template.id}`, { name: "x" }, theirs)).status).toBe(404);
    expect((await api.rest("PATCH", `/networkvolumes/${volume.id}`, { size: 9 }, theirs)).status).toBe(404);

    // Their account cannot point at my template or volume either.
    const borrow = await api.rest("POST", "/endpoints", { templateId: template.id }, theirs);
    expect(borrow.status).toBe(400);

    for (const path of ["/templates", "/endpoints", "/networkvolumes", "/containerregistryauth"]) {
      expect((await api.rest("GET", path, undefined, theirs)).body).toEqual([]);
    }
    const theirView = await api.gql<{
      myself: { endpoint: null; endpoints: unknown[]; podTemplates: unknown[] };
    }>(
      `query($id: String!) { myself { endpoint(id: $id) { id } endpoints { id } podTemplates { id } } }`,
      { id: endpoint.id },
      theirs,
    );
    expect(theirView.body.data.myself).toEqual({ endpoint: null, endpoints: [], podTemplates: [] });
    const theirDelete = await api.gql(
      `mutation { deleteTemplate(templateName: "private") }`,
      undefined,
      theirs,
    );
    expect(theirDelete.body.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");

    // Mine are all still there.
    expect((await api.rest("GET", `/endpoints/${endpoint.id}`, undefined, mine)).status).toBe(200);
    expect((await api.rest("GET", `/templates/${template.id}`, undefined, mine)).status).toBe(200);
  });
});

describe("REST and GraphQL are two views of one store", () => {
  it("reads through GraphQL what REST wrote", async () => {
    const template = (
      await api.rest<Template>("POST", "/templates", {
        name: "viaRest",
        imageName: "img",
        isServerless: true,
        env: { A: "1" },
      })
    ).body;
    const endpoint = (
      await api.rest<Endpoint>("POST", "/endpoints", {
        templateId: template.id,
        name: "rest-made",
        workersMax: 4,
        idleTimeout: 42,
        flashboot: true,
        gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
        allowedCudaVersions: ["12.4"],
      })
    ).body;
    const reply = await api.gql<{
      myself: { endpoint: Record<string, unknown>; podTemplates: { name: string }[] };
    }>(
      `query($id: String!) { myself {
         endpoint(id: $id) { name templateId workersMax idleTimeout flashBootType gpuIds allowedCudaVersions template { name } }
         podTemplates { name } } }`,
      { id: endpoint.id },
    );
    expect(reply.body.data.myself.endpoint).toEqual({
      name: "rest-made",
      templateId: template.id,
      workersMax: 4,
      idleTimeout: 42,
      flashBootType: "FLASHBOOT",
      gpuIds: "ADA_24",
      allowedCudaVersions: "12.4",
      template: { name: "viaRest" },
    });
    expect(reply.body.data.myself.podTemplates.map((t) => t.name)).toContain("viaRest");
  });

  it("reads through REST what GraphQL wrote", async () => {
    const t = await api.gql<{ saveTemplate: { id: string } }>(
      `mutation { saveTemplate(input: {name: "viaGql", imageName: "img", isServerless: true, ports: "8000/http"}) { id } }`,
    );
    const templateId = t.body.data.saveTemplate.id;
    const e = await api.gql<{ saveEndpoint: { id: string } }>(
      `mutation($t: String!) { saveEndpoint(input: {name: "gql-made", templateId: $t, gpuIds: "AMPERE_80", workersMax: 2,
         flashBootType: FLASHBOOT, env: [{key: "X", value: "y"}], executionTimeoutMs: 30000}) { id } }`,
      { t: templateId },
    );
    const id = e.body.data.saveEndpoint.id;
    const rest = await api.rest<Endpoint>("GET", `/endpoints/${id}?includeTemplate=true`);
    expect(rest.body).toMatchObject({
      name: "gql-made",
      templateId,
      workersMax: 2,
      flashboot: true,
      env: { X: "y" },
      executionTimeoutMs: 30_000,
      gpuTypeIds: ["NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB"],
    });
    expect(rest.body.template?.ports).toEqual(["8000/http"]);
    // And a REST PATCH is visible to GraphQL again.
    await api.rest("PATCH", `/endpoints/${id}`, { workersMax: 0 });
    const back = await api.gql<{ myself: { endpoint: { workersMax: number; env: unknown[] } } }>(
      `query($id: String!) { myself { endpoint(id: $id) { workersMax env { key value } } } }`,
      { id },
    );
    expect(back.body.data.myself.endpoint).toEqual({ workersMax: 0, env: [{ key: "X", value: "y" }] });
  });

  it("a REST read-then-PATCH of every field changes nothing GraphQL reads (PRIORITY_FLASHBOOT stays)", async () => {
    const t = await api.gql<{ saveTemplate: { id: string } }>(
      `mutation { saveTemplate(input: {name: "roundTrip", imageName: "img", isServerless: true}) { id } }`,
    );
    const fields = `id name templateId gpuIds idleTimeout locations flashBootType scalerType scalerValue workersMin
      workersMax workersStandby networkVolumeId type gpuCount executionTimeoutMs env { key value } allowedCudaVersions
      minCudaVersion hubReleaseId modelName version`;
    const saved = await api.gql<{ saveEndpoint: { id: string } }>(
      `mutation($t: String!) { saveEndpoint(input: {name: "round-trip", templateId: $t, gpuIds: "AMPERE_24,-NVIDIA L4",
         locations: "US", flashBootType: PRIORITY_FLASHBOOT, workersStandby: 2, idleTimeout: 10, workersMax: 2,
         env: [{key: "K", value: "v"}], allowedCudaVersions: "12.4"}) { ${fields} } }`,
      { t: t.body.data.saveTemplate.id },
    );
    const before = saved.body.data.saveEndpoint;
    expect(before).toMatchObject({ flashBootType: "PRIORITY_FLASHBOOT" });
    const read = (await api.rest<Record<string, unknown>>("GET", `/endpoints/${before.id}`)).body;
    expect(read.flashboot).toBe(true);
    // Every field REST reads that its update takes, sent back unchanged.
    const {
      id: _id,
      userId: _u,
      computeType: _c,
      env: _e,
      instanceIds: _i,
      version: _v,
      createdAt: _d,
      ...body
    } = read;
    const patched = await api.rest<Record<string, unknown>>("PATCH", `/endpoints/${before.id}`, body);
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual(read);
    const after = await api.gql<{ myself: { endpoint: unknown } }>(
      `query($id: String!) { myself { endpoint(id: $id) { ${fields} } } }`,
      { id: before.id },
    );
    expect(after.body.data.myself.endpoint).toEqual(before);
    // flashboot false still turns it off, and true then turns plain FLASHBOOT on.
    await api.rest("PATCH", `/endpoints/${before.id}`, { flashboot: false });
    await api.rest("PATCH", `/endpoints/${before.id}`, { flashboot: true });
    const last = await api.gql<{ myself: { endpoint: { flashBootType: string } } }>(
      `query($id: String!) { myself { endpoint(id: $id) { flashBootType } } }`,
      { id: before.id },
    );
    expect(last.body.data.myself.endpoint.flashBootType).toBe("FLASHBOOT");
  });
});
