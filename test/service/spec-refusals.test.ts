import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fieldOf, messageOf, send } from "./answers";
import { type Harness, startHarness } from "./jobs/harness";

/*
 * Refusals the spec audit found naming the wrong thing, over HTTP on a service with the job API's fast
 * path and on one without it (every request through Fastify): an unknown key of a management body
 * named by its path (not `body`), an empty job id as a 400 naming jobId (not 404 "job  not found"),
 * and every content-type but JSON refused alike, saying what to send.
 */

let fast: Harness;
let plain: Harness;
beforeAll(async () => {
  fast = await startHarness();
  plain = await startHarness({ config: { fastPath: false } });
});
afterAll(async () => {
  await fast?.close();
  await plain?.close();
});

describe("an unknown key of a management body is named by its path", () => {
  it.each([
    [
      "POST /v1/endpoints",
      "/v1/endpoints",
      { name: "e", templateId: "t", gpuTypeIDs: ["ADA_24"] },
      "gpuTypeIDs",
    ],
    ["POST /v1/templates", "/v1/templates", { name: "t", imageName: "i", bogus: 1 }, "bogus"],
    [
      "POST /v1/networkvolumes",
      "/v1/networkvolumes",
      { name: "v", size: 10, dataCenterId: "EU-RO-1", sizeGB: 10 },
      "sizeGB",
    ],
  ])("%s", async (_name, path, body, field) => {
    const answer = await send(fast, "POST", path, JSON.stringify(body));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: "VALIDATION", field });
    expect(answer.body.message).toContain(`"${field}"`);
  });

  it("an unknown query parameter by its name", async () => {
    const pods = await send(fast, "GET", "/v1/pods?bogusFilter=1");
    expect(pods.status).toBe(400);
    expect(pods.body).toMatchObject({ code: "VALIDATION", field: "bogusFilter" });
  });

  it("a key past 100 characters is cut in the field", async () => {
    const key = `k${"x".repeat(5_000)}`;
    const answer = await send(
      fast,
      "POST",
      "/v1/templates",
      JSON.stringify({ name: "t", imageName: "i", [key]: 1 }),
    );
    expect(answer.status).toBe(400);
    expect(answer.body.field).toBe(`${key.slice(0, 100)}…`);
  });
});

describe("GraphQL: an input field its type does not define is named from the argument", () => {
  const TEMPLATE = 'name: "t", imageName: "i", containerDiskInGb: 5, volumeInGb: 0, dockerArgs: ""';
  const SAVE = "mutation S($input: SaveTemplateInput!) { saveTemplate(input: $input) { id } }";
  const input = { name: "t", imageName: "i", containerDiskInGb: 5, volumeInGb: 0, dockerArgs: "" };
  const env = [
    { key: "A", value: "1" },
    { key: "B", value: "2", secrett: true },
  ];

  it.each([
    [
      "inline, at the top",
      `mutation { saveTemplate(input: {${TEMPLATE}, bogus: 1}) { id } }`,
      undefined,
      "bogus",
    ],
    [
      "inline, in a list item",
      `mutation { saveTemplate(input: {${TEMPLATE}, env: [{key: "A", value: "1"}, {key: "B", value: "2", secrett: true}]}) { id } }`,
      undefined,
      "env.1.secrett",
    ],
    ["a variable, at the top", SAVE, { input: { ...input, bogus: 1 } }, "bogus"],
    ["a variable, in a list item", SAVE, { input: { ...input, env } }, "env.1.secrett"],
    [
      "a variable used inside the argument",
      `mutation S($env: [EnvironmentVariableInput!]) { saveTemplate(input: {${TEMPLATE}, env: $env}) { id } }`,
      { env },
      "env.1.secrett",
    ],
  ])("%s", async (_name, query, variables, field) => {
    const answer = await send(fast, "POST", "/graphql", JSON.stringify({ query, variables }));
    expect(answer.status).toBe(200);
    const errors = answer.body.errors as { message: string; extensions: Record<string, unknown> }[];
    expect(errors).toHaveLength(1);
    expect(errors[0]?.extensions).toEqual({ code: "GRAPHQL_VALIDATION", field });
    expect(errors[0]?.message).toContain(`Field "${field.split(".").pop()}" is not defined by type`);
  });

  it("another refusal of the document names no field", async () => {
    const answer = await send(fast, "POST", "/graphql", JSON.stringify({ query: "{ myself { nope } }" }));
    const errors = answer.body.errors as { extensions: Record<string, unknown> }[];
    expect(errors[0]?.extensions).toEqual({ code: "GRAPHQL_VALIDATION" });
  });
});

describe("an empty job id is a 400 naming jobId, on every job route", () => {
  const routes = [
    ["GET", "status"],
    ["POST", "status"],
    ["GET", "status-sync"],
    ["POST", "status-sync"],
    ["GET", "stream"],
    ["POST", "stream"],
    ["POST", "cancel"],
    ["POST", "retry"],
  ] as const;

  it.each(routes)("%s /v2/{endpoint}/%s/", async (method, route) => {
    for (const h of [fast, plain]) {
      const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
      const answer = await send(h, method, `/v2/${ep.id}/${route}/`);
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ code: "VALIDATION", field: "jobId" });
      expect(answer.body.error).toMatch(/^jobId: a job id is required/);
    }
  });

  it("a worker's job-done and job-stream, on the fast path and through Fastify", async () => {
    for (const h of [fast, plain]) {
      const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
      const before = h.plane.fast?.served ?? 0;
      const done = await send(h, "POST", `/v2/${ep.id}/job-done/w-empty/?gpu=LOCAL`, '{"output": 1}');
      expect(done.status).toBe(400);
      expect(done.body).toMatchObject({ code: "VALIDATION", field: "jobId" });
      // An id of nothing but parameters a template without `?` appended (`&isStream=false`) too.
      const appended = await send(
        h,
        "POST",
        `/v2/${ep.id}/job-done/w-empty/&isStream=false`,
        '{"output": 1}',
      );
      expect(appended.status).toBe(400);
      expect(appended.body).toMatchObject({ code: "VALIDATION", field: "jobId" });
      const stream = await send(h, "POST", `/v2/${ep.id}/job-stream/w-empty/`, '{"output": 1}');
      expect(stream.status).toBe(400);
      expect(stream.body).toMatchObject({ code: "VALIDATION", field: "jobId" });
      // job-done went the fast way on the service that has one.
      if (h === fast) expect(h.plane.fast?.served).toBe(before + 2);
    }
  });

  it("an empty endpoint id likewise, a 400 naming endpointId, on a client's and a worker's routes", async () => {
    for (const h of [fast, plain]) {
      for (const [method, path, body] of [
        ["POST", "/v2//run", '{"input": {}}'],
        ["POST", "/v2//runsync", '{"input": {}}'],
        ["GET", "/v2//status/j1", undefined],
        ["GET", "/v2//health", undefined],
        ["GET", "/v2//job-take/w-empty", undefined],
        ["POST", "/v2//job-done/w-empty/j1", '{"output": 1}'],
      ] as const) {
        const answer = await send(h, method, path, body);
        expect(answer.status, path).toBe(400);
        expect(answer.body, path).toMatchObject({ code: "VALIDATION", field: "endpointId" });
      }
    }
  });

  it("a job id that is given but unknown is still 404", async () => {
    const ep = fast.endpoint("runpodkit/echo", { workersMax: 0 });
    const answer = await send(fast, "GET", `/v2/${ep.id}/status/no-such-job`);
    expect(answer.status).toBe(404);
    expect(answer.body).toMatchObject({ code: "NOT_FOUND", field: "jobId" });
  });
});

describe("a body of any content-type but JSON is refused alike, naming the content-type to send", () => {
  const TYPES = [
    "text/plain",
    "text/plain;charset=UTF-8",
    "application/x-www-form-urlencoded",
    "application/xml",
    "multipart/form-data; boundary=x",
  ];
  const EXPECTED =
    "body: a JSON object is required, sent with content-type: application/json (no other content-type is accepted)";

  it.each(TYPES)("%s: /run, /runsync, REST and GraphQL answer 415 alike", async (type) => {
    for (const h of [fast, plain]) {
      const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
      for (const path of [`/v2/${ep.id}/run`, `/v2/${ep.id}/runsync`, "/v1/networkvolumes", "/graphql"]) {
        const body = path === "/graphql" ? '{"query": "{ myself { id } }"}' : '{"input": {}}';
        const answer = await send(h, "POST", path, body, type);
        expect(answer.status, `${type} ${path}`).toBe(415);
        expect(messageOf(answer), `${type} ${path}`).toBe(EXPECTED);
        expect(fieldOf(answer)).toBe("body");
      }
    }
  });

  it("a bodyless POST that says text/plain is still answered (no body, nothing to refuse)", async () => {
    const ep = fast.endpoint("runpodkit/echo", { workersMax: 0 });
    const queued = await send(fast, "POST", `/v2/${ep.id}/run`, '{"input": {}}');
    expect(queued.status).toBe(200);
    const cancelled = await send(
      fast,
      "POST",
      `/v2/${ep.id}/cancel/${String(queued.body.id)}`,
      "",
      "text/plain",
    );
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id: queued.body.id, status: "CANCELLED" });
  });

  it("a JSON string sent as application/json is a 400 about its type, not about the content-type", async () => {
    const ep = fast.endpoint("runpodkit/echo", { workersMax: 0 });
    const answer = await send(fast, "POST", `/v2/${ep.id}/run`, '"text"');
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: "VALIDATION", field: "body" });
    expect(answer.body.error).not.toContain("content-type");
  });
});
