import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ValidationError } from "../../sdk/errors";
import { GraphQLClient } from "../../sdk/graphql";
import { JobClient } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";
import { type TestService, withService } from "../helpers/service";

/** The API key as developers pass it: read from a file or a .env, with its line break. */

let service: TestService;

beforeAll(async () => {
  service = await withService();
});
afterAll(async () => {
  await service?.close();
});

function thrown(build: () => unknown): unknown {
  try {
    build();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("the clients' apiKey", () => {
  it.each([
    ["a newline", "\n"],
    ["a CRLF", "\r\n"],
  ])("works with %s after it, on REST, GraphQL and the job API alike", async (_name, ending) => {
    const apiKey = `${service.apiKey}${ending}`;
    const rest = new RestClient({ apiKey, baseUrl: service.restUrl, retries: 0 });
    const graphql = new GraphQLClient({ apiKey, baseUrl: service.graphqlUrl, retries: 0 });
    try {
      const template = await rest.templates.create({
        name: `key-${ending.length}`,
        imageName: "runpodkit/echo",
        isServerless: true,
      });
      expect((await rest.templates.get(template.id)).id).toBe(template.id);
      expect(await graphql.accountId()).toMatch(/^user_/);
      const endpoint = await rest.endpoints.create({ templateId: template.id, name: "key", workersMax: 0 });
      const jobs = new JobClient({
        apiKey,
        endpointId: endpoint.id,
        baseUrl: `${service.queueUrl}/v2`,
        retries: 0,
      });
      expect((await jobs.health()).jobs.inQueue).toBe(0);
      await jobs.close();
    } finally {
      await rest.close();
      await graphql.close();
    }
  });

  /** A client build refused with a ValidationError naming apiKey and `says`, never showing the key. */
  const refusedNamingApiKey = (build: () => unknown, says: string) => {
    const error = thrown(build);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe("apiKey");
    expect((error as ValidationError).message).toContain(says);
    expect((error as ValidationError).message).not.toContain(service.apiKey.slice(8));
  };

  it("with a control character inside it is refused when the client is built, naming apiKey, not the key", () => {
    const apiKey = `${service.apiKey.slice(0, 8)}\n${service.apiKey.slice(8)}`;
    for (const build of [
      () => new RestClient({ apiKey, baseUrl: service.restUrl }),
      () => new JobClient({ apiKey, endpointId: "ep", baseUrl: `${service.queueUrl}/v2` }),
      () => new GraphQLClient({ apiKey, baseUrl: service.graphqlUrl }),
    ]) {
      refusedNamingApiKey(build, "control character");
    }
  });

  it.each([
    ["typographic quotes around it", (key: string) => `\u201c${key}\u201d`, "U+201C", 1],
    ["a zero-width space after it", (key: string) => `${key}\u200b`, "U+200B", 26],
  ])(
    "with %s is refused when the client is built, naming apiKey and the character, not the key",
    (_name, typo, named, at) => {
      // Before, undici refused the header at each call ("invalid authorization header"), a retryable
      // ConnectionError: waitFor and stream polled it as an outage for maxOutageMs (60 s) first.
      const apiKey = typo(service.apiKey);
      expect(service.apiKey).toHaveLength(25);
      for (const build of [
        () => new RestClient({ apiKey, baseUrl: service.restUrl }),
        () => new JobClient({ apiKey, endpointId: "ep", baseUrl: `${service.queueUrl}/v2` }),
        () => new GraphQLClient({ apiKey, baseUrl: service.graphqlUrl }),
      ]) {
        refusedNamingApiKey(build, `${named} at position ${at}`);
      }
    },
  );

  it("when missing, is refused naming where a key usually comes from", () => {
    const error = thrown(() => new RestClient({ apiKey: process.env.RUNPODKIT_NO_SUCH_VARIABLE as string }));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).message).toBe(
      "rest: apiKey is required: pass the account's API key, e.g. { apiKey: process.env.RUNPOD_API_KEY }",
    );
  });
});

describe("the job client's endpointId", () => {
  it.each([
    ["a newline", "\n"],
    ["a CRLF", "\r\n"],
  ])("read with %s after it (a CRLF .env) addresses the endpoint, as the key does", async (_name, ending) => {
    const rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl, retries: 0 });
    try {
      const template = await rest.templates.create({
        name: `endpoint-id-${ending.length}`,
        imageName: "runpodkit/echo",
        isServerless: true,
      });
      const endpoint = await rest.endpoints.create({
        templateId: template.id,
        name: `eid-${ending.length}`,
        workersMax: 0,
      });
      const jobs = new JobClient({
        apiKey: service.apiKey,
        endpointId: `${endpoint.id}${ending}`,
        baseUrl: `${service.queueUrl}/v2`,
        retries: 0,
      });
      try {
        expect(jobs.endpointId).toBe(endpoint.id);
        expect((await jobs.health()).jobs.inQueue).toBe(0);
      } finally {
        await jobs.close();
      }
    } finally {
      await rest.close();
    }
  });
});
