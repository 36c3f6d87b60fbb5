import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "./client";

/**
 * Numbers past a double's range written inline in a GraphQL document are parsed by graphql-js, not
 * by the JSON parser that refuses them in bodies and variables (service/edge/body.ts
 * checkFiniteNumbers). They must be refused there too, never stored as null or Infinity. Every
 * refusal of a bad number, inline or in a variable, names the operation and the field
 * (service/management/graphql/engine.ts refusedInput), as a resolver's refusal does.
 */
let service: TestService;
let api: ReturnType<typeof clients>;
beforeAll(async () => {
  service = await withService();
  api = clients(service);
});
afterAll(() => service.close());

interface GqlBody {
  data: Record<string, unknown> | null;
  errors?: { message: string; extensions?: { code?: string; field?: string } }[];
}

describe("GraphQL inline number literals past a double's range", () => {
  it("an Int field (saveTemplate containerDiskInGb: 1e400) is refused, and no template is saved", async () => {
    const reply = await api.gql(
      `mutation { saveTemplate(input: {name: "inf-int", imageName: "r/w:1", isServerless: true, containerDiskInGb: 1e400}) { id containerDiskInGb } }`,
    );
    const body = reply.body as GqlBody;
    expect(body.data).toBeNull();
    expect(body.errors?.[0]).toEqual({
      message: "saveTemplate: containerDiskInGb: Int cannot represent non-integer value: 1e400",
      extensions: { code: "GRAPHQL_VALIDATION", field: "containerDiskInGb" },
    });
    const list = await api.gql<{ myself: { podTemplates: { name: string }[] } }>(
      `query { myself { podTemplates { name } } }`,
    );
    expect(list.body.data.myself.podTemplates.map((template) => template.name)).not.toContain("inf-int");
  });

  it("a Float field (deployCost: 1e400) is refused naming the field, and no pod is deployed", async () => {
    const reply = await api.gql(
      `mutation { podFindAndDeployOnDemand(input: {name: "inf-float", imageName: "r/w:1", gpuTypeId: "NVIDIA RTX A4000", deployCost: 1e400}) { id costPerHr } }`,
    );
    const body = reply.body as GqlBody;
    expect(body.data).toEqual({ podFindAndDeployOnDemand: null });
    expect(body.errors?.[0]).toMatchObject({
      message: expect.stringContaining("deployCost"),
      extensions: { code: "VALIDATION", field: "deployCost" },
    });
    const pods = await api.gql<{ myself: { pods: { name: string }[] } }>(
      `query { myself { pods { name } } }`,
    );
    expect(pods.body.data.myself.pods.map((pod) => pod.name)).not.toContain("inf-float");
  });
});

describe("GraphQL Int values a field cannot take are refused naming the operation and the field", () => {
  let templateId: string;
  beforeAll(async () => {
    const saved = await api.gql<{ saveTemplate: { id: string } }>(
      `mutation { saveTemplate(input: {name: "int-bounds", imageName: "r/w:1", isServerless: true}) { id } }`,
    );
    templateId = saved.body.data.saveTemplate.id;
  });

  const endpointNames = async () =>
    (
      await api.gql<{ myself: { endpoints: { name: string }[] } }>(`query { myself { endpoints { name } } }`)
    ).body.data.myself.endpoints.map((endpoint) => endpoint.name);

  it.each([
    ["9999999999999", "Int cannot represent non 32-bit signed integer value: 9999999999999"],
    ["2147483648", "Int cannot represent non 32-bit signed integer value: 2147483648"],
    ["1.5", "Int cannot represent non-integer value: 1.5"],
    ['"3"', 'Int cannot represent non-integer value: "3"'],
    ["1e400", "Int cannot represent non-integer value: 1e400"],
  ])("inline workersMax: %s", async (literal, reason) => {
    const reply = await api.gql(
      `mutation { saveEndpoint(input: {name: "int-inline", templateId: "${templateId}", gpuIds: "AMPERE_80", workersMax: ${literal}}) { id } }`,
    );
    expect(reply.status).toBe(200);
    expect(reply.body.data).toBeNull();
    expect(reply.body.errors).toEqual([
      {
        message: `saveEndpoint: workersMax: ${reason}`,
        extensions: { code: "GRAPHQL_VALIDATION", field: "workersMax" },
      },
    ]);
    expect(await endpointNames()).not.toContain("int-inline");
  });

  it.each([
    [9999999999999, "9999999999999", "Int cannot represent non 32-bit signed integer value: 9999999999999"],
    [1.5, "1.5", "Int cannot represent non-integer value: 1.5"],
    // A string value is written "…" (engine.ts withoutValues), its place still named.
    ["3", '"…"', 'Int cannot represent non-integer value: "…"'],
  ])("workersMax in a variable: %s", async (value, shown, reason) => {
    const reply = await api.gql(
      "mutation Save($input: EndpointInput!) { saveEndpoint(input: $input) { id } }",
      { input: { name: "int-variable", templateId, gpuIds: "AMPERE_80", workersMax: value } },
    );
    expect(reply.status).toBe(200);
    expect(reply.body.data).toBeNull();
    expect(reply.body.errors).toEqual([
      {
        message: `saveEndpoint: workersMax: Variable "$input" got invalid value ${shown} at "input.workersMax"; ${reason}`,
        extensions: { code: "GRAPHQL_VALIDATION", field: "workersMax" },
      },
    ]);
    expect(await endpointNames()).not.toContain("int-variable");
  });

  it("a value deeper in the input, and a variable used inside the argument, are named from the argument", async () => {
    const inline = await api.gql(
      `mutation { saveTemplate(input: {name: "deep", imageName: "i", env: [{key: "A", value: "1"}, {key: "B", value: 2}]}) { id } }`,
    );
    expect(inline.body.errors?.[0]).toEqual({
      message: "saveTemplate: env.1.value: String cannot represent a non string value: 2",
      extensions: { code: "GRAPHQL_VALIDATION", field: "env.1.value" },
    });
    const variable = await api.gql(
      'mutation Save($max: Int) { saveEndpoint(input: {name: "deep", templateId: "t", gpuIds: "AMPERE_80", workersMax: $max}) { id } }',
      { max: 1.5 },
    );
    expect(variable.body.errors?.[0]).toEqual({
      message:
        'saveEndpoint: workersMax: Variable "$max" got invalid value 1.5; Int cannot represent non-integer value: 1.5',
      extensions: { code: "GRAPHQL_VALIDATION", field: "workersMax" },
    });
  });

  it("a required field left out is named, inline and in a variable", async () => {
    const inline = await api.gql(`mutation { saveTemplate(input: {imageName: "i"}) { id } }`);
    expect(inline.body.errors?.[0]).toEqual({
      message:
        'saveTemplate: name: Field "SaveTemplateInput.name" of required type "String!" was not provided.',
      extensions: { code: "GRAPHQL_VALIDATION", field: "name" },
    });
    const variable = await api.gql(
      "mutation Save($input: SaveTemplateInput!) { saveTemplate(input: $input) { id } }",
      { input: { imageName: "i" } },
    );
    expect(variable.body.errors?.[0]?.extensions).toEqual({ code: "GRAPHQL_VALIDATION", field: "name" });
    expect(variable.body.errors?.[0]?.message).toMatch(
      /^saveTemplate: name: Variable "\$input" got invalid value .*; Field "name" of required type "String!" was not provided\.$/,
    );
  });

  it("a refusal that is not about an input's value names no field", async () => {
    const reply = await api.gql("mutation { saveTemplate(nope: 1) { id } }");
    expect(reply.body.errors?.[0]?.extensions).toEqual({ code: "GRAPHQL_VALIDATION" });
  });
});
