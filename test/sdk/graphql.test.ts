import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConflictError, NotFoundError, UnauthorizedError, ValidationError } from "../../sdk/errors";
import { GraphQLClient } from "../../sdk/graphql";
import { type TestService, withService } from "../helpers/service";
import { everyStringOf } from "./scripted-server";
import { failure } from "./support";

/** The GraphQL client against the local service's real schema (graphql-js), started in-process. */

let service: TestService;
let gql: GraphQLClient;

beforeAll(async () => {
  service = await withService();
  gql = new GraphQLClient({ apiKey: service.apiKey, baseUrl: service.graphqlUrl });
});
afterAll(async () => {
  await gql?.close();
  await service?.close();
});

let unique = 0;
const name = (prefix: string) => `${prefix}-gql-${++unique}`;

async function serverlessTemplate() {
  return gql.saveTemplate({ name: name("tpl"), imageName: "worker:1", isServerless: true });
}

describe("GraphQLClient endpoints", () => {
  it("creates with flashBootType as an enum, reads, lists, replaces in full and deletes", async () => {
    const template = await serverlessTemplate();
    const created = await gql.saveEndpoint({
      name: name("ep"),
      templateId: template.id,
      gpuIds: "AMPERE_24,-NVIDIA RTX A5000",
      flashBootType: "FLASHBOOT",
      idleTimeout: 30,
      workersMin: 0,
      workersMax: 2,
      locations: "US",
      env: [{ key: "MODE", value: "fast" }],
      modelName: "https://huggingface.co/org/model",
    });
    expect(created).toMatchObject({
      templateId: template.id,
      gpuIds: "AMPERE_24,-NVIDIA RTX A5000",
      flashBootType: "FLASHBOOT",
      idleTimeout: 30,
      workersMax: 2,
      locations: "US",
      env: [{ key: "MODE", value: "fast" }],
    });
    expect(await gql.getEndpoint(created.id)).toEqual(created);
    expect(created).toMatchObject({ hubReleaseId: null, modelName: "https://huggingface.co/org/model" });
    expect((await gql.listEndpoints()).map((e) => e.id)).toContain(created.id);

    // Full replace: what is left out goes back to the default.
    const replaced = await gql.saveEndpoint({
      id: created.id,
      name: created.name,
      templateId: template.id,
      gpuIds: "AMPERE_24",
      workersMin: 0,
      workersMax: 0,
    });
    expect(replaced).toMatchObject({
      id: created.id,
      flashBootType: "OFF",
      idleTimeout: 5,
      env: [],
      workersMax: 0,
    });

    await gql.deleteEndpoint(created.id);
    expect(await gql.getEndpoint(created.id)).toBeNull();
  });

  it("refuses to delete an endpoint with workers, by code", async () => {
    const template = await serverlessTemplate();
    const endpoint = await gql.saveEndpoint({
      name: name("busy"),
      templateId: template.id,
      gpuIds: "AMPERE_16",
      workersMin: 0,
      workersMax: 1,
    });
    const error = await failure(gql.deleteEndpoint(endpoint.id));
    expect(error).toBeInstanceOf(ConflictError);
    expect(error.serviceCode).toBe("PRECONDITION");
    expect(error.operation).toBe("graphql.deleteEndpoint");
  });

  it("maps the service's field errors to ValidationError with the field", async () => {
    const error = await failure(
      gql.saveEndpoint({ name: name("x"), templateId: "no-such-template", gpuIds: "AMPERE_16" }),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.field).toBe("templateId");
  });

  it("returns null for a missing endpoint and for the absent discount", async () => {
    expect(await gql.getEndpoint("does-not-exist")).toBeNull();
    expect(await gql.serverlessDiscount()).toBeNull();
  });
});

describe("GraphQLClient templates, volumes and registry auths", () => {
  it("saves, lists, replaces and deletes a template by name", async () => {
    const template = await gql.saveTemplate({
      name: name("t"),
      imageName: "img:1",
      ports: "8888/http,22/tcp",
      env: [{ key: "K", value: "V" }],
      dockerArgs: "python handler.py",
    });
    expect(template).toMatchObject({ ports: "8888/http,22/tcp", env: [{ key: "K", value: "V" }] });
    expect((await gql.listTemplates()).map((t) => t.id)).toContain(template.id);
    const replaced = await gql.saveTemplate({ id: template.id, name: template.name, imageName: "img:2" });
    expect(replaced).toMatchObject({ id: template.id, imageName: "img:2", env: [] });
    await gql.deleteTemplate(template.name);
    expect((await gql.listTemplates()).map((t) => t.id)).not.toContain(template.id);
    expect(await failure(gql.deleteTemplate(template.name))).toBeInstanceOf(NotFoundError);
  });

  it("creates, updates, lists and deletes a network volume", async () => {
    const volume = await gql.createNetworkVolume({ name: name("v"), size: 5, dataCenterId: "US-TX-3" });
    expect(volume).toMatchObject({ size: 5, dataCenterId: "US-TX-3" });
    expect(await gql.updateNetworkVolume({ id: volume.id, size: 8 })).toMatchObject({
      id: volume.id,
      size: 8,
    });
    expect((await gql.listNetworkVolumes()).find((v) => v.id === volume.id)?.size).toBe(8);
    await gql.deleteNetworkVolume(volume.id);
    expect((await gql.listNetworkVolumes()).map((v) => v.id)).not.toContain(volume.id);
  });

  it("carries a template's start fields and a volume's storage both ways, and checks them before sending", async () => {
    const template = await gql.saveTemplate({
      name: name("start"),
      imageName: "img:1",
      startSsh: true,
      startJupyter: false,
      startScript: "echo hi",
    });
    expect(template).toMatchObject({ startSsh: true, startJupyter: false, startScript: "echo hi" });
    expect((await gql.listTemplates()).find((t) => t.id === template.id)?.startScript).toBe("echo hi");
    const tooLong = await failure(
      gql.saveTemplate({ name: name("x"), imageName: "i", startScript: "x".repeat(65_537) }),
    );
    expect(tooLong).toMatchObject({ code: "VALIDATION", field: "startScript" });
    const volume = await gql.createNetworkVolume({
      name: name("ng"),
      size: 5,
      dataCenterId: "US-TX-3",
      isNextGenStorage: true,
    });
    expect(volume).toMatchObject({ size: 5, storageType: "VAST" });
    expect((await gql.listNetworkVolumes()).find((v) => v.id === volume.id)?.storageType).toBe("VAST");
    await gql.deleteNetworkVolume(volume.id);
    await gql.deleteTemplate(template.name);
  });

  it("saves, updates, lists and deletes a registry auth", async () => {
    const auth = await gql.saveRegistryAuth({ name: name("r"), username: "me", password: "first-secret" });
    expect(await gql.updateRegistryAuth({ id: auth.id, username: "me", password: "second-secret" })).toEqual(
      auth,
    );
    expect(await gql.listRegistryAuths()).toContainEqual(auth);
    await gql.deleteRegistryAuth(auth.id);
    expect(await gql.listRegistryAuths()).not.toContainEqual(auth);
    expect((await failure(gql.deleteRegistryAuth(auth.id))).code).toBe("NOT_FOUND");
  });
});

describe("GraphQLClient keys", () => {
  it("maps a wrong key to UNAUTHORIZED and never shows it", async () => {
    const wrongKey = "rpk_wrong_graphql_key_000000";
    const client = new GraphQLClient({ apiKey: wrongKey, baseUrl: service.graphqlUrl });
    try {
      const error = await failure(client.listEndpoints());
      expect(error).toBeInstanceOf(UnauthorizedError);
      expect(everyStringOf(error)).not.toContain(wrongKey);
    } finally {
      await client.close();
    }
  });
});

describe("GraphQLClient env values", () => {
  it("keeps env values out of the errors of saveTemplate and saveEndpoint (they travel in the variables)", async () => {
    const value = "env-credential-7f3a9c2e";
    const env = [{ key: "HF_TOKEN", value }];
    const template = await failure(
      gql.saveTemplate({ id: "no-such-template", name: name("t"), imageName: "i", env }),
    );
    expect(template).toBeInstanceOf(Error);
    const endpoint = await failure(
      gql.saveEndpoint({ name: name("ep"), templateId: "no-such-template", gpuIds: "AMPERE_24", env }),
    );
    expect(endpoint).toBeInstanceOf(Error);
    for (const error of [template, endpoint]) {
      const strings = everyStringOf(error);
      expect(strings.length).toBeGreaterThan(0);
      expect(strings).not.toContain(value);
    }
  });
});

describe("GraphQLClient secrets' errors", () => {
  it("name the method called (graphql.createSecret ...), as every other operation's do", async () => {
    const graphql = new GraphQLClient({ apiKey: service.apiKey, baseUrl: service.graphqlUrl });
    try {
      const secret = await graphql.createSecret({ name: "op_named", value: "v1-secret-value" });
      const cases: Array<[string, () => Promise<unknown>]> = [
        ["graphql.createSecret", () => graphql.createSecret({ name: "op_named", value: "v2-secret-value" })],
        ["graphql.updateSecretValue", () => graphql.updateSecretValue({ id: "missing", value: "v3-value" })],
        [
          "graphql.updateSecretDescription",
          () => graphql.updateSecretDescription({ id: "missing", description: "d" }),
        ],
        ["graphql.deleteSecret", () => graphql.deleteSecret("missing")],
      ];
      for (const [operation, call] of cases) {
        const error = await failure(call());
        expect({ operation: error.operation, prefix: error.message.split(":")[0] }).toEqual({
          operation,
          prefix: operation,
        });
      }
      await graphql.deleteSecret(secret.id);
    } finally {
      await graphql.close();
    }
  });
});
