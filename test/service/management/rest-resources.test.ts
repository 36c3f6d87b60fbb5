import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ErrorBody } from "../../../sdk/schemas/common";
import type { ContainerRegistryAuth } from "../../../sdk/schemas/container-registry-auth";
import type { NetworkVolume } from "../../../sdk/schemas/network-volume";
import { Template } from "../../../sdk/schemas/template";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "./client";

let service: TestService;
let api: ReturnType<typeof clients>;

beforeAll(async () => {
  service = await withService();
  api = clients(service);
});
afterAll(() => service.close());

describe("REST templates", () => {
  it("creates with defaults, reads back, updates partially and deletes", async () => {
    const created = await api.rest<Template>("POST", "/templates", {
      name: "t-crud",
      imageName: "repo/img:1",
      env: { A: "1" },
      ports: ["8000/http"],
      dockerStartCmd: ["python", "handler.py"],
      isServerless: true,
    });
    expect(created.status).toBe(200);
    const template = Template.parse(created.body);
    expect(template).toMatchObject({
      category: "NVIDIA",
      containerDiskInGb: 50,
      volumeInGb: 20,
      volumeMountPath: "/workspace",
      env: { A: "1" },
      ports: ["8000/http"],
      isServerless: true,
      isPublic: false,
    });
    expect((await api.rest("GET", `/templates/${template.id}`)).body).toEqual(template);
    const list = await api.rest<Template[]>("GET", "/templates");
    expect(list.body.map((t) => t.id)).toContain(template.id);

    const patched = await api.rest<Template>("PATCH", `/templates/${template.id}`, {
      env: {},
      volumeInGb: 0,
    });
    expect(patched.body).toMatchObject({
      env: {},
      volumeInGb: 0,
      imageName: "repo/img:1",
      ports: ["8000/http"],
    });
    const viaPost = await api.rest<Template>("POST", `/templates/${template.id}/update`, { readme: "# hi" });
    expect(viaPost.body).toMatchObject({ readme: "# hi", volumeInGb: 0 });

    expect((await api.rest("DELETE", `/templates/${template.id}`)).status).toBe(204);
    expect((await api.rest("GET", `/templates/${template.id}`)).status).toBe(404);
  });

  it("lists endpoint-bound templates only with includeEndpointBoundTemplates, official ones only with includeRunpodTemplates", async () => {
    const make = async (name: string, isServerless: boolean) =>
      Template.parse((await api.rest("POST", "/templates", { name, imageName: "i", isServerless })).body);
    const bound = await make("inc-bound", true);
    const loose = await make("inc-loose", true);
    const pod = await make("inc-pod", false);
    const endpoint = await api.rest<{ id: string }>("POST", "/endpoints", {
      templateId: bound.id,
      workersMax: 0,
    });
    expect(endpoint.status).toBe(200);
    await api.rest("POST", "/endpoints", { templateId: pod.id, workersMax: 0 });
    const names = async (query = "") =>
      (await api.rest<Template[]>("GET", `/templates${query}`)).body
        .map((t) => t.name)
        .filter((n) => n.startsWith("inc-") || n === "Runpod Ubuntu");
    // A serverless template an endpoint uses is bound; a pod template used by one is not.
    expect(await names()).toEqual(["inc-loose", "inc-pod"]);
    expect(await names("?includeEndpointBoundTemplates=false")).toEqual(["inc-loose", "inc-pod"]);
    expect(await names("?includeEndpointBoundTemplates=true")).toEqual(["inc-bound", "inc-loose", "inc-pod"]);
    // No community templates on this service; the official ones come with includeRunpodTemplates.
    expect(await names("?includePublicTemplates=true")).toEqual(["inc-loose", "inc-pod"]);
    expect(await names("?includeRunpodTemplates=true")).toEqual(["inc-loose", "inc-pod", "Runpod Ubuntu"]);
    const official = (await api.rest<Template[]>("GET", "/templates?includeRunpodTemplates=true")).body.find(
      (t) => t.isRunpod,
    );
    expect(official).toMatchObject({
      id: "runpod-ubuntu",
      isRunpod: true,
      isPublic: true,
      isServerless: false,
    });
    expect((await api.rest("GET", "/templates/runpod-ubuntu?includeRunpodTemplates=true")).body).toEqual(
      official,
    );
    expect((await api.rest("GET", "/templates/runpod-ubuntu")).status).toBe(404);
    // A get by id finds the account's own template, bound or not.
    expect((await api.rest<Template>("GET", `/templates/${bound.id}`)).body.id).toBe(bound.id);
    expect(loose.isServerless).toBe(true);
  });

  it("keeps names unique per account, on create and on rename", async () => {
    await api.rest("POST", "/templates", { name: "taken", imageName: "i" });
    const duplicate = await api.rest<ErrorBody>("POST", "/templates", { name: "taken", imageName: "j" });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.message).toMatch(/^name: .*taken/);
    const other = (await api.rest<Template>("POST", "/templates", { name: "free", imageName: "i" })).body;
    const rename = await api.rest<ErrorBody>("PATCH", `/templates/${other.id}`, { name: "taken" });
    expect(rename.status).toBe(400);
    const sameName = await api.rest("PATCH", `/templates/${other.id}`, { name: "free" });
    expect(sameName.status).toBe(200);
    const otherAccount = await api.rest(
      "POST",
      "/templates",
      { name: "taken", imageName: "i" },
      service.otherApiKey,
    );
    expect(otherAccount.status).toBe(200);
  });

  it("refuses category and isServerless updates, naming the field", async () => {
    const t = (await api.rest<Template>("POST", "/templates", { name: "fixed", imageName: "i" })).body;
    for (const field of ["category", "isServerless"]) {
      const reply = await api.rest<ErrorBody>("PATCH", `/templates/${t.id}`, {
        [field]: field === "category" ? "CPU" : true,
      });
      expect(reply.status).toBe(400);
      expect(reply.body.message).toMatch(new RegExp(`^${field}: is not updatable`));
    }
  });

  it("refuses to delete a template an endpoint uses", async () => {
    const t = (
      await api.rest<Template>("POST", "/templates", { name: "used", imageName: "i", isServerless: true })
    ).body;
    const e = (await api.rest<{ id: string }>("POST", "/endpoints", { templateId: t.id, workersMax: 0 }))
      .body;
    const refused = await api.rest<ErrorBody>("DELETE", `/templates/${t.id}`);
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain(e.id);
    await api.rest("DELETE", `/endpoints/${e.id}`);
    expect((await api.rest("DELETE", `/templates/${t.id}`)).status).toBe(204);
  });
});

describe("REST network volumes", () => {
  it("creates, reads, renames, grows and deletes", async () => {
    const created = await api.rest<NetworkVolume>("POST", "/networkvolumes", {
      name: "data",
      size: 50,
      dataCenterId: "US-TX-3",
    });
    expect(created.status).toBe(200);
    const v = created.body;
    expect(v).toEqual({ id: v.id, name: "data", size: 50, dataCenterId: "US-TX-3" });
    expect(v.id).toMatch(/^[a-z0-9]{10}$/);
    expect((await api.rest("GET", `/networkvolumes/${v.id}`)).body).toEqual(v);
    expect((await api.rest<NetworkVolume[]>("GET", "/networkvolumes")).body).toContainEqual(v);
    const grown = await api.rest("PATCH", `/networkvolumes/${v.id}`, { size: 80 });
    expect(grown.body).toEqual({ ...v, size: 80 });
    const renamed = await api.rest("POST", `/networkvolumes/${v.id}/update`, { name: "data2" });
    expect(renamed.body).toEqual({ ...v, size: 80, name: "data2" });
    expect((await api.rest("DELETE", `/networkvolumes/${v.id}`)).status).toBe(204);
    expect((await api.rest("GET", `/networkvolumes/${v.id}`)).status).toBe(404);
  });

  it("bounds size to 0..4000 and only lets it grow", async () => {
    for (const size of [-1, 4001, 1.5]) {
      const reply = await api.rest<ErrorBody>("POST", "/networkvolumes", {
        name: "x",
        size,
        dataCenterId: "EU-RO-1",
      });
      expect(reply.status).toBe(400);
      expect(reply.body.message).toMatch(/^size: /);
    }
    const edge = await api.rest<NetworkVolume>("POST", "/networkvolumes", {
      name: "x",
      size: 4000,
      dataCenterId: "EU-RO-1",
    });
    expect(edge.status).toBe(200);
    const v = (
      await api.rest<NetworkVolume>("POST", "/networkvolumes", {
        name: "y",
        size: 20,
        dataCenterId: "EU-RO-1",
      })
    ).body;
    const shrink = await api.rest<ErrorBody>("PATCH", `/networkvolumes/${v.id}`, { size: 10 });
    expect(shrink.status).toBe(400);
    expect(shrink.body.message).toMatch(/^size: .*only grow/);
    expect((await api.rest<NetworkVolume>("GET", `/networkvolumes/${v.id}`)).body.size).toBe(20);
  });

  it("refuses a dataCenterId change and unknown data centers", async () => {
    const v = (
      await api.rest<NetworkVolume>("POST", "/networkvolumes", {
        name: "z",
        size: 1,
        dataCenterId: "EU-RO-1",
      })
    ).body;
    const move = await api.rest<ErrorBody>("PATCH", `/networkvolumes/${v.id}`, { dataCenterId: "US-TX-3" });
    expect(move.status).toBe(400);
    expect(move.body.message).toMatch(/^dataCenterId: is not updatable/);
    const unknown = await api.rest<ErrorBody>("POST", "/networkvolumes", {
      name: "z",
      size: 1,
      dataCenterId: "MARS-1",
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toMatch(/^dataCenterId: /);
  });
});

describe("REST container registry auths", () => {
  it("returns only {id, name}, keeps names unique and has no update", async () => {
    const created = await api.rest<ContainerRegistryAuth>("POST", "/containerregistryauth", {
      name: "ghcr",
      username: "me",
      password: "s3cret-pass",
    });
    expect(created.status).toBe(200);
    const auth = created.body;
    expect(auth).toEqual({ id: auth.id, name: "ghcr" });
    expect(created.text).not.toContain("s3cret-pass");
    const got = await api.rest("GET", `/containerregistryauth/${auth.id}`);
    expect(got.body).toEqual(auth);
    const list = await api.rest("GET", "/containerregistryauth");
    expect(list.body).toEqual([auth]);
    expect(list.text).not.toContain("s3cret");

    const duplicate = await api.rest<ErrorBody>("POST", "/containerregistryauth", {
      name: "ghcr",
      username: "x",
      password: "y",
    });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.message).toMatch(/^name: /);
    // The path exists, without PATCH: 405 (no update), not 404.
    const patch = await api.rest("PATCH", `/containerregistryauth/${auth.id}`, { username: "z" });
    expect(patch.status).toBe(405);
    expect(patch.body).toMatchObject({ code: "METHOD_NOT_ALLOWED" });
    expect(
      (await api.rest("POST", `/containerregistryauth/${auth.id}/update`, { username: "z" })).status,
    ).toBe(404);
  });

  it("refuses to delete credentials a template uses, then deletes them", async () => {
    const auth = (
      await api.rest<ContainerRegistryAuth>("POST", "/containerregistryauth", {
        name: "used",
        username: "u",
        password: "p",
      })
    ).body;
    const t = (
      await api.rest<Template>("POST", "/templates", {
        name: "private",
        imageName: "i",
        containerRegistryAuthId: auth.id,
      })
    ).body;
    expect(t.containerRegistryAuthId).toBe(auth.id);
    expect((await api.rest("DELETE", `/containerregistryauth/${auth.id}`)).status).toBe(400);
    await api.rest("PATCH", `/templates/${t.id}`, { containerRegistryAuthId: null });
    expect((await api.rest("DELETE", `/containerregistryauth/${auth.id}`)).status).toBe(204);
    expect((await api.rest("GET", `/containerregistryauth/${auth.id}`)).status).toBe(404);
  });
});

describe("REST pods and billing", () => {
  it("lists pods as an array; pod create and actions are real operations (400 and 404, not 501)", async () => {
    const list = await api.rest("GET", "/pods?includeWorkers=true");
    expect(list.status).toBe(200);
    expect(list.body).toEqual([]);
    expect((await api.rest("GET", "/pods/nosuchpod00000")).status).toBe(404);
    const create = await api.rest<ErrorBody>("POST", "/pods", { name: "x", imageName: "repo/app:1" });
    expect(create.status).toBe(400);
    expect(create.body.message).toMatch(/^gpuTypeIds: /);
    const stop = await api.rest<ErrorBody>("POST", "/pods/abc/stop");
    expect(stop.status).toBe(404);
    expect(stop.body.message).toContain("pod abc not found");
  });

  it("validates billing query parameters", async () => {
    const badBucket = await api.rest<ErrorBody>("GET", "/billing/endpoints?bucketSize=fortnight");
    expect(badBucket.status).toBe(400);
    expect(badBucket.body.message).toMatch(/^bucketSize: /);
    const badTime = await api.rest<ErrorBody>("GET", "/billing/pods?startTime=yesterday");
    expect(badTime.status).toBe(400);
    expect(badTime.body.message).toMatch(/^startTime: /);
    const unknown = await api.rest<ErrorBody>("GET", "/billing/networkvolumes?foo=1");
    expect(unknown.status).toBe(400);
    const reversed = await api.rest<ErrorBody>(
      "GET",
      "/billing/networkvolumes?startTime=2026-02-01T00:00:00Z&endTime=2026-01-01T00:00:00Z",
    );
    expect(reversed.status).toBe(400);
    expect(reversed.body).toMatchObject({
      field: "startTime",
      message: "startTime: must not be after endTime (2026-02-01T00:00:00Z > 2026-01-01T00:00:00Z)",
    });
    // Without endTime the range ends now: a startTime to come is an empty range, not "after endTime".
    for (const path of ["/billing/pods", "/billing/endpoints", "/billing/networkvolumes"]) {
      const future = await api.rest("GET", `${path}?startTime=2999-01-01T00:00:00Z`);
      expect([path, future.status, future.body]).toEqual([path, 200, []]);
    }
    const ok = await api.rest(
      "GET",
      "/billing/endpoints?gpuTypeId=NVIDIA%20A40&gpuTypeId=NVIDIA%20L4&grouping=gpuTypeId",
    );
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual([]);
  });
});

describe("management 404s name the id's field", () => {
  it("REST names the path's parameter and the id, for every method and resource", async () => {
    const cases: [string, string, string][] = [
      ["GET", "/endpoints/nope", "endpointId"],
      ["PATCH", "/endpoints/nope", "endpointId"],
      ["DELETE", "/endpoints/nope", "endpointId"],
      ["GET", "/templates/nope", "templateId"],
      ["PATCH", "/templates/nope", "templateId"],
      ["DELETE", "/templates/nope", "templateId"],
      ["GET", "/networkvolumes/nope", "networkVolumeId"],
      ["PATCH", "/networkvolumes/nope", "networkVolumeId"],
      ["DELETE", "/networkvolumes/nope", "networkVolumeId"],
      ["GET", "/containerregistryauth/nope", "containerRegistryAuthId"],
      ["DELETE", "/containerregistryauth/nope", "containerRegistryAuthId"],
      ["GET", "/pods/nope", "podId"],
      ["POST", "/pods/nope/stop", "podId"],
      ["DELETE", "/pods/nope", "podId"],
    ];
    for (const [method, path, field] of cases) {
      const body = method === "PATCH" ? {} : undefined;
      const reply = await api.rest<{ message: string; code: string; field?: string }>(method, path, body);
      expect([method, path, reply.status, reply.body.code, reply.body.field]).toEqual([
        method,
        path,
        404,
        "NOT_FOUND",
        field,
      ]);
      expect(reply.body.message).toMatch(/ nope not found$/);
    }
  });

  it("GraphQL names the argument that carried the id", async () => {
    const cases: [string, string][] = [
      ['mutation { deleteEndpoint(id: "nope") }', "id"],
      [
        'mutation { saveEndpoint(input: {id: "nope", name: "x", templateId: "t", gpuIds: "ADA_24"}) { id } }',
        "id",
      ],
      [
        'mutation { updateEndpointTemplate(input: {endpointId: "nope", templateId: "t"}) { id } }',
        "endpointId",
      ],
      [
        'mutation { saveTemplate(input: {id: "nope", name: "x", imageName: "i", containerDiskInGb: 5, volumeInGb: 0, dockerArgs: "", env: []}) { id } }',
        "id",
      ],
      ['mutation { deleteTemplate(templateName: "nope") }', "templateName"],
      ['mutation { deleteNetworkVolume(input: {id: "nope"}) }', "id"],
      ['mutation { updateNetworkVolume(input: {id: "nope", name: "x"}) { id } }', "id"],
      ['mutation { deleteRegistryAuth(registryAuthId: "nope") }', "registryAuthId"],
      ['mutation { updateRegistryAuth(input: {id: "nope", username: "u", password: "p"}) { id } }', "id"],
      ['mutation { podStop(input: {podId: "nope"}) { id } }', "podId"],
      ['mutation { podResume(input: {podId: "nope", gpuCount: 1}) { id } }', "podId"],
      ['mutation { podTerminate(input: {podId: "nope"}) }', "podId"],
      [
        'mutation { podEditJob(input: {podId: "nope", imageName: "i", containerDiskInGb: 5}) { id } }',
        "podId",
      ],
      ['mutation { secretDelete(id: "nope") }', "id"],
    ];
    for (const [query, field] of cases) {
      const reply = await api.gql(query);
      const error = reply.body.errors?.[0];
      expect([query, error?.extensions?.code, error?.extensions?.field]).toEqual([query, "NOT_FOUND", field]);
      expect(error?.message).toMatch(/nope"? not found$/);
    }
  });
});
