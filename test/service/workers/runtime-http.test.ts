import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent, interceptors } from "undici";
import { afterEach, describe, expect, it } from "vitest";
import { exchange } from "../../../service/jobs/workers/runtime/http";

type Route = (req: IncomingMessage, body: string, res: ServerResponse) => void;

/** A plain HTTP server standing for the platform's side of one exchange. */
async function serve(route: Route): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      body += chunk;
    });
    req.on("end", () => route(req, body, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** The worker runtime's HTTP exchange (what job-take, job-done, job-stop and ping go through). */
describe("worker runtime exchange", () => {
  const agent = new Agent({ keepAliveTimeout: 60_000 });
  let server: Server | null = null;
  afterEach(async () => {
    const open = server;
    server = null;
    if (!open) return;
    open.closeAllConnections();
    await new Promise((resolve) => open.close(resolve));
  });

  it("sends method, path with query, headers and body; reads a reply sent in chunks whole, its byte order mark skipped", async () => {
    const seen: { method?: string; url?: string; auth?: string; type?: string; body?: string } = {};
    const s = await serve((req, body, res) => {
      Object.assign(seen, {
        method: req.method,
        url: req.url,
        auth: req.headers.authorization,
        type: req.headers["content-type"],
        body,
      });
      res.writeHead(200, { "content-type": "application/json" });
      res.write(Buffer.from([0xef, 0xbb, 0xbf]));
      res.write('{"id":"job-1",');
      setTimeout(() => res.end('"input":{"n":"é"}}'), 5);
    });
    server = s.server;
    const reply = await exchange(agent, `${s.url}/v2/ep/job-done/w1/job-1?isStream=false`, {
      method: "POST",
      headers: { authorization: "worker-key", "content-type": "application/json" },
      body: '{"output":1}',
    });
    expect(reply).toMatchObject({ status: 200, text: '{"id":"job-1","input":{"n":"é"}}' });
    expect(seen).toEqual({
      method: "POST",
      url: "/v2/ep/job-done/w1/job-1?isStream=false",
      auth: "worker-key",
      type: "application/json",
      body: '{"output":1}',
    });
  });

  it("answers a status without a body (204) as empty text", async () => {
    const s = await serve((_req, _body, res) => {
      res.writeHead(204);
      res.end();
    });
    server = s.server;
    const reply = await exchange(agent, `${s.url}/v2/ep/job-take/w1`, { method: "GET", headers: {} });
    expect(reply).toMatchObject({ status: 204, text: "" });
  });

  it("rejects with the signal's reason when aborted while the poll is held, and at once when already aborted", async () => {
    const s = await serve(() => {
      // Never answers: a held long-poll.
    });
    server = s.server;
    const controller = new AbortController();
    const held = exchange(agent, `${s.url}/v2/ep/job-take/w1`, {
      method: "GET",
      headers: {},
      signal: controller.signal,
    });
    const reason = new Error("shutting down");
    setTimeout(() => controller.abort(reason), 20);
    await expect(held).rejects.toBe(reason);
    await expect(
      exchange(agent, `${s.url}/v2/ep/job-take/w1`, {
        method: "GET",
        headers: {},
        signal: controller.signal,
      }),
    ).rejects.toBe(reason);
  });

  it("drops an exchange with no reply within timeoutMs, naming the request; a reply in time is read", async () => {
    let answer: ServerResponse | null = null;
    const s = await serve((req, _body, res) => {
      // The first request is held for good; the second is answered once asked.
      if (req.url?.includes("fast")) res.end("ok");
      else answer = res;
    });
    server = s.server;
    await expect(
      exchange(agent, `${s.url}/v2/ep/job-take/w1?x=1`, { method: "GET", headers: {}, timeoutMs: 50 }),
    ).rejects.toThrow("GET /v2/ep/job-take/w1: no reply within 50 ms");
    expect(answer).not.toBeNull();
    const reply = await exchange(agent, `${s.url}/fast`, { method: "GET", headers: {}, timeoutMs: 60_000 });
    expect(reply).toMatchObject({ status: 200, text: "ok" });
  });

  it("rejects on a connection error", async () => {
    const s = await serve((_req, _body, res) => res.end());
    const { url } = s;
    await new Promise((resolve) => s.server.close(resolve));
    await expect(exchange(agent, `${url}/v2/ep/ping/w1`, { method: "GET", headers: {} })).rejects.toThrow(
      /ECONNREFUSED/,
    );
  });

  it("goes through a composed dispatcher: a 503 is retried and the reply after it is the one read", async () => {
    let calls = 0;
    const s = await serve((_req, _body, res) => {
      calls++;
      if (calls === 1) {
        res.writeHead(503, { "retry-after": "0" });
        res.end("busy");
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
    server = s.server;
    const retrying = agent.compose(
      interceptors.retry({
        maxRetries: 2,
        minTimeout: 10,
        methods: ["POST"],
        statusCodes: [503],
        errorCodes: [],
        throwOnError: false,
      }),
    );
    const reply = await exchange(retrying, `${s.url}/v2/ep/job-done/w1/job-1`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"output":1}',
    });
    expect(reply).toMatchObject({ status: 200, text: "{}" });
    expect(calls).toBe(2);
  });
});
