import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import {
  ConflictError,
  GraphQLError,
  RateLimitedError,
  TimeoutError,
  UnauthorizedError,
  ValidationError,
} from "../../sdk/errors";
import { GraphQLClient } from "../../sdk/graphql";
import { everyStringOf, json, type Script, startScriptedServer } from "./scripted-server";
import { closeAfterEach, failure } from "./support";

/**
 * The GraphQL client's own layer (transport, variables, error mapping, redaction) against scripted
 * replies, including ones the local service does not send on purpose. Behaviour against the real
 * schema is in graphql.test.ts.
 */

const KEY = "rpa_GRAPHQLKEY_0123456789";
const PASSWORD = "registry-password-42";

const cleanup = closeAfterEach();

async function setup(script: Script) {
  const server = await startScriptedServer(script);
  const client = new GraphQLClient({
    apiKey: KEY,
    baseUrl: `${server.url}/graphql`,
    retry: { schedule: (run) => setImmediate(run), random: () => 0 },
  });
  cleanup.push(
    () => server.close(),
    () => client.close(),
  );
  return { server, client };
}

const endpointInput = {
  name: "e1",
  templateId: "t1",
  gpuIds: "AMPERE_16",
  flashBootType: "FLASHBOOT",
} as const;

describe("GraphQL transport", () => {
  it("sends the key as ?api_key= and values only as variables", async () => {
    const { server, client } = await setup((_hit, res) =>
      json(res, 200, { errors: [{ message: "stop here" }], data: null }),
    );
    await failure(client.saveEndpoint(endpointInput));
    const hit = server.hits[0]!;
    expect(hit.url).toBe(`/graphql?api_key=${KEY}`);
    const body = JSON.parse(hit.body) as { query: string; variables: { input: Record<string, unknown> } };
    expect(body.query).toContain("mutation saveEndpoint($input: EndpointInput!)");
    expect(body.query).not.toContain("FLASHBOOT");
    expect(body.query).not.toContain("e1");
    expect(body.variables.input).toMatchObject({ name: "e1", flashBootType: "FLASHBOOT" });
  });

  it("validates the input before sending (no HTTP call)", async () => {
    const { server, client } = await setup((_hit, res) => json(res, 200, {}));
    const error = await failure(client.saveEndpoint({ ...endpointInput, gpuIds: "NOT_A_POOL" }));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.field).toBe("gpuIds");
    expect(server.hits).toHaveLength(0);
  });

  it("maps extensions.code to the typed error, and NOT_FOUND on getEndpoint to null", async () => {
    const { client } = await setup((hit, res) => {
      const { query } = JSON.parse(hit.body) as { query: string };
      const code = query.includes("getEndpoint") ? "NOT_FOUND" : "IN_USE";
      json(res, 200, { errors: [{ message: "no", extensions: { code, field: "id" } }], data: null });
    });
    await expect(client.getEndpoint("missing")).resolves.toBeNull();
    const error = await failure(client.deleteEndpoint("e1"));
    expect(error).toBeInstanceOf(ConflictError);
    expect(error.serviceCode).toBe("IN_USE");
    expect(error.field).toBe("id");
    expect(error.operation).toBe("graphql.deleteEndpoint");
  });

  it("keeps uncoded GraphQL errors as a GraphQLError with the errors array", async () => {
    const { client } = await setup((_hit, res) =>
      json(res, 200, { errors: [{ message: "first", path: ["myself"] }, { message: "second" }], data: null }),
    );
    const error = await failure(client.listEndpoints());
    expect(error).toBeInstanceOf(GraphQLError);
    expect((error as GraphQLError).errors.map((e) => e.message)).toEqual(["first", "second"]);
    expect(error.message).toBe("graphql.listEndpoints: first; second");
  });

  it("maps HTTP 401 to UnauthorizedError", async () => {
    const { client } = await setup((_hit, res) => json(res, 401, { message: "bad key" }));
    const error = await failure(client.listTemplates());
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error.status).toBe(401);
  });

  it("carries a 429's Retry-After into the RateLimitedError, as the job client does", async () => {
    const { server, client } = await setup((hit, res) => {
      const { query } = JSON.parse(hit.body) as { query: string };
      // A query's 429 asks past the 60 s cap (handed back, not waited); a mutation's is never retried.
      if (query.startsWith("query")) {
        res.writeHead(429, { "content-type": "text/plain", "retry-after": "120" });
        return res.end("Too Many Requests");
      }
      return json(
        res,
        429,
        { errors: [{ message: "slow down", extensions: { code: "RATE_LIMITED" } }] },
        { "retry-after": "2" },
      );
    });
    const query = await failure(client.listTemplates());
    expect(query).toBeInstanceOf(RateLimitedError);
    expect(query.toJSON()).toMatchObject({
      code: "RATE_LIMITED",
      operation: "graphql.listTemplates",
      status: 429,
      retryAfterMs: 120_000,
    });
    const mutation = await failure(client.deleteNetworkVolume("v1"));
    expect(mutation).toBeInstanceOf(RateLimitedError);
    expect(mutation.toJSON()).toMatchObject({
      code: "RATE_LIMITED",
      serviceCode: "RATE_LIMITED",
      retryAfterMs: 2_000,
    });
    expect(server.hits).toHaveLength(2);
  });

  it("retries queries on 503 but never mutations", async () => {
    const { server, client } = await setup((hit, res, i) => {
      const { query } = JSON.parse(hit.body) as { query: string };
      if (query.startsWith("query") && i === 0) return json(res, 503, {});
      if (query.startsWith("query")) return json(res, 200, { data: { myself: { networkVolumes: [] } } });
      return json(res, 503, {});
    });
    await expect(client.listNetworkVolumes()).resolves.toEqual([]);
    expect(server.hits).toHaveLength(2);
    await failure(client.deleteNetworkVolume("v1"));
    expect(server.hits).toHaveLength(3);
  });

  it("concurrent calls on one client keep their own settings, and none of them goes on the wire", async () => {
    // One query's reply never comes; the other query and the mutation get a 503 first. Each call must
    // end by its own budget and retry mode (queries retry, mutations never), under its own name.
    let templateListings = 0;
    const { server, client } = await setup((hit, res) => {
      const { query } = JSON.parse(hit.body) as { query: string };
      if (query.includes("listRegistryAuths")) return undefined;
      if (query.includes("listTemplates") && templateListings++ > 0) {
        return json(res, 200, { data: { myself: { podTemplates: [] } } });
      }
      return json(res, 503, {});
    });
    const [slow, fast, mutation] = await Promise.allSettled([
      client.listRegistryAuths({ timeoutMs: 100 }),
      client.listTemplates({ timeoutMs: 5_000 }),
      client.deleteTemplate("t1"),
    ]);
    expect(slow.status === "rejected" && slow.reason).toBeInstanceOf(TimeoutError);
    expect(slow.status === "rejected" && (slow.reason as TimeoutError).operation).toBe(
      "graphql.listRegistryAuths",
    );
    expect(fast).toEqual({ status: "fulfilled", value: [] });
    expect(mutation.status === "rejected" && (mutation.reason as { operation: string }).operation).toBe(
      "graphql.deleteTemplate",
    );
    expect(server.hits).toHaveLength(4);
    for (const hit of server.hits) {
      expect(Object.keys(hit.headers).filter((name) => name.startsWith("x-runpodkit"))).toEqual([]);
    }
  });

  it("times out by the call's budget", async () => {
    const { client } = await setup(() => undefined);
    const error = await failure(client.listRegistryAuths({ timeoutMs: 50 }));
    expect(error).toBeInstanceOf(TimeoutError);
  });

  it("falls back to the portable endpoint selection when the schema refuses the extended one", async () => {
    const endpoint = {
      id: "ep1",
      name: "n",
      userId: "u",
      templateId: "t",
      gpuIds: "AMPERE_16",
      idleTimeout: 5,
      locations: null,
      flashBootType: "OFF",
      scalerType: "QUEUE_DELAY",
      scalerValue: 4,
      workersMin: 0,
      workersMax: 1,
      workersStandby: 1,
      networkVolumeId: null,
      type: "QB",
      computeType: "GPU",
      gpuCount: 1,
      executionTimeoutMs: 600000,
      env: [],
      allowedCudaVersions: null,
      instanceIds: [],
      version: 0,
      createdAt: "2026-01-01T00:00:00.000Z",
      pods: [],
    };
    const { server, client } = await setup((hit, res) => {
      const { query } = JSON.parse(hit.body) as { query: string };
      if (query.includes("modelName")) {
        return json(res, 200, {
          errors: [{ message: "Cannot query field", extensions: { code: "GRAPHQL_VALIDATION_FAILED" } }],
        });
      }
      return json(res, 200, { data: { myself: { endpoint, endpoints: [endpoint] } } });
    });
    expect(await client.getEndpoint("ep1")).toEqual(endpoint);
    expect(server.hits).toHaveLength(2);
    // remembered: the next read goes straight to the portable selection
    expect(await client.listEndpoints()).toEqual([endpoint]);
    expect(server.hits).toHaveLength(3);
  });

  it("never leaks the key or a registry password, even when the reply echoes them", async () => {
    const { client } = await setup((hit, res) =>
      json(res, 200, { errors: [{ message: `refused ${hit.url} ${hit.body}` }], data: null }),
    );
    const error = await failure(client.saveRegistryAuth({ name: "r", username: "u", password: PASSWORD }));
    const text = everyStringOf(error);
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(PASSWORD);
    expect(text).toContain("api_key=***");
  });

  it("redacts the key from a GraphQLError's extensions and path too", async () => {
    const { client } = await setup((hit, res) =>
      json(res, 200, {
        errors: [
          {
            message: "refused",
            path: ["myself", `at ${hit.url}`],
            extensions: { request: { url: hit.url, headers: [`api_key=${KEY}`] }, [KEY]: KEY, attempts: 1 },
          },
        ],
        data: null,
      }),
    );
    const error = await failure(client.listEndpoints());
    expect(error).toBeInstanceOf(GraphQLError);
    const text = `${everyStringOf(error)}\n${inspect(error, { depth: 10 })}`;
    expect(text).not.toContain(KEY);
    const [item] = (error as GraphQLError).errors;
    expect(item?.extensions).toEqual({
      request: { url: "/graphql?api_key=***", headers: ["api_key=***"] },
      "***": "***",
      attempts: 1,
    });
    expect(item?.path).toEqual(["myself", "at /graphql?api_key=***"]);
  });
});
