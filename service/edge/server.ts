import Fastify, { type FastifyInstance } from "fastify";
import { SERVER_BODY_LIMIT } from "./body";
import { installErrorHandling, redactUrl } from "./errors";

/**
 * The Fastify instance every route of the service hangs on: the server-wide body limit, request logs
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
  installErrorHandling(app);
  return app;
}
