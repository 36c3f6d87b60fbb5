import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ErrorBody } from "../../../sdk/schemas/common";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "./client";

/**
 * One field, one reading: what REST and GraphQL take for the same field, how it is stored and read
 * back on either wire, and how a mistake in it is worded.
 */
let service: TestService;
let api: ReturnType<typeof clients>;
let templateId: string;

beforeAll(async () => {
  service = await withService();
  api = clients(service);
  const template = await api.rest<{ id: string }>("POST", "/templates", {
    name: "consistency",
    imageName: "runpodkit/echo",
    isServerless: true,
  });
  templateId = template.body.id;
});
afterAll(() => service.close());

type Refusal = ErrorBody & { field: string };
const SAVE_ENDPOINT = `mutation($input: EndpointInput!) { saveEndpoint(input: $input) { id gpuIds locations networkVolumeIds { networkVolumeId } } }`;
interface Saved {
  saveEndpoint: {
    id: string;
    gpuIds: string;
    locations: string | null;
    networkVolumeIds: { networkVolumeId: string }[];
  } | null;
}

describe("saveTemplate and dockerEntrypoint", () => {
  it("a GraphQL saveTemplate (a full replace) keeps the entrypoint set through REST, which its input cannot express", async () => {
    const created = await api.rest<{ id: string }>("POST", "/templates", {
      name: "with-entrypoint",
      imageName: "runpodkit/echo",
      isServerless: true,
      dockerEntrypoint: ["/usr/bin/tini", "--"],
      readme: "first",
    });
    const saved = await api.gql<{ saveTemplate: { id: string; readme: string } }>(
      `mutation($input: SaveTemplateInput!) { saveTemplate(input: $input) { id readme } }`,
      {
        input: {
          id: created.body.id,
          name: "with-entrypoint",
          imageName: "runpodkit/echo",
          readme: "second",
        },
      },
    );
    expect(saved.body.errors).toBeUndefined();
    const read = await api.rest<{ dockerEntrypoint: string[]; readme: string; volumeMountPath: string }>(
      "GET",
      `/templates/${created.body.id}`,
    );
    // The fields the input can express are replaced (readme), the entrypoint is kept.
    expect(read.body).toMatchObject({ dockerEntrypoint: ["/usr/bin/tini", "--"], readme: "second" });
  });
});

describe("gpuIds refusals", () => {
  it("an unknown pool id is named once, without a second line saying that no pool is given", async () => {
    const reply = await api.gql(SAVE_ENDPOINT, { input: { name: "e", templateId, gpuIds: "AMPERE_99" } });
    expect(reply.body.errors?.[0]).toMatchObject({
      message: `gpuIds: unknown GPU pool id "AMPERE_99"; expected one of AMPERE_16, AMPERE_24, ADA_24, AMPERE_48, ADA_48_PRO, AMPERE_80, ADA_80_PRO, or "-<GPU type>" to exclude one`,
      extensions: { code: "VALIDATION", field: "gpuIds" },
    });
    // Exclusions alone (every item known) still say what is missing.
    const exclusions = await api.gql(SAVE_ENDPOINT, {
      input: { name: "e", templateId, gpuIds: "-NVIDIA A40" },
    });
    expect(exclusions.body.errors?.[0]?.message).toBe("gpuIds: needs at least one GPU pool id");
  });

  it("a bad item given twice in a comma list is named once", async () => {
    const reply = await api.gql(SAVE_ENDPOINT, {
      input: { name: "e", templateId, gpuIds: "AMPERE_99, AMPERE_99", locations: "XX,XX" },
    });
    expect(reply.body.errors?.[0]?.message).toBe(
      `gpuIds: unknown GPU pool id "AMPERE_99"; expected one of AMPERE_16, AMPERE_24, ADA_24, AMPERE_48, ADA_48_PRO, AMPERE_80, ADA_80_PRO, or "-<GPU type>" to exclude one; locations: unknown location "XX"; expected one of CZ, FR, GB, NO, RO, US`,
    );
  });
});

describe("GPU types set through REST, read through GraphQL", () => {
  it("gpuTypeIds shows the stored types in priority order, also those no pool holds (gpuIds reads empty for them)", async () => {
    type Read = { myself: { endpoint: { gpuIds: string; gpuTypeIds: string[] } } };
    const read = (id: string) => api.gql<Read>(`{ myself { endpoint(id: "${id}") { gpuIds gpuTypeIds } } }`);
    const restOnly = await api.rest<{ id: string }>("POST", "/endpoints", {
      templateId,
      gpuTypeIds: ["NVIDIA B200", "NVIDIA A40"],
    });
    expect((await read(restOnly.body.id)).body.data.myself.endpoint).toEqual({
      gpuIds: "",
      gpuTypeIds: ["NVIDIA B200", "NVIDIA A40"],
    });
    const pools = await api.rest<{ id: string }>("POST", "/endpoints", {
      templateId,
      gpuTypeIds: ["NVIDIA L4", "NVIDIA A40"],
    });
    expect((await read(pools.body.id)).body.data.myself.endpoint).toEqual({
      gpuIds: "AMPERE_24,AMPERE_48,-NVIDIA RTX A5000,-NVIDIA GeForce RTX 3090,-NVIDIA RTX A6000",
      gpuTypeIds: ["NVIDIA L4", "NVIDIA A40"],
    });
  });
});

describe("lists are kept in one spelling, each item once", () => {
  it("GraphQL gpuIds and locations: items trimmed, repeats dropped; REST reads the same choice", async () => {
    const reply = await api.gql<Saved>(SAVE_ENDPOINT, {
      input: {
        name: "lists",
        templateId,
        gpuIds: "AMPERE_48, - NVIDIA RTX A6000,AMPERE_48 ",
        locations: " US , CZ,US",
      },
    });
    expect(reply.body.errors).toBeUndefined();
    const saved = reply.body.data.saveEndpoint;
    expect(saved).toMatchObject({ gpuIds: "AMPERE_48,-NVIDIA RTX A6000", locations: "US,CZ" });
    const read = await api.gql<{ myself: { endpoint: { gpuIds: string; locations: string } } }>(
      `query { myself { endpoint(id: "${saved?.id}") { gpuIds locations } } }`,
    );
    expect(read.body.data.myself.endpoint).toEqual({
      gpuIds: "AMPERE_48,-NVIDIA RTX A6000",
      locations: "US,CZ",
    });
    const rest = await api.rest<{ gpuTypeIds: string[] }>("GET", `/endpoints/${saved?.id}`);
    expect(rest.body.gpuTypeIds).toEqual(["NVIDIA A40"]);
  });

  it("REST gpuTypeIds, dataCenterIds and networkVolumeIds keep each item once, in the order first given", async () => {
    const volume = await api.rest<{ id: string }>("POST", "/networkvolumes", {
      name: "v-lists",
      size: 10,
      dataCenterId: "EU-RO-1",
    });
    const created = await api.rest<{
      id: string;
      gpuTypeIds: string[];
      dataCenterIds: string[];
      networkVolumeIds: string[];
      allowedCudaVersions: string[];
    }>("POST", "/endpoints", {
      templateId,
      gpuTypeIds: ["NVIDIA A40", "NVIDIA L4", "NVIDIA A40"],
      dataCenterIds: ["EU-RO-1", "US-TX-3", "EU-RO-1"],
      networkVolumeIds: [volume.body.id, volume.body.id],
      allowedCudaVersions: ["12.4", "12.4"],
    });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      gpuTypeIds: ["NVIDIA A40", "NVIDIA L4"],
      dataCenterIds: ["EU-RO-1", "US-TX-3"],
      networkVolumeIds: [volume.body.id],
      allowedCudaVersions: ["12.4"],
    });
    const patched = await api.rest<{ gpuTypeIds: string[] }>("PATCH", `/endpoints/${created.body.id}`, {
      gpuTypeIds: ["NVIDIA L4", "NVIDIA L4"],
    });
    expect(patched.body.gpuTypeIds).toEqual(["NVIDIA L4"]);
  });

  it("GraphQL networkVolumeIds: a volume given twice is attached once", async () => {
    const volume = await api.rest<{ id: string }>("POST", "/networkvolumes", {
      name: "v-gql",
      size: 10,
      dataCenterId: "EU-RO-1",
    });
    const entry = { networkVolumeId: volume.body.id };
    const reply = await api.gql<Saved>(SAVE_ENDPOINT, {
      input: { name: "vols", templateId, gpuIds: "AMPERE_16", networkVolumeIds: [entry, entry] },
    });
    expect(reply.body.errors).toBeUndefined();
    expect(reply.body.data.saveEndpoint?.networkVolumeIds).toEqual([entry]);
  });
});

describe("a volume given as networkVolumeId and in networkVolumeIds", () => {
  const refusal = (id: string) =>
    `networkVolumeIds: network volume ${id} is also the endpoint's networkVolumeId; give each volume once: as networkVolumeId, or in networkVolumeIds (volumes in several data centers), not both`;

  it("is refused naming networkVolumeIds on REST create and PATCH and GraphQL saveEndpoint; each alone is kept", async () => {
    const volume = await api.rest<{ id: string }>("POST", "/networkvolumes", {
      name: "v-both",
      size: 10,
      dataCenterId: "EU-RO-1",
    });
    const id = volume.body.id;
    const created = await api.rest<Refusal>("POST", "/endpoints", {
      templateId,
      networkVolumeId: id,
      networkVolumeIds: [id],
    });
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({ message: refusal(id), field: "networkVolumeIds" });
    const single = await api.rest<{ id: string; networkVolumeId: string }>("POST", "/endpoints", {
      templateId,
      networkVolumeId: id,
    });
    expect(single.body.networkVolumeId).toBe(id);
    const patched = await api.rest<Refusal>("PATCH", `/endpoints/${single.body.id}`, {
      networkVolumeIds: [id],
    });
    expect(patched.status).toBe(400);
    expect(patched.body).toMatchObject({ message: refusal(id), field: "networkVolumeIds" });
    // Moved from one field to the other in one change: taken.
    const moved = await api.rest<{ networkVolumeId: string | null; networkVolumeIds: string[] }>(
      "PATCH",
      `/endpoints/${single.body.id}`,
      { networkVolumeId: null, networkVolumeIds: [id] },
    );
    expect(moved.body).toMatchObject({ networkVolumeId: null, networkVolumeIds: [id] });
    const gql = await api.gql<Saved>(SAVE_ENDPOINT, {
      input: {
        name: "both",
        templateId,
        gpuIds: "AMPERE_16",
        networkVolumeId: id,
        networkVolumeIds: [{ networkVolumeId: id }],
      },
    });
    expect(gql.body.errors?.[0]).toMatchObject({
      message: refusal(id),
      extensions: { code: "VALIDATION", field: "networkVolumeIds" },
    });
  });
});

describe("ports are kept each once", () => {
  it("templates and pods, on REST and GraphQL: a port given twice is one, in the order first given", async () => {
    const rest = await api.rest<{ id: string; ports: string[] }>("POST", "/templates", {
      name: "ports-twice",
      imageName: "img",
      ports: ["8888/http", "22/tcp", "8888/http"],
    });
    expect(rest.body.ports).toEqual(["8888/http", "22/tcp"]);
    const patched = await api.rest<{ ports: string[] }>("PATCH", `/templates/${rest.body.id}`, {
      ports: ["22/tcp", "22/tcp"],
    });
    expect(patched.body.ports).toEqual(["22/tcp"]);
    const gql = await api.gql<{ saveTemplate: { ports: string } }>(
      `mutation { saveTemplate(input: {name: "ports-gql", imageName: "img", ports: "8888/http, 8888/http,22/tcp"}) { ports } }`,
    );
    expect(gql.body.data.saveTemplate.ports).toBe("8888/http,22/tcp");
    const pod = await api.rest<{ id: string; ports: string[] }>("POST", "/pods", {
      imageName: "img",
      gpuTypeIds: ["NVIDIA A40"],
      ports: ["8888/http", "8888/http"],
    });
    expect(pod.body.ports).toEqual(["8888/http"]);
    const edited = await api.rest<{ ports: string[] }>("PATCH", `/pods/${pod.body.id}`, {
      ports: ["22/tcp", "22/tcp"],
    });
    expect(edited.body.ports).toEqual(["22/tcp"]);
  });
});

describe("a template's name is stored without surrounding white space", () => {
  it("REST create and PATCH, and GraphQL saveTemplate, trim it; a name of only spaces is refused naming name", async () => {
    const created = await api.rest<{ id: string; name: string }>("POST", "/templates", {
      name: " web ",
      imageName: "img",
    });
    expect(created.status).toBe(200);
    expect(created.body.name).toBe("web");
    const taken = await api.rest<Refusal>("POST", "/templates", { name: "web\t", imageName: "img" });
    expect(taken.status).toBe(400);
    expect(taken.body).toMatchObject({
      field: "name",
      message: 'name: a template named "web" already exists',
    });
    const patched = await api.rest<{ name: string }>("PATCH", `/templates/${created.body.id}`, {
      name: "\u00a0web-2 ",
    });
    expect(patched.body.name).toBe("web-2");
    const saved = await api.gql<{ saveTemplate: { name: string } }>(
      `mutation { saveTemplate(input: {id: "${created.body.id}", name: "  web-3  ", imageName: "img"}) { name } }`,
    );
    expect(saved.body.data?.saveTemplate.name).toBe("web-3");
    const blank = await api.rest<Refusal>("POST", "/templates", { name: "   ", imageName: "img" });
    expect(blank.status).toBe(400);
    expect(blank.body).toMatchObject({
      field: "name",
      message: "name: must not be empty (nor only white space)",
    });
    const blankGql = await api.gql(`mutation { saveTemplate(input: {name: " ", imageName: "img"}) { id } }`);
    expect(blankGql.body.errors?.[0]).toMatchObject({ extensions: { code: "VALIDATION", field: "name" } });
    // "café" with a combining accent (NFD) is the "café" typed with "é" (NFC): one name.
    const composed = await api.rest<{ id: string; name: string }>("POST", "/templates", {
      name: "caf\u00e9",
      imageName: "img",
    });
    expect(composed.body.name).toBe("caf\u00e9");
    const decomposed = await api.rest<Refusal>("POST", "/templates", {
      name: "cafe\u0301",
      imageName: "img",
    });
    expect(decomposed.status).toBe(400);
    expect(decomposed.body).toMatchObject({ code: "CONFLICT", field: "name" });
    const byName = await api.gql(`mutation($name: String!) { deleteTemplate(templateName: $name) }`, {
      name: "cafe\u0301",
    });
    expect(byName.body.errors).toBeUndefined();
    expect((await api.rest("GET", `/templates/${composed.body.id}`)).status).toBe(404);
    // deleteTemplate by the name as the user wrote it finds the trimmed one.
    const deleted = await api.gql<{ deleteTemplate: boolean | null }>(
      `mutation { deleteTemplate(templateName: " web-3 ") }`,
    );
    expect(deleted.body.errors).toBeUndefined();
    expect((await api.rest("GET", `/templates/${created.body.id}`)).status).toBe(404);
  });
});

describe("null for a field that takes none", () => {
  it("a REST PATCH giving null or an empty reference says what the field takes and that leaving it out keeps it", async () => {
    const created = await api.rest<{ id: string }>("POST", "/endpoints", { templateId });
    const reply = await api.rest<Refusal>("PATCH", `/endpoints/${created.body.id}`, {
      name: null,
      scalerType: null,
    });
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({
      field: "name",
      message:
        "name: is null, which it does not take: give a string, or leave it out where it may be left out (an update keeps the current value); scalerType: is null, which it does not take: give one of QUEUE_DELAY, REQUEST_COUNT, or leave it out where it may be left out (an update keeps the current value)",
    });
    // "" names no volume: refused, saying what to send (GraphQL reads "" as not given).
    const empty = await api.rest<Refusal>("PATCH", `/endpoints/${created.body.id}`, { networkVolumeId: "" });
    expect(empty.body).toMatchObject({
      field: "networkVolumeId",
      message:
        "networkVolumeId: is empty: give a network volume id, or leave it out (in an update, null removes it)",
    });
    const template = await api.rest<Refusal>("PATCH", `/templates/${templateId}`, {
      containerRegistryAuthId: "",
    });
    expect(template.body).toMatchObject({
      field: "containerRegistryAuthId",
      message:
        "containerRegistryAuthId: is empty: give a container registry auth id, or leave it out (in an update, null removes it)",
    });
    // Where null is a value (detach the volume), it is taken.
    const detached = await api.rest<{ networkVolumeId: string | null }>(
      "PATCH",
      `/endpoints/${created.body.id}`,
      {
        networkVolumeId: null,
      },
    );
    expect(detached.body.networkVolumeId).toBeNull();
  });
});

describe("a delete refused while the resource is in use", () => {
  it("names the users and what to do first (a registry auth used by a template), on REST and GraphQL", async () => {
    const auth = await api.rest<{ id: string }>("POST", "/containerregistryauth", {
      name: "in-use-auth",
      username: "u",
      password: "p",
    });
    const template = await api.rest<{ id: string }>("POST", "/templates", {
      name: "uses-auth",
      imageName: "img",
      containerRegistryAuthId: auth.body.id,
    });
    const message = `container registry auth ${auth.body.id} is used by template(s) ${template.body.id}; set their containerRegistryAuthId to another one (or null) first`;
    const rest = await api.rest<Refusal>("DELETE", `/containerregistryauth/${auth.body.id}`);
    expect(rest.status).toBe(400);
    expect(rest.body).toMatchObject({ code: "IN_USE", message, field: "containerRegistryAuthId" });
    const gql = await api.gql(`mutation { deleteRegistryAuth(registryAuthId: "${auth.body.id}") }`);
    expect(gql.body.errors?.[0]).toMatchObject({ message, extensions: { code: "IN_USE" } });
    await api.rest("PATCH", `/templates/${template.body.id}`, { containerRegistryAuthId: null });
    expect((await api.rest("DELETE", `/containerregistryauth/${auth.body.id}`)).status).toBe(204);
  });
});

describe("names are printable text", () => {
  const refusal =
    "name: must be printable text: no control character (such as NUL, a tab or a line break) and no unpaired UTF-16 surrogate";

  it("a name with a control character or an unpaired surrogate is refused on REST and GraphQL, naming name; other Unicode is kept", async () => {
    // JSON escapes, so the body carries the characters themselves (a lone surrogate too).
    for (const name of ["a\\u0000b", "line\\nbreak", "tab\\there", "x\\ud800", "\\udc00y"]) {
      for (const [path, extra] of [
        ["/templates", `"imageName":"img"`],
        ["/endpoints", `"templateId":"${templateId}"`],
        ["/networkvolumes", `"size":1,"dataCenterId":"EU-RO-1"`],
        ["/containerregistryauth", `"username":"u","password":"p"`],
      ] as const) {
        const reply = await api.rest<Refusal>("POST", path, `{"name":"${name}",${extra}}`);
        expect(reply.status, `${path} ${name}`).toBe(400);
        expect(reply.body).toMatchObject({ message: refusal, field: "name" });
      }
    }
    const gql = await api.gql(SAVE_ENDPOINT, {
      input: { name: "a\u0000b", templateId, gpuIds: "AMPERE_16" },
    });
    expect(gql.body.errors?.[0]).toMatchObject({
      message: refusal,
      extensions: { code: "VALIDATION", field: "name" },
    });
    const template = await api.gql(
      `mutation($name: String!) { saveTemplate(input: {name: $name, imageName: "img"}) { id } }`,
      { name: "x\ud800" },
    );
    expect(template.body.errors?.[0]).toMatchObject({ message: refusal });
    const kept = await api.rest<{ name: string }>("POST", "/templates", {
      name: "café 🚀 日本語 עברית",
      imageName: "img",
    });
    expect(kept.body.name).toBe("café 🚀 日本語 עברית");
  });
});

describe("volumeMountPath is an absolute path", () => {
  const refusal = (path: string) =>
    `volumeMountPath: must be an absolute path (starting with "/", e.g. "/workspace"), not ${JSON.stringify(path)}`;

  it('REST templates and pods refuse a relative one, naming the field; an absolute one and a template\'s "" are kept', async () => {
    const template = await api.rest<Refusal>("POST", "/templates", {
      name: "relative",
      imageName: "img",
      volumeMountPath: "workspace",
    });
    expect(template.status).toBe(400);
    expect(template.body).toMatchObject({ message: refusal("workspace"), field: "volumeMountPath" });
    const pod = await api.rest<Refusal>("POST", "/pods", { imageName: "img", volumeMountPath: "data/x" });
    expect(pod.status).toBe(400);
    expect(pod.body).toMatchObject({ message: refusal("data/x"), field: "volumeMountPath" });
    const ok = await api.rest<{ id: string; volumeMountPath: string }>("POST", "/templates", {
      name: "absolute",
      imageName: "img",
      volumeMountPath: "/data/x",
    });
    expect(ok.body.volumeMountPath).toBe("/data/x");
    const patch = await api.rest<Refusal>("PATCH", `/templates/${ok.body.id}`, { volumeMountPath: "./x" });
    expect(patch.body).toMatchObject({ message: refusal("./x"), field: "volumeMountPath" });
    const none = await api.rest<{ volumeMountPath: string }>("POST", "/templates", {
      name: "no-volume",
      imageName: "img",
      volumeMountPath: "",
    });
    expect(none.body.volumeMountPath).toBe("");
  });

  it("GraphQL saveTemplate and pod deploys refuse the same", async () => {
    const template = await api.gql(
      `mutation { saveTemplate(input: {name: "relative-gql", imageName: "img", volumeMountPath: "workspace"}) { id } }`,
    );
    expect(template.body.errors?.[0]).toMatchObject({
      message: refusal("workspace"),
      extensions: { code: "VALIDATION", field: "volumeMountPath" },
    });
    const pod = await api.gql(
      `mutation { deployCpuPod(input: {instanceId: "cpu3c-2-4", imageName: "img", volumeMountPath: "data"}) { id } }`,
    );
    expect(pod.body.errors?.[0]).toMatchObject({
      message: refusal("data"),
      extensions: { code: "VALIDATION", field: "volumeMountPath" },
    });
  });

  it('a path with "." or ".." parts or "//" is refused on REST and GraphQL, naming the field and the plain path', async () => {
    const plain = (path: string, written: string) =>
      `volumeMountPath: must not have "." or ".." parts or "//": write ${JSON.stringify(written)}, not ${JSON.stringify(path)}`;
    const cases = [
      ["/a/../b", "/b"],
      ["/a/./b", "/a/b"],
      ["//a", "/a"],
      ["/a//b/", "/a/b/"],
      ["/..", "/"],
    ] as const;
    for (const [path, written] of cases) {
      const template = await api.rest<Refusal>("POST", "/templates", {
        name: `dots-${path}`,
        imageName: "img",
        volumeMountPath: path,
      });
      expect(template.status).toBe(400);
      expect(template.body).toMatchObject({ message: plain(path, written), field: "volumeMountPath" });
      const pod = await api.rest<Refusal>("POST", "/pods", { imageName: "img", volumeMountPath: path });
      expect(pod.status).toBe(400);
      expect(pod.body).toMatchObject({ message: plain(path, written), field: "volumeMountPath" });
      const gql = await api.gql(
        `mutation($path: String) { saveTemplate(input: {name: "dots-gql", imageName: "img", volumeMountPath: $path}) { id } }`,
        { path },
      );
      expect(gql.body.errors?.[0]).toMatchObject({
        message: plain(path, written),
        extensions: { code: "VALIDATION", field: "volumeMountPath" },
      });
    }
    const kept = await api.rest<{ id: string; volumeMountPath: string }>("POST", "/templates", {
      name: "plain-path",
      imageName: "img",
      volumeMountPath: "/data/x.d/..y/",
    });
    expect(kept.body.volumeMountPath).toBe("/data/x.d/..y/");
    const patch = await api.rest<Refusal>("PATCH", `/templates/${kept.body.id}`, {
      volumeMountPath: "/data/./x",
    });
    expect(patch.body).toMatchObject({ message: plain("/data/./x", "/data/x"), field: "volumeMountPath" });
  });

  it("a path past its bound is named for its length only", async () => {
    const reply = await api.rest<Refusal>("POST", "/templates", {
      name: "long",
      imageName: "img",
      volumeMountPath: "w".repeat(5_000),
    });
    expect(reply.body.message).toBe("volumeMountPath: Too big: expected string to have <=4096 characters");
  });
});

describe("a JSON key given twice", () => {
  it("REST: an env (or any object) repeating a key is refused naming it, not stored with the last value", async () => {
    const env = await api.rest<Refusal>(
      "POST",
      "/templates",
      '{"name":"dup-env","imageName":"img","env":{"TOKEN":"a","OTHER":"b","\\u0054OKEN":"c"}}',
    );
    expect(env.status).toBe(400);
    expect(env.body).toMatchObject({
      message:
        'env.TOKEN: the key "TOKEN" is given twice in env; give each key once (JSON would keep only the last value)',
      field: "env.TOKEN",
    });
    const top = await api.rest<Refusal>(
      "POST",
      "/endpoints",
      `{"templateId":"${templateId}","workersMax":1,"workersMax":5}`,
    );
    expect(top.status).toBe(400);
    expect(top.body.field).toBe("workersMax");
    expect(top.body.message).toContain('the key "workersMax" is given twice in the body');
    // The same key in different objects is no repeat.
    const fine = await api.rest<{ env: Record<string, string> }>(
      "POST",
      "/templates",
      '{"name":"env-names","imageName":"img","env":{"name":"1","imageName":"2"}}',
    );
    expect(fine.body.env).toEqual({ name: "1", imageName: "2" });
    const list = await api.rest("GET", "/templates");
    expect(JSON.stringify(list.body)).not.toContain("dup-env");
  });

  it("GraphQL: a key repeated in the variables is refused the same way", async () => {
    const reply = await api.send<{ errors: { message: string; extensions: { field: string } }[] }>(
      `${service.graphqlUrl}?api_key=${encodeURIComponent(service.apiKey)}`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"query":"mutation($i: SaveTemplateInput!) { saveTemplate(input: $i) { id } }","variables":{"i":{"name":"a","imageName":"img","name":"b"}}}',
      },
    );
    expect(reply.body.errors[0]).toMatchObject({
      message:
        'variables.i.name: the key "name" is given twice in variables.i; give each key once (JSON would keep only the last value)',
      extensions: { field: "variables.i.name" },
    });
  });
});

describe("every resource's name is trimmed and composed (the template rule)", () => {
  /** " café " with "e" and a combining accent (NFD), and surrounding spaces. */
  const WRITTEN = " cafe\u0301 ";
  const STORED = "caf\u00e9";

  it("REST creates and updates of endpoints, volumes, registry auths and pods store the canonical spelling", async () => {
    const endpoint = await api.rest<{ id: string; name: string }>("POST", "/endpoints", {
      name: WRITTEN,
      templateId,
    });
    expect([endpoint.status, endpoint.body.name]).toEqual([200, STORED]);
    const volume = await api.rest<{ id: string; name: string }>("POST", "/networkvolumes", {
      name: WRITTEN,
      size: 10,
      dataCenterId: "US-KS-2",
    });
    expect([volume.status, volume.body.name]).toEqual([200, STORED]);
    const auth = await api.rest<{ id: string; name: string }>("POST", "/containerregistryauth", {
      name: `${WRITTEN}rest`,
      username: "u",
      password: "p",
    });
    expect([auth.status, auth.body.name]).toEqual([200, `${STORED} rest`]);
    const pod = await api.rest<{ id: string; name: string }>("POST", "/pods", {
      name: WRITTEN,
      imageName: "repo/img:1",
      gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
      cloudType: "COMMUNITY",
    });
    expect([pod.status, pod.body.name]).toEqual([200, STORED]);
    for (const path of [
      `/endpoints/${endpoint.body.id}`,
      `/networkvolumes/${volume.body.id}`,
      `/pods/${pod.body.id}`,
    ]) {
      const renamed = await api.rest<{ name: string }>("PATCH", path, { name: "\u00a0web\t" });
      expect([path, renamed.status, renamed.body.name]).toEqual([path, 200, "web"]);
      const blank = await api.rest<Refusal>("PATCH", path, { name: " \u3000 " });
      expect([path, blank.status, blank.body.field, blank.body.message]).toEqual([
        path,
        400,
        "name",
        "name: must not be empty (nor only white space)",
      ]);
    }
    for (const [path, body] of [
      ["/endpoints", { name: "  ", templateId }],
      ["/networkvolumes", { name: "  ", size: 10, dataCenterId: "US-KS-2" }],
      ["/containerregistryauth", { name: "  ", username: "u", password: "p" }],
    ] as const) {
      const blank = await api.rest<Refusal>("POST", path, body);
      expect([path, blank.status, blank.body.field]).toEqual([path, 400, "name"]);
    }
  });

  it("GraphQL saveEndpoint, createNetworkVolume, updateNetworkVolume, saveRegistryAuth and pod deploys do the same", async () => {
    const endpoint = await api.gql<{ saveEndpoint: { name: string } }>(
      "mutation($input: EndpointInput!) { saveEndpoint(input: $input) { name } }",
      { input: { name: WRITTEN, templateId, gpuIds: "ADA_24" } },
    );
    expect(endpoint.body.data?.saveEndpoint.name).toBe(STORED);
    const volume = await api.gql<{ createNetworkVolume: { id: string; name: string } }>(
      "mutation($input: CreateNetworkVolumeInput!) { createNetworkVolume(input: $input) { id name } }",
      { input: { name: WRITTEN, size: 10, dataCenterId: "US-KS-2" } },
    );
    expect(volume.body.data?.createNetworkVolume.name).toBe(STORED);
    const renamed = await api.gql<{ updateNetworkVolume: { name: string } }>(
      "mutation($input: UpdateNetworkVolumeInput!) { updateNetworkVolume(input: $input) { name } }",
      { input: { id: volume.body.data?.createNetworkVolume.id, name: " web " } },
    );
    expect(renamed.body.data?.updateNetworkVolume.name).toBe("web");
    const auth = await api.gql<{ saveRegistryAuth: { name: string } }>(
      "mutation($input: SaveRegistryAuthInput!) { saveRegistryAuth(input: $input) { name } }",
      { input: { name: `${WRITTEN}gql`, username: "u", password: "p" } },
    );
    expect(auth.body.data?.saveRegistryAuth.name).toBe(`${STORED} gql`);
    const pod = await api.gql<{ podFindAndDeployOnDemand: { name: string } }>(
      "mutation($input: PodFindAndDeployOnDemandInput) { podFindAndDeployOnDemand(input: $input) { name } }",
      {
        input: {
          name: WRITTEN,
          gpuTypeIdList: ["NVIDIA RTX A6000"],
          cloudType: "COMMUNITY",
          gpuCount: 1,
          imageName: "i",
        },
      },
    );
    expect(pod.body.data?.podFindAndDeployOnDemand.name).toBe(STORED);
    const blank = await api.gql("mutation($input: EndpointInput!) { saveEndpoint(input: $input) { name } }", {
      input: { name: " ", templateId, gpuIds: "ADA_24" },
    });
    expect(blank.body.errors?.[0]).toMatchObject({ extensions: { code: "VALIDATION", field: "name" } });
  });

  it("the 191-character bound counts the composed name: 191 accents typed as combining marks fit", async () => {
    const decomposed = "e\u0301".repeat(191);
    const fits = await api.rest<{ name: string }>("POST", "/networkvolumes", {
      name: decomposed,
      size: 10,
      dataCenterId: "US-KS-2",
    });
    expect([fits.status, fits.body.name]).toEqual([200, "\u00e9".repeat(191)]);
    const over = await api.rest<Refusal>("POST", "/networkvolumes", {
      name: `${decomposed}e`,
      size: 10,
      dataCenterId: "US-KS-2",
    });
    expect([over.status, over.body.field]).toEqual([400, "name"]);
  });

  it("a registry auth's name is unique in either spelling", async () => {
    const first = await api.rest<{ name: string }>("POST", "/containerregistryauth", {
      name: "caf\u00e9-unique",
      username: "u",
      password: "p",
    });
    expect(first.status).toBe(200);
    for (const name of ["cafe\u0301-unique", " caf\u00e9-unique "]) {
      const again = await api.rest<Refusal & { code: string }>("POST", "/containerregistryauth", {
        name,
        username: "u",
        password: "p",
      });
      expect([name, again.status, again.body.code, again.body.field]).toEqual([
        name,
        400,
        "CONFLICT",
        "name",
      ]);
    }
  });
});
