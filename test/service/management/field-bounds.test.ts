import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ErrorBody } from "../../../sdk/schemas/common";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "./client";

/**
 * Free-text fields of templates, pods and registry auths have bounds of their own, not only the
 * request body's: one field cannot carry a megabyte into the store. Each bound is accepted at its
 * value and refused one past it, naming the field.
 */
let service: TestService;
let api: ReturnType<typeof clients>;

beforeAll(async () => {
  service = await withService();
  api = clients(service);
});
afterAll(() => service.close());

const x = (n: number) => "x".repeat(n);

describe("free-text field bounds", () => {
  it("a template's imageName (1024), volumeMountPath (4096) and readme (65,536)", async () => {
    const fields = { imageName: 1024, volumeMountPath: 4096, readme: 65_536 } as const;
    let n = 0;
    // A mount path is absolute: "/" and then the rest of the bound.
    const text = (field: string, n: number) => (field === "volumeMountPath" ? `/${x(n - 1)}` : x(n));
    for (const [field, max] of Object.entries(fields)) {
      const base = { name: `t${n++}`, imageName: "img:1", isServerless: true };
      const ok = await api.rest("POST", "/templates", { ...base, [field]: text(field, max) });
      expect(ok.status, `${field} at ${max}`).toBe(200);
      const over = await api.rest<ErrorBody>("POST", "/templates", {
        ...base,
        name: `t${n++}`,
        [field]: text(field, max + 1),
      });
      expect(over.status, `${field} past ${max}`).toBe(400);
      expect(over.text).toContain(field);
    }
  });

  it("GraphQL saveTemplate refuses the same", async () => {
    const reply = await api.gql(
      "mutation($input: SaveTemplateInput!) { saveTemplate(input: $input) { id } }",
      {
        input: {
          name: "g1",
          imageName: x(1025),
          containerDiskInGb: 5,
          volumeInGb: 0,
          dockerArgs: "",
          env: [],
        },
      },
    );
    expect(reply.body.errors?.[0]?.message).toContain("imageName");
    expect(reply.body.data?.saveTemplate ?? null).toBeNull();
  });

  it("a registry auth's username (1024) and password (16,384)", async () => {
    const ok = await api.rest("POST", "/containerregistryauth", {
      name: "r1",
      username: x(1024),
      password: x(16_384),
    });
    expect(ok.status).toBe(200);
    for (const [field, value] of [
      ["username", x(1025)],
      ["password", x(16_385)],
    ] as const) {
      const over = await api.rest<ErrorBody>("POST", "/containerregistryauth", {
        name: `r-${field}`,
        username: "u",
        password: "p",
        [field]: value,
      });
      expect(over.status, field).toBe(400);
      expect(over.text).toContain(field);
      expect(over.text).not.toContain(value.slice(0, 100));
    }
  });

  it("a pod's imageName (1024)", async () => {
    const over = await api.rest<ErrorBody>("POST", "/pods", {
      name: "p",
      imageName: x(1025),
      gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
    });
    expect(over.status).toBe(400);
    expect(over.text).toContain("imageName");
  });
});

describe("ids in refusals", () => {
  // An id longer than any the service hands out is named cut short: a reply never echoes it whole.
  const long = `${x(40)}${"y".repeat(200_000 - 40)}`;
  const cut = `${x(40)}… (200000 characters; no id is that long)`;

  it("GraphQL: an unknown id as an argument or an input field", async () => {
    const templateId = (
      await api.gql<{ saveTemplate: { id: string } }>(
        `mutation { saveTemplate(input: {name: "ids", imageName: "img", isServerless: true}) { id } }`,
      )
    ).body.data.saveTemplate.id;
    const cases: [string, Record<string, unknown>, string][] = [
      ["mutation($id: String!) { deleteEndpoint(id: $id) }", { id: long }, `endpoint ${cut} not found`],
      ["mutation($id: ID!) { secretDelete(id: $id) }", { id: long }, `secret ${cut} not found`],
      [
        "mutation($id: String!) { deleteRegistryAuth(registryAuthId: $id) }",
        { id: long },
        `container registry auth ${cut} not found`,
      ],
      [
        "mutation($id: String!) { deleteTemplate(templateName: $id) }",
        { id: long },
        `template named "${x(39)}… (200002 characters; no id is that long) not found`,
      ],
      [
        'mutation($id: String!) { saveEndpoint(input: {name: "e", templateId: $id, gpuIds: "AMPERE_16"}) { id } }',
        { id: long },
        `templateId: template ${cut} not found`,
      ],
      [
        'mutation($t: String!, $id: String!) { saveEndpoint(input: {name: "e", templateId: $t, gpuIds: "AMPERE_16", networkVolumeId: $id}) { id } }',
        { t: templateId, id: long },
        `networkVolumeId: network volume ${cut} not found`,
      ],
      [
        'mutation($id: String!) { saveTemplate(input: {name: "r", imageName: "i", containerRegistryAuthId: $id}) { id } }',
        { id: long },
        `containerRegistryAuthId: container registry auth ${cut} not found`,
      ],
    ];
    // A name as long as a name may be is still named whole.
    cases.push([
      "mutation($id: String!) { deleteTemplate(templateName: $id) }",
      { id: x(191) },
      `template named "${x(191)}" not found`,
    ]);
    for (const [query, variables, message] of cases) {
      const reply = await api.gql(query, variables);
      expect(reply.status, query).toBe(200);
      expect(reply.body.errors?.[0]?.message, query).toBe(message);
      expect(reply.text.length, query).toBeLessThan(1_000);
    }
  });

  it("REST: an unknown id in a body field; a short id is still named whole", async () => {
    const reply = await api.rest<ErrorBody>("POST", "/endpoints", { templateId: long });
    expect(reply.status).toBe(400);
    expect(reply.body.message).toBe(`templateId: template ${cut} not found`);
    const short = await api.rest<ErrorBody>("POST", "/endpoints", { templateId: x(100) });
    expect(short.body.message).toBe(`templateId: template ${x(100)} not found`);
  });
});

describe("refusals of long lists", () => {
  // A list of many bad items is answered with the first few problems and a count, not one problem
  // each (an 800 KB gpuIds of 400,000 bad pool ids was answered with 65 MB).
  it("GraphQL: a comma list (gpuIds, locations) names 9 bad items and how many more, a repeated one once", async () => {
    const templateId = (
      await api.gql<{ saveTemplate: { id: string } }>(
        `mutation { saveTemplate(input: {name: "lists", imageName: "img", isServerless: true}) { id } }`,
      )
    ).body.data.saveTemplate.id;
    const save = `mutation($input: EndpointInput!) { saveEndpoint(input: $input) { id } }`;
    const distinct = (prefix: string, n: number) =>
      Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(",");
    const unknownPool = (item: string) =>
      `gpuIds: unknown GPU pool id "${item}"; expected one of AMPERE_16, AMPERE_24, ADA_24, AMPERE_48, ADA_48_PRO, AMPERE_80, ADA_80_PRO, or "-<GPU type>" to exclude one`;
    const reply = await api.gql(save, {
      input: { name: "e", templateId, gpuIds: `AMPERE_16,${distinct("a", 100_000)}` },
    });
    expect(reply.body.errors?.[0]).toMatchObject({
      message: [
        ...Array.from({ length: 9 }, (_, i) => unknownPool(`a${i}`)),
        "gpuIds: 99991 more items refused",
      ].join("; "),
      extensions: { code: "VALIDATION", field: "gpuIds" },
    });
    expect(reply.text.length).toBeLessThan(5_000);
    // One bad item given 400,000 times is one problem.
    const repeated = await api.gql(save, {
      input: { name: "e", templateId, gpuIds: `AMPERE_16,${Array(400_000).fill("a").join(",")}` },
    });
    expect(repeated.body.errors?.[0]?.message).toBe(unknownPool("a"));
    const locations = await api.gql(save, {
      input: { name: "e", templateId, gpuIds: "AMPERE_16", locations: distinct("Z", 100_000) },
    });
    expect(locations.body.errors?.[0]?.message).toMatch(/; locations: 99991 more items refused$/);
    expect(locations.text.length).toBeLessThan(5_000);
  });

  it("REST: a list of many bad items names 10 problems, then how many more", async () => {
    const template = await api.rest<{ id: string }>("POST", "/templates", {
      name: "lists-rest",
      imageName: "img",
      isServerless: true,
    });
    const reply = await api.rest<ErrorBody & { field: string }>("POST", "/endpoints", {
      templateId: template.body.id,
      dataCenterIds: Array.from({ length: 10_000 }, () => "XX-1"),
    });
    expect(reply.status).toBe(400);
    expect(reply.body.field).toBe("dataCenterIds.0");
    const problems = reply.body.message.split("; dataCenterIds.");
    expect(problems).toHaveLength(10);
    expect(problems[0]).toMatch(/^dataCenterIds\.0: Invalid option: expected one of "EU-RO-1"/);
    expect(reply.body.message).toMatch(/; and 9990 more problems$/);
    expect(reply.text.length).toBeLessThan(10_000);
  });

  it("a list past 10,000 items is refused naming it, before its items are checked (REST and GraphQL)", async () => {
    const items = (n: number) => Array.from({ length: n }, () => "XX-1");
    const over = await api.rest<ErrorBody & { field: string }>("POST", "/networkvolumes", {
      name: "v",
      size: 1,
      dataCenterId: "EU-RO-1",
      extra: { deep: items(10_001) },
    });
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({
      message: "extra.deep: 10001 items; a list holds at most 10000",
      field: "extra.deep",
    });
    const gql = await api.gql(`query($ids: [String!]) { gpuTypes(input: {ids: $ids}) { id } }`, {
      ids: items(10_001),
    });
    expect(gql.body.errors?.[0]).toMatchObject({
      message: "ids: 10001 items; a list holds at most 10000",
      extensions: { code: "VALIDATION", field: "ids" },
    });
  });

  it("one issue quoting a huge value is cut (a 500 KB gpuIds item)", async () => {
    const reply = await api.gql(`mutation($input: EndpointInput!) { saveEndpoint(input: $input) { id } }`, {
      input: { name: "e", templateId: "t", gpuIds: `AMPERE_16,${x(500_000)}` },
    });
    const message = reply.body.errors?.[0]?.message ?? "";
    expect(message).toMatch(/^gpuIds: unknown GPU pool id "x{100,}… \(\d+ characters\)$/);
    expect(reply.text.length).toBeLessThan(2_000);
  });
});
