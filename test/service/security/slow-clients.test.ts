import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestService, withService } from "../../helpers/service";
import { clients } from "../management/client";

/*
 * A client that sends its headers, then its body a byte at a time (or not at all), must not hold a
 * connection for ever: with enough of them the process runs out of descriptors and answers nobody.
 * The bounds are made short here; the service's defaults are Node's own (edge/server.ts).
 */
const connections = { requestTimeoutMs: 600, headersTimeoutMs: 400, checkIntervalMs: 50 };

let service: TestService;
let endpointId: string;
beforeAll(async () => {
  service = await withService({ config: { connections } });
  const api = clients(service);
  const template = await api.rest<{ id: string }>("POST", "/templates", {
    name: "slow-clients",
    imageName: "runpodkit/echo",
    isServerless: true,
  });
  const endpoint = await api.rest<{ id: string }>("POST", "/endpoints", {
    name: "slow-clients",
    templateId: template.body.id,
    workersMin: 0,
    workersMax: 0,
  });
  endpointId = endpoint.body.id;
});
afterAll(() => service?.close());

/**
 * Sends `head` and then one byte of the body it announces every 100 ms, never all of it; resolves
 * with what the service wrote once it closes the connection (or once the client gives up).
 */
function trickle(head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(service.port, "127.0.0.1", () => socket.write(head));
    let answer = "";
    const drip = setInterval(() => socket.write(" "), 100);
    // Far past the bounds above: a service without them is still reading; the test says so.
    const giveUp = setTimeout(() => {
      answer += "[still open after 10 s]";
      socket.destroy();
    }, 10_000);
    socket.on("close", () => clearTimeout(giveUp));
    socket.setEncoding("utf8");
    socket.on("data", (text: string) => {
      answer += text;
    });
    socket.on("error", (error) => {
      clearInterval(drip);
      // The service closed while a byte was on its way: what it wrote before is the answer.
      if (
        (error as NodeJS.ErrnoException).code === "EPIPE" ||
        (error as NodeJS.ErrnoException).code === "ECONNRESET"
      )
        resolve(answer);
      else reject(error);
    });
    socket.on("close", () => {
      clearInterval(drip);
      resolve(answer);
    });
  });
}

const body = (method: string, path: string, headers: string[] = []) =>
  [
    `${method} ${path} HTTP/1.1`,
    "host: 127.0.0.1",
    "content-type: application/json",
    "content-length: 100000",
    ...headers,
    "",
    "",
  ].join("\r\n");

describe("a client that never finishes sending its request", () => {
  it("without a key, to an unknown path: 408 and the connection closed", async () => {
    expect(await trickle(body("POST", "/nope"))).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("the 408 is in the service's error shape (the job API's own on /v2), naming both bounds", async () => {
    const message =
      "request: not received in time (headers within 0.4 s, the whole request within 0.6 s); the connection is closed";
    const [rest, jobs] = await Promise.all([
      trickle(body("POST", "/v1/nope")),
      trickle(body("POST", `/v2/${endpointId}/nope`)),
    ]);
    expect(rest).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n[\s\S]*connection: close\r\n/);
    expect(JSON.parse(rest.split("\r\n\r\n")[1] ?? "")).toEqual({
      message,
      code: "VALIDATION",
      field: "request",
    });
    expect(JSON.parse(jobs.split("\r\n\r\n")[1] ?? "")).toEqual({
      error: message,
      message,
      code: "VALIDATION",
      field: "request",
    });
  });

  it("without a key, to the console: 408 and the connection closed", async () => {
    expect(await trickle(body("POST", "/console/"))).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("with a key, on REST, GraphQL and the job API's fast /run: 408 and the connection closed", async () => {
    const key = service.apiKey;
    const answers = await Promise.all([
      trickle(body("POST", "/v1/templates", [`authorization: Bearer ${key}`])),
      trickle(body("POST", `/graphql?api_key=${key}`)),
      trickle(body("POST", `/v2/${endpointId}/run`, [`authorization: ${key}`])),
    ]);
    for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("a reply held open longer than the request bound (a status long-poll) is not cut", async () => {
    const api = clients(service);
    const run = await api.send<{ id: string }>(`${service.queueUrl}/v2/${endpointId}/run`, {
      method: "POST",
      headers: { authorization: service.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ input: {} }),
    });
    expect(run.status).toBe(200);
    // No worker may run: the hold lasts its whole wait, past requestTimeoutMs, and answers the status.
    const held = await api.send<{ status: string }>(
      `${service.queueUrl}/v2/${endpointId}/status-sync/${run.body.id}?wait=1500`,
      { headers: { authorization: service.apiKey } },
    );
    expect(held.status).toBe(200);
    expect(held.body.status).toBe("IN_QUEUE");
  });
});

describe("a client that opens a connection and never sends a byte (a browser's preconnect, a probe)", () => {
  /** Resolves once the service ends the connection (its `close` on the client's side). */
  const closedByService = (socket: ReturnType<typeof connect>) =>
    new Promise<string>((resolve) => socket.once("close", () => resolve("closed")));

  it("does not hold the service's close: the connection is ended and close() resolves", {
    timeout: 20_000,
  }, async () => {
    const own = await withService({});
    const silent = connect(own.port, "127.0.0.1");
    await new Promise((resolve) => silent.once("connect", resolve));
    silent.on("error", () => undefined);
    // A keep-alive connection that served one request, idle since: Fastify's close ends those already.
    const idle = connect(own.port, "127.0.0.1");
    idle.on("error", () => undefined);
    await new Promise<void>((resolve) => {
      idle.once("data", () => resolve());
      idle.write(`GET /v2/x/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n`);
    });
    const ends = Promise.all([closedByService(silent), closedByService(idle)]);
    // Before, close() waited for the silent connection for as long as it stayed open (no timeout
    // applies before a first byte): this test timed out.
    await own.close();
    expect(await ends).toEqual(["closed", "closed"]);
  });
});

describe("a connection that never sends its first request", () => {
  it("is ended by the service after the headers' bound, as one that stops half-way is", async () => {
    const socket = connect(service.port, "127.0.0.1");
    socket.on("error", () => undefined);
    const outcome = await new Promise<string>((resolve) => {
      // Far past the bound (400 ms here): before, the service kept it open for as long as it stayed.
      const giveUp = setTimeout(() => resolve("still open after 10 s"), 10_000);
      socket.once("close", () => {
        clearTimeout(giveUp);
        resolve("closed by the service");
      });
    });
    socket.destroy();
    expect(outcome).toBe("closed by the service");
    // The service still answers.
    const { status } = await clients(service).rest("GET", "/endpoints");
    expect(status).toBe(200);
  });
});
