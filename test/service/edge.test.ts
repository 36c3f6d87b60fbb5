import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RestClient } from "../../sdk/rest";
import { handleClientError } from "../../service/edge/errors";
import { edgeServer } from "../../service/edge/server";
import { type TestService, withService } from "../helpers/service";

/*
 * The edge is one place (service/edge/): the same refusal reaches every wire, each in its own body.
 * REST {message, code, field?}; the job API {error, message, code, field?}; GraphQL {errors, data}.
 */

let service: TestService;
let endpointId: string;

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const reply = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  return { status: reply.status, body: (await reply.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  service = await withService();
  const auth = { authorization: `Bearer ${service.apiKey}` };
  const template = await post(
    `${service.restUrl}/templates`,
    JSON.stringify({ name: "edge", imageName: "runpodkit/echo", isServerless: true }),
    auth,
  );
  const endpoint = await post(
    `${service.restUrl}/endpoints`,
    JSON.stringify({ templateId: template.body.id, workersMax: 0 }),
    auth,
  );
  endpointId = String(endpoint.body.id);
});
afterAll(() => service.close());

describe("one refusal, three wires", () => {
  it("malformed JSON is VALIDATION on field `body` in each wire's body", async () => {
    const malformed = '{"name": ';
    const rest = await post(`${service.restUrl}/templates`, malformed, {
      authorization: `Bearer ${service.apiKey}`,
    });
    expect(rest.status).toBe(400);
    expect(rest.body).toEqual({
      message: expect.stringMatching(/^body: /),
      code: "VALIDATION",
      field: "body",
    });

    const jobs = await post(`${service.queueUrl}/v2/${endpointId}/run`, malformed, {
      authorization: service.apiKey,
    });
    expect(jobs.status).toBe(400);
    expect(jobs.body).toEqual({
      error: rest.body.message,
      message: rest.body.message,
      code: "VALIDATION",
      field: "body",
    });

    const graphql = await post(`${service.graphqlUrl}?api_key=${service.apiKey}`, malformed);
    expect(graphql.status).toBe(400);
    expect(graphql.body).toEqual({
      errors: [{ message: rest.body.message, extensions: { code: "VALIDATION", field: "body" } }],
      data: null,
    });
  });

  it("a field left out reads 'required' (not zod's 'expected string, received undefined'), as the SDK says it", async () => {
    const auth = { authorization: `Bearer ${service.apiKey}` };
    const rest = await post(`${service.restUrl}/templates`, JSON.stringify({ name: "no-image" }), auth);
    expect(rest).toEqual({
      status: 400,
      body: { message: "imageName: required", code: "VALIDATION", field: "imageName" },
    });
    // A wrong type is still said as zod says it.
    const wrong = await post(
      `${service.restUrl}/templates`,
      JSON.stringify({ name: "n", imageName: 5 }),
      auth,
    );
    expect(wrong.body.message).toBe("imageName: Invalid input: expected string, received number");
    const sdk = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
    try {
      await expect(sdk.templates.create({ name: "no-image" } as never)).rejects.toMatchObject({
        code: "VALIDATION",
        field: "imageName",
        message: "rest.templates.create: invalid input: imageName: required",
      });
    } finally {
      await sdk.close();
    }
  });

  it("a left-out enum field reads 'required' too (zod calls it an invalid option)", async () => {
    const auth = { authorization: `Bearer ${service.apiKey}` };
    const rest = await post(
      `${service.restUrl}/networkvolumes`,
      JSON.stringify({ name: "v", size: 10 }),
      auth,
    );
    expect(rest).toEqual({
      status: 400,
      body: { message: "dataCenterId: required", code: "VALIDATION", field: "dataCenterId" },
    });
    // A value outside the enum still lists the options.
    const wrong = await post(
      `${service.restUrl}/networkvolumes`,
      JSON.stringify({ name: "v", size: 10, dataCenterId: "MARS-1" }),
      auth,
    );
    expect(wrong.body.message).toMatch(/^dataCenterId: Invalid option: expected one of "EU-RO-1"/);
  });

  it("a missing body reads the same on REST and on the job API", async () => {
    const rest = await fetch(`${service.restUrl}/templates`, {
      method: "POST",
      headers: { authorization: `Bearer ${service.apiKey}` },
    });
    const jobs = await fetch(`${service.queueUrl}/v2/${endpointId}/run`, {
      method: "POST",
      headers: { authorization: service.apiKey },
    });
    expect([rest.status, jobs.status]).toEqual([400, 400]);
    const message = "body: a JSON object is required";
    expect(await rest.json()).toMatchObject({ message, code: "VALIDATION", field: "body" });
    expect(await jobs.json()).toMatchObject({ error: message, code: "VALIDATION", field: "body" });
  });

  it("an unknown route is NOT_FOUND in the body of the wire its path belongs to", async () => {
    const rest = await fetch(`${service.restUrl}/nothing-here`);
    expect(rest.status).toBe(404);
    expect(await rest.json()).toEqual({ message: "no route GET /v1/nothing-here", code: "NOT_FOUND" });
    const jobs = await fetch(`${service.queueUrl}/v2/${endpointId}/nothing-here`);
    expect(jobs.status).toBe(404);
    expect(await jobs.json()).toMatchObject({ error: `no route GET /v2/${endpointId}/nothing-here` });
    // Under none of the APIs (a client's base URL without /v1): where they are.
    const bare = await fetch(`${service.queueUrl}/templates`);
    expect(bare.status).toBe(404);
    expect(await bare.json()).toEqual({
      message:
        "no route GET /templates (this service answers REST under /v1, the job API under /v2/{endpoint id}, GraphQL at /graphql, the console at /console/)",
      code: "NOT_FOUND",
    });
  });

  it("a wrong key is UNAUTHORIZED on every wire, and never echoed", async () => {
    const wrong = "rpk_wrong_0123456789";
    const rest = await fetch(`${service.restUrl}/templates`, {
      headers: { authorization: `Bearer ${wrong}` },
    });
    const jobs = await fetch(`${service.queueUrl}/v2/${endpointId}/health`, {
      headers: { authorization: wrong },
    });
    const graphql = await post(
      `${service.graphqlUrl}?api_key=${wrong}`,
      JSON.stringify({ query: "{ myself { id } }" }),
    );
    expect([rest.status, jobs.status, graphql.status]).toEqual([401, 401, 401]);
    const bodies = [await rest.text(), await jobs.text(), JSON.stringify(graphql.body)];
    for (const text of bodies) {
      expect(text).toContain("UNAUTHORIZED");
      expect(text).not.toContain(wrong);
    }
  });
});

/** Writes `raw` on a fresh connection; resolves with all the service wrote once it closes. */
function rawExchange(raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(service.port, "127.0.0.1", () => socket.write(raw));
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (text: string) => {
      answer += text;
    });
    socket.on("error", (error: NodeJS.ErrnoException) =>
      error.code === "ECONNRESET" || error.code === "EPIPE" ? resolve(answer) : reject(error),
    );
    socket.on("close", () => resolve(answer));
  });
}

/** A raw HTTP answer's status line, headers (lower case) and JSON body. */
function parsed(answer: string) {
  const [head = "", text = ""] = answer.split("\r\n\r\n");
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers = Object.fromEntries(
    lines.map((line) => [
      line.slice(0, line.indexOf(":")).toLowerCase(),
      line.slice(line.indexOf(":") + 1).trim(),
    ]),
  );
  return { statusLine, headers, body: JSON.parse(text) as unknown };
}

describe("not found and method not allowed", () => {
  it("a docs file that does not exist is 404 for GET and HEAD, not 405 naming the other", async () => {
    const missing = await fetch(`${service.restUrl}/docs/no-such-file.js`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("allow")).toBeNull();
    expect(await missing.json()).toEqual({
      message: "nothing at GET /v1/docs/no-such-file.js",
      code: "NOT_FOUND",
    });
    const head = await fetch(`${service.restUrl}/docs/no-such-file.js`, { method: "HEAD" });
    expect(head.status).toBe(404);
    expect(head.headers.get("allow")).toBeNull();
    // The pages that exist still answer, and a method the docs do not take is still 405.
    expect((await fetch(`${service.restUrl}/docs/`)).status).toBe(200);
    const post = await fetch(`${service.restUrl}/docs/no-such-file.js`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect(await post.json()).toEqual({
      message: "POST is not a method of /v1/docs/no-such-file.js; it takes GET, HEAD",
      code: "METHOD_NOT_ALLOWED",
    });
  });
});

describe("a long unknown path", () => {
  it("is named by its first 200 characters and its length, not repeated whole (404 and 405)", async () => {
    const long = `/nothing/${"a".repeat(8000)}`;
    const missing = await fetch(`${service.queueUrl}${long}`);
    expect(missing.status).toBe(404);
    const body = (await missing.json()) as { message: string };
    expect(body.message).toBe(
      `no route GET ${long.slice(0, 200)}… (${long.length} characters) (this service answers REST under /v1, the job API under /v2/{endpoint id}, GraphQL at /graphql, the console at /console/)`,
    );
    const docs = await fetch(`${service.restUrl}/docs/${"b".repeat(8000)}`);
    expect(docs.status).toBe(404);
    expect(((await docs.json()) as { message: string }).message.length).toBeLessThan(300);
    const wrongMethod = await fetch(`${service.restUrl}/docs/${"c".repeat(8000)}`, { method: "DELETE" });
    expect(wrongMethod.status).toBe(405);
    expect(((await wrongMethod.json()) as { message: string }).message.length).toBeLessThan(300);
  });
});

describe("Node's own refusals, before any route, in the service's error shape", () => {
  it("a request line that is not HTTP: 400 {message, code, field}, connection closed", async () => {
    const answer = parsed(await rawExchange("FOO BAR BAZ\r\n\r\n"));
    expect(answer.statusLine).toBe("HTTP/1.1 400 Bad Request");
    expect(answer.headers.connection).toBe("close");
    expect(answer.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(answer.body).toEqual({
      message: "request: not valid HTTP/1.1 (HPE_INVALID_METHOD); the connection is closed",
      code: "VALIDATION",
      field: "request",
    });
  });

  it("a malformed header line: 400 naming Node's parser error, not echoing the bytes", async () => {
    const answer = parsed(
      await rawExchange(`GET /v1/pods HTTP/1.1\r\nhost: 127.0.0.1\r\n${service.apiKey} oops\r\n\r\n`),
    );
    expect(answer.statusLine).toBe("HTTP/1.1 400 Bad Request");
    expect(answer.body).toEqual({
      message: "request: not valid HTTP/1.1 (HPE_INVALID_HEADER_TOKEN); the connection is closed",
      code: "VALIDATION",
      field: "request",
    });
    expect(JSON.stringify(answer.body)).not.toContain(service.apiKey);
  });

  it("headers past Node's limit: 431 PAYLOAD_TOO_LARGE on field `headers`", async () => {
    const answer = parsed(
      await rawExchange(`GET /v1/pods HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`),
    );
    expect(answer.statusLine).toBe("HTTP/1.1 431 Request Header Fields Too Large");
    expect(answer.headers.connection).toBe("close");
    expect(answer.body).toEqual({
      message:
        "headers: larger than the 16384 bytes this server takes (Node's --max-http-header-size); the connection is closed",
      code: "PAYLOAD_TOO_LARGE",
      field: "headers",
    });
  });
});

describe("the clientError handler on a socket that cannot take an answer", () => {
  const bounds = { requestTimeoutMs: 1000, headersTimeoutMs: 500 };
  /** A stand-in socket recording what the handler does to it. */
  const socket = (state: {
    destroyed?: boolean;
    writable?: boolean;
    headersSent?: boolean;
    throws?: boolean;
  }) => {
    const done = { written: [] as string[], destroyed: state.destroyed ?? false };
    const fake = {
      get destroyed() {
        return done.destroyed;
      },
      writable: state.writable ?? true,
      _httpMessage:
        state.headersSent === undefined
          ? undefined
          : { headersSent: state.headersSent, req: { url: "/v2/x/run" } },
      write(text: string) {
        if (state.throws) throw new Error("write after end");
        done.written.push(text);
        return true;
      },
      destroy() {
        done.destroyed = true;
      },
    };
    return { fake: fake as unknown as Parameters<ReturnType<typeof handleClientError>>[1], done };
  };
  const timeout = Object.assign(new Error("timeout"), { code: "ERR_HTTP_REQUEST_TIMEOUT" });

  it("writes nothing on a destroyed or unwritable socket, or after a reply of its own started; closes it", () => {
    for (const state of [{ destroyed: true }, { writable: false }, { headersSent: true }]) {
      const { fake, done } = socket(state);
      handleClientError(bounds)(timeout, fake);
      expect({ state, written: done.written, destroyed: done.destroyed }).toEqual({
        state,
        written: [],
        destroyed: true,
      });
    }
  });

  it("answers a request whose reply has not started in its wire's shape, and never throws", () => {
    const { fake, done } = socket({ headersSent: false });
    handleClientError(bounds)(timeout, fake);
    expect(done.written).toHaveLength(1);
    expect(done.written[0]).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(JSON.parse(done.written[0]?.split("\r\n\r\n")[1] ?? "")).toMatchObject({
      code: "VALIDATION",
      error: expect.any(String),
    });
    const failing = socket({ throws: true });
    expect(() => handleClientError(bounds)(timeout, failing.fake)).not.toThrow();
    expect(failing.done.destroyed).toBe(true);
    const reset = socket({});
    handleClientError(bounds)(Object.assign(new Error("reset"), { code: "ECONNRESET" }), reset.fake);
    expect(reset.done).toEqual({ written: [], destroyed: true });
  });
});

describe("the edge's Fastify instance", () => {
  it("refuses a route that declares a JSON schema: input is parsed with zod, not half-checked by ajv", async () => {
    const app = edgeServer();
    app.post("/typed", { schema: { body: { type: "object" } } }, async () => ({}));
    await expect(app.ready()).rejects.toThrow(/JSON validation schema; the service parses with zod/);
    const answering = edgeServer();
    answering.get("/typed", { schema: { response: { 200: { type: "object" } } } }, async () => ({}));
    await expect(answering.ready()).rejects.toThrow(/JSON response schema; the service parses with zod/);
  });
});
