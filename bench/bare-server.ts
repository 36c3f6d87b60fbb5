/**
 * The ceiling: a bare node:http server on the same machine answering what the service answers for
 * /run and /status of a queued job, with nothing behind it (no routing library, validation, auth or
 * store). It reads each request body, as the service must. Run in its own process, like the service.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { serveIpc } from "./lib/ipc";

function reply(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

function answer(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  // /v2/{endpoint}/run and /v2/{endpoint}/status/{job}, as the job API's paths.
  const parts = path.split("/");
  if (req.method === "POST" && parts[3] === "run") {
    reply(res, 200, JSON.stringify({ id: `${randomUUID()}-u1`, status: "IN_QUEUE" }));
  } else if (req.method === "GET" && parts[3] === "status" && parts[4]) {
    reply(res, 200, JSON.stringify({ id: parts[4], status: "IN_QUEUE" }));
  } else {
    reply(res, 404, JSON.stringify({ error: "not found" }));
  }
}

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  // The body is read in full before answering, as a real endpoint must.
  req.on("data", () => {});
  req.on("end", () => answer(req, res));
});

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  serveIpc({}, { url: `http://127.0.0.1:${port}`, pid: process.pid }, () => {
    server.closeAllConnections();
    server.close();
  });
});
