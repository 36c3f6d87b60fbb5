import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import type { ErrorBody } from "../../../sdk/schemas/common";
import type { Template } from "../../../sdk/schemas/template";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "./client";

let service: TestService;
let api: ReturnType<typeof clients>;
let template: Template;

beforeAll(async () => {
  service = await withService({ config: { managementBodyLimit: 4096 } });
  api = clients(service);
  template = (
    await api.rest<Template>("POST", "/templates", { name: "t", imageName: "i", isServerless: true })
  ).body;
});
afterAll(() => service.close());

describe("REST authentication", () => {
  it("answers 401 {message} without a key or with a wrong one, on every resource", async () => {
    for (const path of [
      "/endpoints",
      "/templates",
      "/networkvolumes",
      "/containerregistryauth",
      "/pods",
      "/billing/pods",
    ]) {
      const none = await api.rest<ErrorBody>("GET", path, undefined, null);
      expect(none.status).toBe(401);
      expect(typeof none.body.message).toBe("string");
      const wrong = await api.rest<ErrorBody>("GET", path, undefined, "not-a-key");
      expect(wrong.status).toBe(401);
      expect(wrong.text).not.toContain("not-a-key");
    }
  });

  it("accepts the raw key without the Bearer prefix too", async () => {
    const reply = await api.send(`${service.restUrl}/endpoints`, {
      headers: { authorization: service.apiKey },
    });
    expect(reply.status).toBe(200);
  });
});

describe("REST bad input", () => {
  const cases: [string, unknown, RegExp][] = [
    ["malformed JSON", '{"templateId": ', /^body: .*JSON/],
    ["wrong type", { templateId: "x", workersMax: "three" }, /^workersMax: /],
    ["unknown enum value", { templateId: "x", scalerType: "CPU_LOAD" }, /^scalerType: /],
    ["missing required field", { name: "no template" }, /^templateId: /],
    ["unknown field", { templateId: "x", colour: "blue" }, /colour/],
    ["out-of-range value", { templateId: "x", idleTimeout: 0 }, /^idleTimeout: /],
    [
      "array item of an unknown enum",
      { templateId: "x", gpuTypeIds: ["NVIDIA GTX 9999"] },
      /^gpuTypeIds\.0: /,
    ],
  ];
  for (const [name, body, message] of cases) {
    it(`answers 400 naming the field for ${name}`, async () => {
      const reply = await api.rest<ErrorBody>("POST", "/endpoints", body);
      expect(reply.status).toBe(400);
      expect(reply.body.message).toMatch(message);
    });
  }

  it("takes template ports only as the OpenAPI writes them: <1-65535>/http or /tcp, naming the field", async () => {
    for (const port of ["99999/http", "0/tcp", "70000/http", "53/udp", "080/http", "http", "8888/HTTP"]) {
      const rest = await api.rest<ErrorBody>("POST", "/templates", {
        name: `p${port}`,
        imageName: "i",
        ports: [port],
      });
      expect(rest.status, port).toBe(400);
      expect(rest.body.message).toBe('ports.0: expected "<port>/http" or "<port>/tcp", port 1-65535');
      const patch = await api.rest<ErrorBody>("PATCH", `/templates/${template.id}`, {
        ports: ["8888/http", port],
      });
      expect(patch.body.message).toMatch(/^ports\.1: /);
      const gql = await api.gql<{ saveTemplate: null }>(
        `mutation($p: String) { saveTemplate(input: {name: "gp", imageName: "i", ports: $p}) { id } }`,
        { p: `8888/http,${port}` },
      );
      expect(gql.body.errors?.[0]?.message).toBe(
        `ports: bad port "${port}"; expected "<port>/http" or "<port>/tcp", port 1-65535`,
      );
    }
    const edges = await api.rest<Template>("POST", "/templates", {
      name: "edge-ports",
      imageName: "i",
      ports: ["1/tcp", "65535/http"],
    });
    expect(edges.body.ports).toEqual(["1/tcp", "65535/http"]);
  });

  it("answers 400 for a missing body and for an empty JSON body", async () => {
    const none = await api.rest<ErrorBody>("POST", "/templates");
    expect(none.status).toBe(400);
    expect(none.body.message).toMatch(/body/);
    const empty = await api.send(`${service.restUrl}/templates`, {
      method: "POST",
      headers: { authorization: `Bearer ${service.apiKey}`, "content-type": "application/json" },
      body: "",
    });
    expect(empty.status).toBe(400);
  });

  it("answers 413 for a body above the limit and writes nothing", async () => {
    const before = (await api.rest<Template[]>("GET", "/templates")).body.length;
    const big = await api.rest<ErrorBody>("POST", "/templates", {
      name: "big",
      imageName: "i",
      readme: "x".repeat(10_000),
    });
    expect(big.status).toBe(413);
    expect(big.body.message).toMatch(
      /^body: the request body is larger than the \d+ KB this request may carry$/,
    );
    expect((await api.rest<Template[]>("GET", "/templates")).body.length).toBe(before);
  });

  it("leaves nothing half-written when a rule fails mid-update", async () => {
    const e = (
      await api.rest<{ id: string; name: string }>("POST", "/endpoints", {
        templateId: template.id,
        name: "keep",
      })
    ).body;
    const reply = await api.rest("PATCH", `/endpoints/${e.id}`, {
      name: "changed",
      networkVolumeId: "missingvol",
    });
    expect(reply.status).toBe(400);
    expect((await api.rest<{ name: string }>("GET", `/endpoints/${e.id}`)).body.name).toBe("keep");
  });

  it("validates query parameters", async () => {
    const reply = await api.rest<ErrorBody>("GET", "/endpoints?includeWorkers=maybe");
    expect(reply.status).toBe(400);
    expect(reply.body.message).toMatch(/^includeWorkers: /);
  });

  it("answers 404 {message} for unknown routes without echoing the query string", async () => {
    const reply = await api.send(`${service.restUrl}/nowhere?api_key=${service.apiKey}`, {});
    expect(reply.status).toBe(404);
    expect(reply.text).not.toContain(service.apiKey);
  });
});

describe("REST description", () => {
  it("serves a generated OpenAPI document listing every path, without a key", async () => {
    const reply = await api.rest<{
      openapi: string;
      paths: Record<
        string,
        Record<string, { operationId: string; requestBody?: unknown; parameters: unknown[] }>
      >;
    }>("GET", "/openapi.json", undefined, null);
    expect(reply.status).toBe(200);
    const doc = reply.body;
    expect(doc.openapi).toMatch(/^3\./);
    for (const path of [
      "/endpoints",
      "/endpoints/{endpointId}",
      "/endpoints/{endpointId}/update",
      "/templates/{templateId}",
      "/networkvolumes/{networkVolumeId}",
      "/containerregistryauth/{containerRegistryAuthId}",
      "/pods",
      "/billing/endpoints",
    ]) {
      expect(Object.keys(doc.paths)).toContain(path);
    }
    const create = doc.paths["/endpoints"]?.post;
    expect(create?.operationId).toBe("CreateEndpoint");
    // Generated from the zod schema the route validates with: templateId required, unknown keys refused.
    expect(create?.requestBody).toMatchObject({
      content: { "application/json": { schema: { required: ["templateId"], additionalProperties: false } } },
    });
    expect(doc.paths["/endpoints/{endpointId}"]?.get?.parameters).toContainEqual(
      expect.objectContaining({ name: "includeWorkers", in: "query" }),
    );
  });

  it("renders the documentation page", async () => {
    const reply = await api.send(`${service.restUrl}/docs/`, {});
    expect(reply.status).toBe(200);
    expect(reply.text).toContain("swagger");
  });

  it("serves the document as JSON and YAML under the docs pages (no 5xx on any of them)", async () => {
    const json = await fetch(`${service.restUrl}/docs/json`);
    expect(json.status).toBe(200);
    const fromJson = (await json.json()) as { openapi: string; paths: Record<string, unknown> };
    const yaml = await fetch(`${service.restUrl}/docs/yaml`);
    expect(yaml.status).toBe(200);
    expect(yaml.headers.get("content-type")).toContain("application/x-yaml");
    const fromYaml = parse(await yaml.text()) as typeof fromJson;
    expect(fromYaml.openapi).toBe(fromJson.openapi);
    expect(Object.keys(fromYaml.paths)).toEqual(Object.keys(fromJson.paths));
    for (const page of [
      "/docs",
      "/docs/",
      "/docs/static/index.html",
      "/docs/static/no-such-file",
      "/docs/x/../../yaml",
    ]) {
      const reply = await fetch(`${service.restUrl}${page}`);
      expect(reply.status, page).toBeLessThan(500);
    }
  });
});

describe("query parameters given more than once", () => {
  it("a repeatable filter takes the list and names an unknown value in it; a single-valued one says it came twice", async () => {
    const listed = await api.rest<unknown[]>("GET", "/pods?dataCenterId=EU-RO-1&dataCenterId=US-TX-3");
    expect(listed.status).toBe(200);
    const unknown = await api.rest<ErrorBody>("GET", "/pods?dataCenterId=EU-RO-1&dataCenterId=NOPE-1");
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain("dataCenterId");
    expect(unknown.text).not.toContain("given 2 times");
    const twice = await api.rest<ErrorBody>("GET", "/endpoints?includeTemplate=true&includeTemplate=false");
    expect(twice.status).toBe(400);
    expect(twice.body.message ?? twice.text).toContain("includeTemplate: given 2 times");
  });
});
