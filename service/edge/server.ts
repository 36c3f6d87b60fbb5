import type { Server } from "node:http";
import { isIP } from "node:net";
import Fastify, { type FastifyInstance } from "fastify";
import { boundedJsonBodies, SERVER_BODY_LIMIT } from "./body";
import { installErrorHandling, redactUrl } from "./errors";

/**
 * The Fastify instance every route of the service hangs on: the server-wide body limit, JSON bodies
 * bounded in depth (body.ts), request logs
 * that never carry a key (no headers, `api_key` redacted from URLs) and the one error handler.
 */
export function edgeServer(): FastifyInstance {
  const app = Fastify({
    bodyLimit: SERVER_BODY_LIMIT,
    logger: {
      level: "warn",
      serializers: { req: (req) => ({ method: req.method, url: redactUrl(req.url) }) },
    },
  });
  boundedJsonBodies(app);
  installErrorHandling(app);
  return app;
}

/** http://<address>:<port> of a listening server (any-address binds are reached on loopback); null before it listens. */
export function listeningUrl(server: Server): string | null {
  const address = server.address();
  if (!address || typeof address === "string") return null;
  const host = address.address === "::" || address.address === "0.0.0.0" ? "127.0.0.1" : address.address;
  return `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`;
}

/** The default bind address: only this machine can reach the service. */
export const DEFAULT_HOST = "127.0.0.1";

/** True for an address only this machine can reach: localhost, 127.0.0.0/8, ::1 (and ::ffff:127.x). */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (bare === "localhost") return true;
  if (isIP(bare) === 4) return bare.startsWith("127.");
  if (isIP(bare) === 6) return bare === "::1" || bare.startsWith("::ffff:127.");
  return false;
}
