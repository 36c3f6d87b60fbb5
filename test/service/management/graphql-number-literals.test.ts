import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "./client";

/**
 * Numbers past a double's range written inline in a GraphQL document are parsed by graphql-js, not
 * by the JSON parser that refuses them in bodies and variables (service/edge/body.ts
 * checkFiniteNumbers). They must be refused there too, never stored as null or Infinity.
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
    expect(body.errors?.[0]).toMatchObject({
      message: "Int cannot represent non-integer value: 1e400",
      extensions: { code: "GRAPHQL_VALIDATION" },
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
