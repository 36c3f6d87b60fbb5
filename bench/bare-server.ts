/**
 * The ceiling: a bare node:http server on the same machine answering what the service answers for
 * /run and /status of a queued job, and /runsync of a no-op handler (the input echoed), with nothing
 * behind it (no routing library, validation, auth or store). It reads each request body, as the
 * service must. Run in its own process, like the service.
 *
 * The relay floor of /runsync: under endpoint `relay`, /runsync is held and its job handed to a bare
 * worker process (`bare-worker.ts`) through job-take (a long-poll) and job-done, as the service does,
 * with no rule, store or validation: three processes and four one-way hops, nothing else.
 *
 * The queue floor of the end-to-end suite: endpoint `queue` (bare-queue.ts).
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { queueFloor, queueRequests } from "./bare-queue";
import { serveIpc } from "./lib/ipc";

function reply(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

/** The relay's state: held /runsync replies by job id, jobs no worker took yet, a parked job-take. */
const held = new Map<string, ServerResponse>();
const waiting: string[] = [];
let parkedTake: ServerResponse | null = null;
let relayed = 0;

function relay(req: IncomingMessage, res: ServerResponse, parts: string[], body: string): void {
  let parsed: { input?: unknown; output?: unknown } = {};
  try {
    if (body) parsed = JSON.parse(body) as typeof parsed;
  } catch {
    reply(res, 400, JSON.stringify({ error: "body is not JSON" }));
    return;
  }
  if (req.method === "POST" && parts[3] === "runsync") {
    const id = `relay-${++relayed}`;
    held.set(id, res);
    const job = `{"id":"${id}","input":${JSON.stringify(parsed.input ?? null)}}`;
    if (parkedTake) {
      const take = parkedTake;
      parkedTake = null;
      reply(take, 200, job);
    } else waiting.push(job);
  } else if (req.method === "GET" && parts[3] === "job-take") {
    const job = waiting.shift();
    if (job) reply(res, 200, job);
    else parkedTake = res;
  } else if (req.method === "POST" && parts[3] === "job-done" && parts[5]) {
    const client = held.get(parts[5]);
    held.delete(parts[5]);
    const output = parsed.output ?? null;
    if (client) reply(client, 200, JSON.stringify({ id: parts[5], status: "COMPLETED", output }));
    // As the service: the worker's answer after the client's reply.
    reply(res, 200, "{}");
  } else reply(res, 404, JSON.stringify({ error: "not found" }));
}

function answer(req: IncomingMessage, res: ServerResponse, body: string): void {
  const [path = "/", search = ""] = (req.url ?? "/").split("?");
  // /v2/{endpoint}/run, /runsync and /status/{job}, as the job API's paths.
  const parts = path.split("/");
  if (parts[2] === "relay") relay(req, res, parts, body);
  else if (parts[2] === "queue") queueFloor(req, res, parts, search, body, reply);
  else if (req.method === "POST" && parts[3] === "runsync") {
    // The round-trip floor of /runsync: the input echoed back as a completed job, nothing queued.
    let input: unknown = null;
    try {
      input = (JSON.parse(body) as { input?: unknown }).input ?? null;
    } catch {
      reply(res, 400, JSON.stringify({ error: "body is not JSON" }));
      return;
    }
    reply(res, 200, JSON.stringify({ id: `sync-${randomUUID()}-u1`, status: "COMPLETED", output: input }));
  } else if (req.method === "POST" && parts[3] === "run") {
    reply(res, 200, JSON.stringify({ id: `${randomUUID()}-u1`, status: "IN_QUEUE" }));
  } else if (req.method === "GET" && parts[3] === "status" && parts[4]) {
    reply(res, 200, JSON.stringify({ id: parts[4], status: "IN_QUEUE" }));
  } else {
    reply(res, 404, JSON.stringify({ error: "not found" }));
  }
}

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  // The body is read in full before answering, as a real endpoint must; only /runsync, job-done and
  // the queue floor keep it (they use it), so the /run ceiling stays what it was in earlier runs.
  let body = "";
  if (req.url?.includes("/runsync") || req.url?.includes("/job-done/") || req.url?.startsWith("/v2/queue/")) {
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      body += chunk;
    });
  } else req.on("data", () => {});
  req.on("end", () => answer(req, res, body));
});

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  serveIpc({ queueRequests }, { url: `http://127.0.0.1:${port}`, pid: process.pid }, () => {
    server.closeAllConnections();
    server.close();
  });
});
