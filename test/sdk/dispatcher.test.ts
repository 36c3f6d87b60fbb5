import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent, ProxyAgent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AbortedError, ValidationError } from "../../sdk/errors";
import { GraphQLClient } from "../../sdk/graphql";
import { JobClient } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";
import { type TestService, withService } from "../helpers/service";
import { failure } from "./support";

/**
 * `dispatcher`: the clients send through the caller's undici Dispatcher, as a developer behind an
 * HTTP proxy needs (a ProxyAgent here, to a forwarding proxy in front of the local service).
 */

let service: TestService;
let proxy: Server;
let proxyUrl: string;
/** What the proxy forwarded: method and path of each request. */
const forwarded: string[] = [];

beforeAll(async () => {
  service = await withService();
  // A plain forward proxy: an http:// target comes as an absolute-form request, passed on as is.
  proxy = createServer((incoming, outgoing) => {
    const target = new URL(incoming.url ?? "");
    forwarded.push(`${incoming.method} ${target.pathname}`);
    const upstream = request(target, { method: incoming.method, headers: incoming.headers }, (reply) => {
      outgoing.writeHead(reply.statusCode ?? 502, reply.headers);
      reply.pipe(outgoing);
    });
    upstream.on("error", () => outgoing.destroy());
    incoming.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});
afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
  await service?.close();
});

async function endpointId(rest: RestClient, workersMax: number): Promise<string> {
  const template = await rest.templates.create({
    name: `dispatcher-${forwarded.length}-${workersMax}`,
    imageName: "runpodkit/echo",
    isServerless: true,
  });
  const endpoint = await rest.endpoints.create({ templateId: template.id, name: "dispatcher", workersMax });
  return endpoint.id;
}

describe("ClientOptions.dispatcher", () => {
  it("sends every call of the REST, GraphQL and job clients through it, and close() leaves it open", async () => {
    const agent = new ProxyAgent(proxyUrl);
    try {
      const rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl, dispatcher: agent });
      const graphql = new GraphQLClient({
        apiKey: service.apiKey,
        baseUrl: service.graphqlUrl,
        dispatcher: agent,
      });
      const id = await endpointId(rest, 1);
      const jobs = new JobClient({
        apiKey: service.apiKey,
        endpointId: id,
        baseUrl: `${service.queueUrl}/v2`,
        dispatcher: agent,
      });
      expect(await graphql.accountId()).toMatch(/^user_/);
      const done = await jobs.runSync({ input: { hello: "proxy" } }, { wait: 30_000 });
      expect(done).toMatchObject({ status: "COMPLETED", output: { hello: "proxy" } });
      expect(forwarded).toEqual(
        expect.arrayContaining([
          "POST /v1/templates",
          "POST /v1/endpoints",
          "POST /graphql",
          `POST /v2/${id}/runsync`,
        ]),
      );
      await Promise.all([rest.close(), graphql.close(), jobs.close()]);
      // The agent is the caller's: still usable by a new client once these are closed.
      const again = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl, dispatcher: agent });
      expect((await again.endpoints.get(id)).id).toBe(id);
      await again.close();
    } finally {
      await agent.close();
    }
  });

  it("close() waits for a call in flight on it; close({ force }) aborts one at once", async () => {
    const agent = new Agent();
    const rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
    try {
      // No workers: a /runsync is held for its whole wait.
      const id = await endpointId(rest, 0);
      const options = {
        apiKey: service.apiKey,
        endpointId: id,
        baseUrl: `${service.queueUrl}/v2`,
        dispatcher: agent,
      };
      // The service's count of queued jobs: 1 once it holds the /runsync.
      const watcher = new JobClient({ ...options, dispatcher: undefined });
      const queued = async () => (await watcher.health()).jobs.inQueue;

      const graceful = new JobClient(options);
      const held = graceful.runSync({ input: {} }, { wait: 3_000 });
      await expect.poll(queued).toBe(1);
      let closed = false;
      const closing = graceful.close().then(() => {
        closed = true;
      });
      await new Promise((resolve) => setImmediate(resolve));
      expect(closed).toBe(false);
      expect((await held).status).toBe("IN_QUEUE");
      await closing;
      const refused = await failure(graceful.health());
      expect(refused).toBeInstanceOf(ValidationError);
      expect(refused.message).toContain("the client was closed");

      const forced = new JobClient(options);
      const long = failure(forced.runSync({ input: {} }, { wait: 300_000 }));
      await expect.poll(queued).toBe(2);
      await forced.close({ force: true });
      const error = await long;
      expect(error).toBeInstanceOf(AbortedError);
      expect(error.message).toBe(
        "jobs.runSync: the client was closed with close({ force: true }) while the call was in flight",
      );
      // The caller's agent was not destroyed.
      expect(agent.destroyed).toBe(false);
      expect(agent.closed).toBe(false);
      await watcher.close();
    } finally {
      await rest.close();
      await agent.close();
    }
  });

  it("refuses what is no dispatcher, and connections beside one, naming the option", () => {
    const base = { apiKey: service.apiKey, endpointId: "ep", baseUrl: `${service.queueUrl}/v2` };
    const notOne = (() => {
      try {
        new JobClient({ ...base, dispatcher: {} as Agent });
      } catch (error) {
        return error;
      }
    })();
    expect(notOne).toBeInstanceOf(ValidationError);
    expect((notOne as ValidationError).field).toBe("dispatcher");
    const agent = new Agent();
    expect(() => new RestClient({ ...base, dispatcher: agent, connections: 4 })).toThrow(
      /connections sizes the client's own pool/,
    );
    // The job client also names the option that sizes its hold slots with a dispatcher.
    expect(() => new JobClient({ ...base, dispatcher: agent, connections: 4 })).toThrow(
      /new Agent\(\{ connections \}\)\); and pass maxHeldCalls, below that limit/,
    );
    void agent.close();
  });
});
