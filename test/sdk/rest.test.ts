import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConflictError, NotFoundError, UnauthorizedError, ValidationError } from "../../sdk/errors";
import { GraphQLClient } from "../../sdk/graphql";
import { JobClient } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";
import { type TestService, withService } from "../helpers/service";
import { everyStringOf } from "./scripted-server";
import { failure } from "./support";

/** The REST client against the local service, started in-process. */

let service: TestService;
let rest: RestClient;

beforeAll(async () => {
  service = await withService();
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
});
afterAll(async () => {
  await rest?.close();
  await service?.close();
});

let unique = 0;
const name = (prefix: string) => `${prefix}-${++unique}`;

describe("RestClient templates", () => {
  it("creates, lists, gets, updates (partial) and deletes", async () => {
    const created = await rest.templates.create({
      name: name("tpl"),
      imageName: "alpine:3",
      isServerless: true,
      env: { A: "1" },
      containerDiskInGb: 10,
    });
    expect(created).toMatchObject({
      imageName: "alpine:3",
      isServerless: true,
      env: { A: "1" },
      containerDiskInGb: 10,
    });
    expect((await rest.templates.list()).map((t) => t.id)).toContain(created.id);
    expect(await rest.templates.get(created.id)).toEqual(created);

    // 0 is a value, not "absent": the other fields stay as they were
    const updated = await rest.templates.update(created.id, { volumeInGb: 0, imageName: "alpine:4" });
    expect(updated).toMatchObject({ id: created.id, volumeInGb: 0, imageName: "alpine:4", env: { A: "1" } });

    await rest.templates.delete(created.id);
    const gone = await failure(rest.templates.get(created.id));
    expect(gone).toBeInstanceOf(NotFoundError);
    expect(gone.code).toBe("NOT_FOUND");
    expect(gone.status).toBe(404);
    expect(gone.operation).toBe("rest.templates.get");
  });

  it("reports a duplicate name as CONFLICT naming the field", async () => {
    const input = { name: name("dup"), imageName: "alpine:3" };
    await rest.templates.create(input);
    const error = await failure(rest.templates.create(input));
    expect(error.status).toBe(400);
    expect(error.message).toContain("already exists");
    expect(error).toBeInstanceOf(ConflictError);
    expect(error.code).toBe("CONFLICT");
    expect(error.field).toBe("name");
  });

  it("refuses invalid input before sending, naming the field", async () => {
    const error = await failure(
      rest.templates.create({ name: name("bad"), imageName: "alpine:3", ports: ["8888/nope"] }),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.field).toBe("ports.0");
    expect(error.status).toBeUndefined();
    // unknown keys and not-updatable fields too
    const notUpdatable = await failure(rest.templates.update("any", { category: "CPU" } as never));
    expect(notUpdatable.field).toBe("category");
    await expect(rest.templates.get("")).rejects.toMatchObject({ code: "VALIDATION", field: "id" });
  });
});

describe("RestClient endpoints", () => {
  it("creates with defaults, gets with the template, updates and deletes", async () => {
    const template = await rest.templates.create({
      name: name("ep-tpl"),
      imageName: "worker:1",
      isServerless: true,
    });
    const created = await rest.endpoints.create({ templateId: template.id, name: name("ep"), workersMax: 0 });
    expect(created).toMatchObject({
      templateId: template.id,
      computeType: "GPU",
      gpuCount: 1,
      idleTimeout: 5,
      scalerType: "QUEUE_DELAY",
      scalerValue: 4,
      workersMin: 0,
      workersMax: 0,
    });
    const withTemplate = await rest.endpoints.get(created.id, { includeTemplate: true });
    expect(withTemplate.template?.id).toBe(template.id);
    expect((await rest.endpoints.list()).map((e) => e.id)).toContain(created.id);

    const updated = await rest.endpoints.update(created.id, { idleTimeout: 60, workersMin: 0 });
    expect(updated).toMatchObject({ idleTimeout: 60, workersMin: 0, scalerValue: 4 });

    // the template is in use: deleting it is refused by code
    const inUse = await failure(rest.templates.delete(template.id));
    expect(inUse.status).toBe(400);
    expect(inUse.message).toContain(created.id);
    expect(inUse).toBeInstanceOf(ConflictError);
    expect(inUse.serviceCode).toBe("IN_USE");

    await rest.endpoints.delete(created.id);
    expect((await failure(rest.endpoints.get(created.id))).code).toBe("NOT_FOUND");
    expect((await failure(rest.endpoints.delete(created.id))).code).toBe("NOT_FOUND");
  });

  it("refuses an unknown GPU type before sending", async () => {
    const error = await failure(
      rest.endpoints.create({ templateId: "t", gpuTypeIds: ["NVIDIA Nope"] as never }),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.field).toBe("gpuTypeIds.0");
  });
});

describe("RestClient network volumes and registry auths", () => {
  it("runs the whole network volume lifecycle", async () => {
    const volume = await rest.networkVolumes.create({ name: name("vol"), size: 10, dataCenterId: "EU-RO-1" });
    expect(volume).toMatchObject({ size: 10, dataCenterId: "EU-RO-1" });
    expect(await rest.networkVolumes.get(volume.id)).toEqual(volume);
    expect((await rest.networkVolumes.list()).map((v) => v.id)).toContain(volume.id);
    expect(await rest.networkVolumes.update(volume.id, { size: 20 })).toMatchObject({
      id: volume.id,
      size: 20,
    });
    await rest.networkVolumes.delete(volume.id);
    expect((await failure(rest.networkVolumes.get(volume.id))).code).toBe("NOT_FOUND");
  });

  it("creates, lists, gets and deletes registry auths; the password never comes back", async () => {
    const auth = await rest.containerRegistryAuths.create({
      name: name("reg"),
      username: "u",
      password: "p4ss-word!",
    });
    expect(Object.keys(auth).sort()).toEqual(["id", "name"]);
    expect(await rest.containerRegistryAuths.get(auth.id)).toEqual(auth);
    expect(await rest.containerRegistryAuths.list()).toContainEqual(auth);
    await rest.containerRegistryAuths.delete(auth.id);
    expect((await failure(rest.containerRegistryAuths.get(auth.id))).code).toBe("NOT_FOUND");
  });
});

describe("RestClient pods and billing", () => {
  it("lists pods with filters and reports a missing pod as NOT_FOUND", async () => {
    expect(await rest.pods.list({ includeWorkers: true, desiredStatus: "RUNNING" })).toEqual(
      expect.any(Array),
    );
    expect((await failure(rest.pods.get("no-such-pod"))).code).toBe("NOT_FOUND");
  });

  it("reads billing with query parameters", async () => {
    const range = {
      startTime: "2026-01-01T00:00:00Z",
      endTime: "2026-01-02T00:00:00Z",
      bucketSize: "day",
    } as const;
    expect(await rest.billing.pods(range)).toEqual(expect.any(Array));
    expect(
      await rest.billing.endpoints({ ...range, grouping: "endpointId", gpuTypeId: ["NVIDIA L4"] }),
    ).toEqual(expect.any(Array));
    expect(await rest.billing.networkVolumes(range)).toEqual(expect.any(Array));
    const error = await failure(
      rest.billing.pods({ startTime: "2026-01-02T00:00:00Z", endTime: "2026-01-01T00:00:00Z" }),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.field).toBe("startTime");
    expect(error.status).toBe(400);
  });
});

describe("RestClient accounts and keys", () => {
  it("keeps accounts apart: another account's template is NOT_FOUND", async () => {
    const mine = await rest.templates.create({ name: name("mine"), imageName: "alpine:3" });
    const other = new RestClient({ apiKey: service.otherApiKey, baseUrl: service.restUrl });
    try {
      expect((await failure(other.templates.get(mine.id))).code).toBe("NOT_FOUND");
    } finally {
      await other.close();
    }
  });

  it("maps a wrong key to UNAUTHORIZED without showing the key", async () => {
    const wrongKey = "rpk_wrong_key_0000000000000";
    const client = new RestClient({ apiKey: wrongKey, baseUrl: service.restUrl });
    try {
      const error = await failure(client.templates.list());
      expect(error).toBeInstanceOf(UnauthorizedError);
      expect(everyStringOf(error)).not.toContain(wrongKey);
    } finally {
      await client.close();
    }
  });

  it("refuses a client without a key", () => {
    expect(() => new RestClient({ apiKey: "" })).toThrow(ValidationError);
  });

  it("refuses a base URL that is not an absolute http(s) URL, naming the option and an example, never the key", async () => {
    const key = "rpk_test_key_0123456789";
    const refusal = (make: () => unknown) => failure(Promise.resolve().then(make));
    const rest = await refusal(() => new RestClient({ apiKey: key, baseUrl: "127.0.0.1:8080/v1" }));
    expect(rest).toBeInstanceOf(ValidationError);
    expect(rest).toMatchObject({
      code: "VALIDATION",
      operation: "rest",
      field: "baseUrl",
      message:
        'rest: baseUrl must be an absolute http(s) URL such as http://127.0.0.1:8080/v1, got "127.0.0.1:8080/v1"',
    });
    const jobs = await refusal(
      () => new JobClient({ apiKey: key, endpointId: "e", baseUrl: "ftp://host/v2" }),
    );
    expect(jobs).toMatchObject({
      field: "baseUrl",
      message:
        'jobs: baseUrl must be an absolute http(s) URL such as http://127.0.0.1:8080/v2, got "ftp://host/v2"',
    });
    const graphql = await refusal(
      () => new GraphQLClient({ apiKey: key, baseUrl: `localhost/graphql?api_key=${key}` }),
    );
    expect(graphql).toMatchObject({ field: "baseUrl", operation: "graphql" });
    expect(graphql.message).not.toContain(key);
  });
});
