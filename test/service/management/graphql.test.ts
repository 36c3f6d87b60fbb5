import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { GqlEndpoint } from "../../../sdk/schemas/endpoint";
import { NEXT_GEN_STORAGE_TYPE, STANDARD_STORAGE_TYPE } from "../../../sdk/schemas/network-volume";
import { START_SCRIPT_MAX_LENGTH } from "../../../sdk/schemas/template";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "./client";

let service: TestService;
let api: ReturnType<typeof clients>;

const ENDPOINT_FIELDS = `id name userId templateId gpuIds idleTimeout locations flashBootType scalerType scalerValue
  workersMin workersMax workersStandby networkVolumeId hubReleaseId modelName type computeType gpuCount
  executionTimeoutMs env { key value } allowedCudaVersions instanceIds version createdAt pods { id desiredStatus }`;

const SAVE_ENDPOINT = `mutation Save($input: EndpointInput!) { saveEndpoint(input: $input) { ${ENDPOINT_FIELDS} } }`;

async function saveTemplate(name: string, extra: Record<string, unknown> = {}) {
  const reply = await api.gql<{ saveTemplate: { id: string } }>(
    `mutation($input: SaveTemplateInput!) { saveTemplate(input: $input) { id } }`,
    { input: { name, imageName: "repo/worker:1", isServerless: true, ...extra } },
  );
  expect(reply.body.errors).toBeUndefined();
  return reply.body.data.saveTemplate.id;
}

async function saveEndpoint(input: Record<string, unknown>) {
  const reply = await api.gql<{ saveEndpoint: GqlEndpoint }>(SAVE_ENDPOINT, { input });
  expect(reply.status).toBe(200);
  expect(reply.body.errors).toBeUndefined();
  return GqlEndpoint.parse(reply.body.data.saveEndpoint);
}

beforeAll(async () => {
  service = await withService();
  api = clients(service);
});
afterAll(() => service.close());

describe("GraphQL endpoints", () => {
  it("saveEndpoint without id creates with defaults; every field reads back", async () => {
    const templateId = await saveTemplate("g-create");
    const volume = await api.gql<{ createNetworkVolume: { id: string } }>(
      `mutation { createNetworkVolume(input: {name: "cache", size: 10, dataCenterId: "US-TX-3"}) { id } }`,
    );
    const networkVolumeId = volume.body.data.createNetworkVolume.id;
    const created = await saveEndpoint({
      name: "llm",
      templateId,
      gpuIds: "AMPERE_48,-NVIDIA RTX A6000",
      locations: "US,FR",
      flashBootType: "FLASHBOOT",
      scalerType: "REQUEST_COUNT",
      scalerValue: 2,
      workersMin: 0,
      workersMax: 5,
      workersStandby: 2,
      networkVolumeId,
      hubReleaseId: "hub-release-1",
      modelName: "https://huggingface.co/org/model",
      type: "LB",
      gpuCount: 2,
      executionTimeoutMs: 120_000,
      env: [{ key: "MODEL", value: "small" }],
      allowedCudaVersions: "12.4,12.5",
      idleTimeout: 60,
    });
    expect(created).toMatchObject({
      name: "llm",
      gpuIds: "AMPERE_48,-NVIDIA RTX A6000",
      locations: "US,FR",
      flashBootType: "FLASHBOOT",
      scalerType: "REQUEST_COUNT",
      workersMax: 5,
      workersStandby: 2,
      networkVolumeId,
      hubReleaseId: "hub-release-1",
      modelName: "https://huggingface.co/org/model",
      type: "LB",
      computeType: "GPU",
      gpuCount: 2,
      executionTimeoutMs: 120_000,
      env: [{ key: "MODEL", value: "small" }],
      allowedCudaVersions: "12.4,12.5",
      idleTimeout: 60,
      pods: [],
    });
    const minimal = await saveEndpoint({ name: "min", templateId, gpuIds: "AMPERE_16" });
    expect(minimal).toMatchObject({
      idleTimeout: 5,
      flashBootType: "OFF",
      scalerType: "QUEUE_DELAY",
      scalerValue: 4,
      workersMin: 0,
      workersMax: 3,
      type: "QB",
      gpuCount: 1,
      executionTimeoutMs: 600_000,
      env: [],
      networkVolumeId: null,
      locations: null,
    });
  });

  it("saveEndpoint with id is a FULL REPLACE: omitted fields return to their defaults", async () => {
    const templateId = await saveTemplate("g-replace");
    const first = await saveEndpoint({
      name: "r",
      templateId,
      gpuIds: "ADA_24",
      idleTimeout: 100,
      workersMax: 7,
      flashBootType: "FLASHBOOT",
      env: [{ key: "A", value: "1" }],
    });
    const replaced = await saveEndpoint({
      id: first.id,
      name: "r2",
      templateId,
      gpuIds: "ADA_24",
      workersMax: 0,
    });
    expect(replaced).toMatchObject({
      id: first.id,
      name: "r2",
      idleTimeout: 5,
      workersMax: 0,
      flashBootType: "OFF",
      env: [],
      version: first.version + 1, // env changed
    });
    expect(replaced.createdAt).toBe(first.createdAt);
  });

  it("saveEndpoint keeps networkVolumeIds and minCudaVersion when omitted; null clears both, [] clears the volumes", async () => {
    const templateId = await saveTemplate("g-volumes");
    const volumeIn = async (dataCenterId: string) => {
      const reply = await api.gql<{ createNetworkVolume: { id: string } }>(
        `mutation($input: CreateNetworkVolumeInput!) { createNetworkVolume(input: $input) { id } }`,
        { input: { name: `v-${dataCenterId}`, size: 10, dataCenterId } },
      );
      return reply.body.data.createNetworkVolume.id;
    };
    const [ro, tx] = [await volumeIn("EU-RO-1"), await volumeIn("US-TX-3")];
    const required = { name: "vols", templateId, gpuIds: "AMPERE_16" };
    type Saved = {
      id: string;
      minCudaVersion: string | null;
      networkVolumeIds: { networkVolumeId: string }[];
    };
    const volumesOf = (e: Saved) => e.networkVolumeIds.map((v) => v.networkVolumeId);
    const SAVE = `mutation Save($input: EndpointInput!) { saveEndpoint(input: $input) {
      id minCudaVersion networkVolumeIds { networkVolumeId dataCenterId } } }`;
    const save = async (input: Record<string, unknown>) => {
      const reply = await api.gql<{ saveEndpoint: Saved }>(SAVE, {
        input,
      });
      expect(reply.body.errors).toBeUndefined();
      return reply.body.data.saveEndpoint;
    };
    const created = await save({
      ...required,
      networkVolumeIds: [{ networkVolumeId: ro }, { networkVolumeId: tx }],
      minCudaVersion: "12.1",
    });
    expect(volumesOf(created)).toEqual([ro, tx]);
    const kept = await save({ ...required, id: created.id });
    expect(kept).toMatchObject({ minCudaVersion: "12.1" });
    expect(volumesOf(kept)).toEqual([ro, tx]);
    // null is "no value": it clears, as minCudaVersion's null does (it was taken as "not sent").
    const cleared = await save({ ...required, id: created.id, networkVolumeIds: null, minCudaVersion: null });
    expect(cleared).toMatchObject({ minCudaVersion: null, networkVolumeIds: [] });
    const rest = await api.rest<{ networkVolumeIds: string[] }>("GET", `/endpoints/${created.id}`);
    expect(rest.body.networkVolumeIds).toEqual([]);
    await save({ ...required, id: created.id, networkVolumeIds: [{ networkVolumeId: ro }] });
    expect(volumesOf(await save({ ...required, id: created.id, networkVolumeIds: [] }))).toEqual([]);
    // An inline null literal reads the same as a null variable.
    await save({ ...required, id: created.id, networkVolumeIds: [{ networkVolumeId: tx }] });
    const inline = await api.gql<{ saveEndpoint: { networkVolumeIds: unknown[] } }>(
      `mutation { saveEndpoint(input: {id: "${created.id}", name: "vols", templateId: "${templateId}",
         gpuIds: "AMPERE_16", networkVolumeIds: null}) { networkVolumeIds { networkVolumeId } } }`,
    );
    expect(inline.body.data.saveEndpoint.networkVolumeIds).toEqual([]);
  });

  it("reads one endpoint with myself { endpoint(id:) } and null for an unknown id", async () => {
    const templateId = await saveTemplate("g-read");
    const e = await saveEndpoint({ name: "one", templateId, gpuIds: "AMPERE_24" });
    const reply = await api.gql<{
      myself: { endpoint: { id: string; pods: unknown[] } | null; missing: null };
    }>(
      `query($id: String!) { myself { endpoint(id: $id) { id pods { desiredStatus } } missing: endpoint(id: "nope") { id } } }`,
      { id: e.id },
    );
    expect(reply.body.data.myself.endpoint).toEqual({ id: e.id, pods: [] });
    expect(reply.body.data.myself.missing).toBeNull();
  });

  it("refuses invalid gpuIds, locations, scalerType and references, with codes and fields", async () => {
    const templateId = await saveTemplate("g-invalid");
    const bad: [Record<string, unknown>, string][] = [
      [{ gpuIds: "AMPERE_99" }, "gpuIds"],
      [{ gpuIds: "AMPERE_16,-NVIDIA GTX 1" }, "gpuIds"],
      [{ locations: "MARS" }, "locations"],
      [{ scalerType: "CPU" }, "scalerType"],
      [{ networkVolumeId: "missingvol" }, "networkVolumeId"],
      [{ templateId: "missingtpl" }, "templateId"],
    ];
    for (const [override, field] of bad) {
      const reply = await api.gql(SAVE_ENDPOINT, {
        input: { name: "x", templateId, gpuIds: "AMPERE_16", ...override },
      });
      expect(reply.status).toBe(200);
      expect(reply.body.data).toEqual({ saveEndpoint: null });
      expect(reply.body.errors?.[0]?.extensions).toEqual({ code: "VALIDATION", field });
      expect(reply.body.errors?.[0]?.message).toContain(field);
    }
  });

  it("refuses an env key given twice (endpoints, templates, pods), naming the key and both entries", async () => {
    const templateId = await saveTemplate("g-dup-env");
    const env = [
      { key: "A", value: "1" },
      { key: "B", value: "2" },
      { key: "A", value: "3" },
    ];
    const message = 'env.2.key: "A" is given twice (entries 0 and 2); give each variable once';
    const calls: [string, string, Record<string, unknown>][] = [
      [
        "saveEndpoint",
        SAVE_ENDPOINT,
        { input: { name: "dup", templateId, gpuIds: "AMPERE_16", workersMax: 0, env } },
      ],
      [
        "saveTemplate",
        "mutation($input: SaveTemplateInput!) { saveTemplate(input: $input) { id } }",
        { input: { name: "dup-t", imageName: "i", env } },
      ],
      [
        "podFindAndDeployOnDemand",
        "mutation($input: PodFindAndDeployOnDemandInput!) { podFindAndDeployOnDemand(input: $input) { id } }",
        { input: { name: "dup-p", imageName: "i", gpuTypeId: "NVIDIA A40", gpuCount: 1, env } },
      ],
    ];
    for (const [operation, document, variables] of calls) {
      const reply = await api.gql(document, variables);
      expect(reply.status).toBe(200);
      expect(reply.body.data).toEqual({ [operation]: null });
      expect(reply.body.errors?.[0]).toMatchObject({
        message,
        extensions: { code: "VALIDATION", field: "env.2.key" },
      });
    }
    // Nothing was written: no endpoint, template or pod of these names.
    const mine = await api.gql<{
      myself: { endpoints: { name: string }[]; podTemplates: { name: string }[] };
    }>("{ myself { endpoints { name } podTemplates { name } } }");
    expect(mine.body.data.myself.endpoints.map((e) => e.name)).not.toContain("dup");
    expect(mine.body.data.myself.podTemplates.map((t) => t.name)).not.toContain("dup-t");
    const pods = await api.rest<{ name: string }[]>("GET", "/pods");
    expect(pods.body.map((p) => p.name)).not.toContain("dup-p");
    // Distinct keys (and the same value twice) are taken.
    const saved = await saveEndpoint({
      name: "distinct",
      templateId,
      gpuIds: "AMPERE_16",
      workersMax: 0,
      env: [
        { key: "A", value: "1" },
        { key: "a", value: "1" },
      ],
    });
    expect(saved.env).toEqual([
      { key: "A", value: "1" },
      { key: "a", value: "1" },
    ]);
  });

  it("answers graphql-js validation errors as HTTP 200 with errors", async () => {
    const unknownEnum = await api.gql(
      `mutation { saveEndpoint(input: {name: "x", templateId: "t", gpuIds: "AMPERE_16", flashBootType: TURBO}) { id } }`,
    );
    expect(unknownEnum.status).toBe(200);
    expect(unknownEnum.body.errors?.[0]?.extensions?.code).toBe("GRAPHQL_VALIDATION");
    const missing = await api.gql(
      `mutation { saveEndpoint(input: {name: "x", gpuIds: "AMPERE_16"}) { id } }`,
    );
    expect(missing.body.errors?.[0]?.message).toContain("templateId");
    const syntax = await api.gql(`{ myself { `);
    expect(syntax.status).toBe(200);
    expect(syntax.body.errors?.length).toBe(1);
  });

  it("deleteEndpoint answers null, and is refused unless workersMin = workersMax = 0", async () => {
    const templateId = await saveTemplate("g-delete");
    const e = await saveEndpoint({
      name: "d",
      templateId,
      gpuIds: "AMPERE_16",
      workersMin: 1,
      workersMax: 2,
    });
    const refused = await api.gql(`mutation($id: String!) { deleteEndpoint(id: $id) }`, { id: e.id });
    expect(refused.body.errors?.[0]?.extensions?.code).toBe("PRECONDITION");
    await saveEndpoint({
      id: e.id,
      name: "d",
      templateId,
      gpuIds: "AMPERE_16",
      workersMin: 0,
      workersMax: 0,
    });
    const deleted = await api.gql(`mutation($id: String!) { deleteEndpoint(id: $id) }`, { id: e.id });
    expect(deleted.body).toEqual({ data: { deleteEndpoint: null } });
    const again = await api.gql(`mutation($id: String!) { deleteEndpoint(id: $id) }`, { id: e.id });
    expect(again.body.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
  });

  it("myself answers id, serverlessDiscount null and the account's lists", async () => {
    const reply = await api.gql<{ myself: { id: string; serverlessDiscount: null; endpoints: unknown[] } }>(
      `{ myself { id serverlessDiscount { discountFactor type expirationDate } endpoints { id } } }`,
    );
    expect(reply.body.data.myself.id).toMatch(/^user_/);
    expect(reply.body.data.myself.serverlessDiscount).toBeNull();
    expect(Array.isArray(reply.body.data.myself.endpoints)).toBe(true);
  });
});

describe("GraphQL templates, volumes and registry auths", () => {
  it("saveTemplate maps env, ports and dockerArgs; with id replaces; deleteTemplate deletes by name", async () => {
    const id = await saveTemplate("g-tpl", {
      env: [{ key: "K", value: "V" }],
      ports: "8000/http,22/tcp",
      dockerArgs: "python -u handler.py",
    });
    const read = await api.gql<{ myself: { podTemplates: Record<string, unknown>[] } }>(
      `{ myself { podTemplates { id name env { key value } ports dockerArgs isServerless containerDiskInGb } } }`,
    );
    expect(read.body.data.myself.podTemplates).toContainEqual({
      id,
      name: "g-tpl",
      env: [{ key: "K", value: "V" }],
      ports: "8000/http,22/tcp",
      dockerArgs: "python -u handler.py",
      isServerless: true,
      containerDiskInGb: 50,
    });
    const rest = await api.rest<{ dockerStartCmd: string[]; env: Record<string, string>; ports: string[] }>(
      "GET",
      `/templates/${id}`,
    );
    expect(rest.body).toMatchObject({
      dockerStartCmd: ["python", "-u", "handler.py"],
      env: { K: "V" },
      ports: ["8000/http", "22/tcp"],
    });

    const replaced = await api.gql<{
      saveTemplate: { env: unknown[]; isServerless: boolean; imageName: string };
    }>(
      `mutation($input: SaveTemplateInput!) { saveTemplate(input: $input) { env { key } isServerless imageName } }`,
      { input: { id, name: "g-tpl", imageName: "repo/worker:2" } },
    );
    expect(replaced.body.data.saveTemplate).toEqual({
      env: [],
      isServerless: true,
      imageName: "repo/worker:2",
    });

    const deleted = await api.gql(`mutation { deleteTemplate(templateName: "g-tpl") }`);
    expect(deleted.body).toEqual({ data: { deleteTemplate: null } });
    expect((await api.rest("GET", `/templates/${id}`)).status).toBe(404);
    const missing = await api.gql(`mutation { deleteTemplate(templateName: "g-tpl") }`);
    expect(missing.body.errors?.[0]?.extensions?.code).toBe("NOT_FOUND");
  });

  it("dockerArgs is read with shell quoting into dockerStartCmd and kept as written; REST's argv reads back quoted", async () => {
    const id = await saveTemplate("g-quoted", { dockerArgs: `bash -c "sleep 1 && echo hi"` });
    const rest = await api.rest<{ dockerStartCmd: string[] }>("GET", `/templates/${id}`);
    expect(rest.body.dockerStartCmd).toEqual(["bash", "-c", "sleep 1 && echo hi"]);
    const readArgs = async () => {
      const read = await api.gql<{ myself: { podTemplates: { id: string; dockerArgs: string }[] } }>(
        `{ myself { podTemplates { id dockerArgs } } }`,
      );
      return read.body.data.myself.podTemplates.find((t) => t.id === id)?.dockerArgs;
    };
    expect(await readArgs()).toBe(`bash -c "sleep 1 && echo hi"`);

    // The other way: an argv set over REST reads back as a string that saveTemplate parses to the same argv.
    const argv = ["python", "-c", "print('it''s')", "", "$HOME", "*", "a b"];
    const patched = await api.rest("PATCH", `/templates/${id}`, { dockerStartCmd: argv });
    expect(patched.status).toBe(200);
    const text = await readArgs();
    expect(typeof text).toBe("string");
    await saveTemplate("g-quoted", { id, dockerArgs: text });
    expect(
      (await api.rest<{ dockerStartCmd: string[] }>("GET", `/templates/${id}`)).body.dockerStartCmd,
    ).toEqual(argv);
  });

  it("takes a dockerArgs that needs a shell (operators, variables, globs) as written; REST runs it with /bin/sh -c", async () => {
    for (const dockerArgs of ["cd /app && python serve.py", "serve | tee log", "run $MODEL", "ls *.bin"]) {
      const id = await saveTemplate(`g-shell-${dockerArgs.length}`, { dockerArgs });
      const rest = await api.rest<{ dockerStartCmd: string[] }>("GET", `/templates/${id}`);
      expect(rest.body.dockerStartCmd).toEqual(["/bin/sh", "-c", dockerArgs]);
    }
  });

  it("network volumes: create, update (grow-only), list, delete", async () => {
    const created = await api.gql<{ createNetworkVolume: { id: string; size: number } }>(
      `mutation { createNetworkVolume(input: {name: "gv", size: 20, dataCenterId: "US-TX-3"}) { id size } }`,
    );
    const { id } = created.body.data.createNetworkVolume;
    const grown = await api.gql<{ updateNetworkVolume: Record<string, unknown> }>(
      `mutation($id: String!) { updateNetworkVolume(input: {id: $id, size: 30}) { id name size dataCenterId } }`,
      { id },
    );
    expect(grown.body.data.updateNetworkVolume).toEqual({
      id,
      name: "gv",
      size: 30,
      dataCenterId: "US-TX-3",
    });
    const shrink = await api.gql(
      `mutation($id: String!) { updateNetworkVolume(input: {id: $id, size: 5}) { id } }`,
      { id },
    );
    expect(shrink.body.errors?.[0]?.extensions).toEqual({ code: "VALIDATION", field: "size" });
    const tooBig = await api.gql(
      `mutation { createNetworkVolume(input: {name: "x", size: 5000, dataCenterId: "EU-RO-1"}) { id } }`,
    );
    expect(tooBig.body.errors?.[0]?.extensions?.field).toBe("size");
    const list = await api.gql<{ myself: { networkVolumes: { id: string }[] } }>(
      `{ myself { networkVolumes { id } } }`,
    );
    expect(list.body.data.myself.networkVolumes.map((v) => v.id)).toContain(id);
    const deleted = await api.gql(`mutation($id: String!) { deleteNetworkVolume(input: {id: $id}) }`, { id });
    expect(deleted.body).toEqual({ data: { deleteNetworkVolume: null } });
    expect((await api.rest("GET", `/networkvolumes/${id}`)).status).toBe(404);
  });

  it("saveTemplate stores startSsh, startJupyter and startScript; GraphQL reads them back, REST does not show them", async () => {
    const FIELDS = "id startSsh startJupyter startScript";
    const script = "#!/bin/bash\necho ready > /tmp/ready";
    const saved = await api.gql<{ saveTemplate: Record<string, unknown> }>(
      `mutation($input: SaveTemplateInput!) { saveTemplate(input: $input) { ${FIELDS} } }`,
      {
        input: {
          name: "g-start",
          imageName: "repo/pod:1",
          startSsh: true,
          startJupyter: true,
          startScript: script,
        },
      },
    );
    expect(saved.body.errors).toBeUndefined();
    const id = String(saved.body.data.saveTemplate.id);
    expect(saved.body.data.saveTemplate).toEqual({
      id,
      startSsh: true,
      startJupyter: true,
      startScript: script,
    });
    const listed = await api.gql<{ myself: { podTemplates: Record<string, unknown>[] } }>(
      `{ myself { podTemplates { ${FIELDS} } } }`,
    );
    expect(listed.body.data.myself.podTemplates.find((t) => t.id === id)).toEqual(
      saved.body.data.saveTemplate,
    );
    const rest = await api.rest("GET", `/templates/${id}`);
    expect(rest.status).toBe(200);
    expect(Object.keys(rest.body)).not.toContain("startScript");
    expect(Object.keys(rest.body)).not.toContain("startSsh");
    // A REST PATCH leaves them alone (absent = unchanged); saveTemplate with id is a full replace.
    expect((await api.rest("PATCH", `/templates/${id}`, { readme: "r" })).status).toBe(200);
    const afterPatch = await api.gql<{ myself: { podTemplates: Record<string, unknown>[] } }>(
      `{ myself { podTemplates { ${FIELDS} } } }`,
    );
    expect(afterPatch.body.data.myself.podTemplates.find((t) => t.id === id)).toEqual(
      saved.body.data.saveTemplate,
    );
    const replaced = await api.gql<{ saveTemplate: Record<string, unknown> }>(
      `mutation($input: SaveTemplateInput!) { saveTemplate(input: $input) { ${FIELDS} } }`,
      { input: { id, name: "g-start", imageName: "repo/pod:1" } },
    );
    expect(replaced.body.data.saveTemplate).toEqual({
      id,
      startSsh: false,
      startJupyter: false,
      startScript: "",
    });
    const tooLong = await api.gql(
      `mutation($input: SaveTemplateInput!) { saveTemplate(input: $input) { id } }`,
      {
        input: {
          name: "g-long",
          imageName: "repo/pod:1",
          startScript: "x".repeat(START_SCRIPT_MAX_LENGTH + 1),
        },
      },
    );
    expect(tooLong.body.errors?.[0]?.extensions).toEqual({ code: "VALIDATION", field: "startScript" });
  });

  it("createNetworkVolume with isNextGenStorage picks the storage type, shown on GraphQL only", async () => {
    const created = await api.gql<{ createNetworkVolume: Record<string, unknown> }>(
      `mutation { createNetworkVolume(input: {name: "ng", size: 10, dataCenterId: "EU-RO-1", isNextGenStorage: true}) { id storageType } }`,
    );
    expect(created.body.errors).toBeUndefined();
    const id = String(created.body.data.createNetworkVolume.id);
    expect(created.body.data.createNetworkVolume).toEqual({ id, storageType: NEXT_GEN_STORAGE_TYPE });
    const standard = await api.gql<{ createNetworkVolume: Record<string, unknown> }>(
      `mutation { createNetworkVolume(input: {name: "std", size: 10, dataCenterId: "EU-RO-1"}) { id storageType } }`,
    );
    expect(standard.body.data.createNetworkVolume.storageType).toBe(STANDARD_STORAGE_TYPE);
    const grown = await api.gql<{ updateNetworkVolume: Record<string, unknown> }>(
      `mutation($id: String!) { updateNetworkVolume(input: {id: $id, size: 20}) { size storageType } }`,
      { id },
    );
    expect(grown.body.data.updateNetworkVolume).toEqual({ size: 20, storageType: NEXT_GEN_STORAGE_TYPE });
    const rest = await api.rest("GET", `/networkvolumes/${id}`);
    expect(rest.body).toEqual({ id, name: "ng", size: 20, dataCenterId: "EU-RO-1" });
    const viaRest = await api.rest("POST", "/networkvolumes", {
      name: "r",
      size: 1,
      dataCenterId: "EU-RO-1",
      isNextGenStorage: true,
    });
    expect(viaRest.status).toBe(400);
    const { body } = await api.gql<{ myself: { networkVolumes: Record<string, unknown>[] } }>(
      `{ myself { networkVolumes { id storageType } } }`,
    );
    expect(body.data.myself.networkVolumes.find((v) => v.id === id)?.storageType).toBe(NEXT_GEN_STORAGE_TYPE);
  });

  it("registry auths: save, update credentials, list {id name}, delete; never returns the password", async () => {
    const saved = await api.gql<{ saveRegistryAuth: { id: string; name: string } }>(
      `mutation { saveRegistryAuth(input: {name: "dockerhub", username: "me", password: "pw-123456"}) { id name } }`,
    );
    const { id } = saved.body.data.saveRegistryAuth;
    expect(id).toMatch(/^cl[a-z0-9]{23}$/);
    const updated = await api.gql<{ updateRegistryAuth: { id: string; name: string } }>(
      `mutation($id: String!) { updateRegistryAuth(input: {id: $id, username: "me2", password: "pw-654321"}) { id name } }`,
      { id },
    );
    expect(updated.body.data.updateRegistryAuth).toEqual({ id, name: "dockerhub" });
    expect(updated.text).not.toContain("pw-654321");
    const duplicate = await api.gql(
      `mutation { saveRegistryAuth(input: {name: "dockerhub", username: "a", password: "b"}) { id } }`,
    );
    expect(duplicate.body.errors?.[0]?.extensions).toEqual({ code: "CONFLICT", field: "name" });
    const list = await api.gql<{ myself: { containerRegistryCreds: unknown[] } }>(
      `{ myself { containerRegistryCreds { id name } } }`,
    );
    expect(list.body.data.myself.containerRegistryCreds).toContainEqual({ id, name: "dockerhub" });
    const deleted = await api.gql(`mutation($id: String!) { deleteRegistryAuth(registryAuthId: $id) }`, {
      id,
    });
    expect(deleted.body).toEqual({ data: { deleteRegistryAuth: null } });
  });
});

describe("GraphQL empty reference ids", () => {
  it('treats "" as not given for networkVolumeId and containerRegistryAuthId, as the real service', async () => {
    const template = await api.gql<{ saveTemplate: { id: string; containerRegistryAuthId: string | null } }>(
      `mutation($input: SaveTemplateInput!) { saveTemplate(input: $input) { id containerRegistryAuthId } }`,
      {
        input: {
          name: "empty-refs",
          imageName: "repo/worker:1",
          isServerless: true,
          containerRegistryAuthId: "",
        },
      },
    );
    expect(template.body.errors).toBeUndefined();
    expect(template.body.data.saveTemplate.containerRegistryAuthId).toBeNull();
    const created = await saveEndpoint({
      name: "empty-refs",
      templateId: template.body.data.saveTemplate.id,
      gpuIds: "AMPERE_16",
      networkVolumeId: "",
      locations: "",
    });
    expect(created).toMatchObject({ networkVolumeId: null, locations: null });
    const unknown = await api.gql(SAVE_ENDPOINT, {
      input: {
        name: "bad-ref",
        templateId: created.templateId,
        gpuIds: "AMPERE_16",
        networkVolumeId: "nope",
      },
    });
    expect(unknown.body.errors?.[0]?.extensions).toMatchObject({
      code: "VALIDATION",
      field: "networkVolumeId",
    });
  });
});

describe("GraphQL worker pods", () => {
  it("a worker's machine names the GPU type REST reports for it (none for a CPU endpoint's)", async () => {
    const templateId = await saveTemplate("g-workers", { imageName: "runpodkit/echo" });
    const scaled = { templateId, workersMin: 1, workersMax: 1 };
    const gpu = await saveEndpoint({ ...scaled, name: "w-gpu", gpuIds: "ADA_24" });
    const cpu = await saveEndpoint({
      ...scaled,
      name: "w-cpu",
      gpuIds: "AMPERE_16",
      computeType: "CPU",
      instanceIds: ["cpu3c-2-4"],
    });
    type Worker = { id: string; endpointId: string; machine: Record<string, unknown> };
    const workers = await vi.waitFor(
      async () => {
        const rest = await api.rest<Worker[]>("GET", "/pods?includeWorkers=true&includeMachine=true");
        const [g, c] = [gpu.id, cpu.id].map((id) => rest.body.find((p) => p.endpointId === id));
        if (!g || !c) throw new Error("no workers yet");
        return { g, c };
      },
      { timeout: 30_000, interval: 100 },
    );
    const machineOf = async (podId: string) => {
      const reply = await api.gql<{ pod: { endpointId: string; machine: unknown } }>(
        `query($id: String!) { pod(input: {podId: $id}) { endpointId machine { gpuTypeId gpuDisplayName } } }`,
        { id: podId },
      );
      return reply.body.data.pod.machine;
    };
    expect(workers.g.machine).toEqual({ gpuTypeId: "NVIDIA GeForce RTX 4090", gpuDisplayName: "RTX 4090" });
    const machines = { g: await machineOf(workers.g.id), c: await machineOf(workers.c.id) };
    expect(machines.g).toEqual(workers.g.machine);
    expect(machines.c).toEqual({ gpuTypeId: null, gpuDisplayName: null });
    for (const e of [gpu, cpu]) {
      await saveEndpoint({
        ...scaled,
        id: e.id,
        name: e.name,
        gpuIds: e.gpuIds,
        workersMin: 0,
        workersMax: 0,
      });
    }
  });
});

describe("GraphQL transport", () => {
  it("answers 401 for a missing or wrong key, and accepts a Bearer header", async () => {
    const noKey = await api.send(service.graphqlUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "{ myself { id } }" }),
    });
    expect(noKey.status).toBe(401);
    const wrong = await api.gql(`{ myself { id } }`, undefined, "wrong-key");
    expect(wrong.status).toBe(401);
    expect(wrong.text).not.toContain("wrong-key");
    const bearer = await api.send(service.graphqlUrl, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${service.apiKey}` },
      body: JSON.stringify({ query: "{ myself { id } }" }),
    });
    expect(bearer.status).toBe(200);
  });

  it("answers 400 for a body that is not a GraphQL request", async () => {
    const reply = await api.send(`${service.graphqlUrl}?api_key=${service.apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ nothing: true }),
    });
    expect(reply.status).toBe(400);
    expect(reply.text).toContain("query");
    expect(reply.text).not.toContain(service.apiKey);
  });

  it("a JSON request sent as text/plain (fetch's default for a string body) is told the content-type to use", async () => {
    const body = JSON.stringify({ query: "{ myself { id } }" });
    const sent = async (url: string) =>
      api.send<{ message?: string; errors?: { message: string }[] }>(url, {
        method: "POST",
        headers: { "content-type": "text/plain;charset=UTF-8", authorization: `Bearer ${service.apiKey}` },
        body,
      });
    // 415, as every content-type but JSON (test/service/spec-refusals.test.ts).
    const expected =
      "body: a JSON object is required, sent with content-type: application/json (no other content-type is accepted)";
    const gql = await sent(service.graphqlUrl);
    expect(gql.status).toBe(415);
    expect(gql.body.errors?.[0]?.message).toBe(expected);
    const rest = await sent(`${service.restUrl}/networkvolumes`);
    expect(rest.status).toBe(415);
    expect(rest.body.message).toBe(expected);
  });
});
