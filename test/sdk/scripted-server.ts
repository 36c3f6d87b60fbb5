import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What the scripted server saw of one request. */
export interface Hit {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

export type Script = (hit: Hit, res: ServerResponse, index: number) => void;

/**
 * A real HTTP server on 127.0.0.1 that answers by script: it tests the SDK's HTTP layer (retries,
 * timeouts, error mapping) with replies the local service never sends on purpose (503, resets).
 */
export async function startScriptedServer(script: Script) {
  const hits: Hit[] = [];
  let sockets = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const hit = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      hits.push(hit);
      script(hit, res, hits.length - 1);
    });
  });
  server.on("connection", () => {
    sockets++;
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    get sockets() {
      return sockets;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** Every string reachable from an error: message, stack, causes, JSON, own properties. */
export function everyStringOf(error: unknown): string {
  const parts: string[] = [];
  const seen = new Set<unknown>();
  const visit = (value: unknown, depth: number) => {
    if (depth > 6 || value === null || value === undefined || seen.has(value)) return;
    if (typeof value === "string") {
      parts.push(value);
      return;
    }
    if (typeof value !== "object") {
      parts.push(String(value));
      return;
    }
    seen.add(value);
    if (value instanceof Error) {
      parts.push(value.message, value.stack ?? "", String(value));
      visit(value.cause, depth + 1);
    }
    try {
      parts.push(JSON.stringify(value));
    } catch {
      // circular: the own properties below still cover it
    }
    for (const key of Object.getOwnPropertyNames(value)) {
      visit((value as Record<string, unknown>)[key], depth + 1);
    }
  };
  visit(error, 0);
  return parts.join("\n");
}

/**
 * Sends a request the scripted server saw on to `origin` (a relay in front of the local service):
 * its method, path, body, key and content-type.
 */
export function sendOn(origin: string, hit: Hit): Promise<Response> {
  const headers: Record<string, string> = { authorization: String(hit.headers.authorization ?? "") };
  if (hit.headers["content-type"]) headers["content-type"] = String(hit.headers["content-type"]);
  return fetch(`${origin}${hit.url}`, {
    method: hit.method,
    headers,
    ...(hit.body === "" ? {} : { body: hit.body }),
  });
}
