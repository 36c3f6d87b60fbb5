/**
 * The documentation pages under /v1/docs (@fastify/swagger-ui over our own OpenAPI document), loaded
 * by the first request for them (index.ts): swagger-ui's plugin pulls in a static file server, a
 * YAML library and a glob matcher, several MB a service nobody reads the docs of does not need.
 *
 * Fastify takes no routes once it listens, so the pages live in a small Fastify instance of their
 * own that never listens; the service's /v1/docs routes hand each request to it (inject) and relay
 * its answer.
 */
import swaggerUi from "@fastify/swagger-ui";
import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyRequest } from "fastify";
import { stringify as toYaml } from "yaml";
import { WITHOUT_JSON_SCHEMAS } from "../../edge/server";

/**
 * Stands in for @fastify/swagger, which @fastify/swagger-ui declares as a dependency: our document
 * is generated from the zod schemas (openapi.ts), so only the `swagger()` accessor is needed;
 * swagger-ui's /yaml page calls it with `{ yaml: true }` and sends what it returns as the YAML text.
 * The two symbols are the ones fastify-plugin sets (share the decorator, carry the plugin's name).
 */
function documentProvider(document: () => Record<string, unknown>): FastifyPluginAsync {
  const plugin: FastifyPluginAsync = async (app) => {
    app.decorate("swagger", (options?: { yaml?: boolean }) =>
      options?.yaml === true ? toYaml(document()) : document(),
    );
  };
  Object.assign(plugin, {
    [Symbol.for("skip-override")]: true,
    [Symbol.for("plugin-meta")]: { name: "@fastify/swagger", fastify: "5.x" },
  });
  return plugin;
}

/** One page as swagger-ui answered it, or the error it raised (the service's error handler answers that). */
export type DocsAnswer =
  | { status: number; headers: Record<string, string | string[]>; body: Buffer }
  | { error: Error }
  | { notFound: true };

/** Headers of the inner answer the service's own reply sets for itself. */
const HOP_HEADERS = new Set(["content-length", "connection", "keep-alive", "transfer-encoding", "date"]);

export interface DocsPages {
  answer(request: FastifyRequest): Promise<DocsAnswer>;
  close(): Promise<void>;
}

/** swagger-ui at `routePrefix` (the full path, e.g. "/v1/docs") over `document`. */
export async function docsPages(
  document: () => Record<string, unknown>,
  routePrefix: string,
): Promise<DocsPages> {
  const pages: FastifyInstance = Fastify({ logger: false, schemaController: WITHOUT_JSON_SCHEMAS });
  const errors = new WeakMap<object, Error>();
  pages.setErrorHandler(async (error: Error, request, reply) => {
    errors.set(request.raw, error);
    return reply.code(500).send();
  });
  pages.setNotFoundHandler(async (_request, reply) => reply.code(404).send());
  await pages.register(documentProvider(document));
  await pages.register(swaggerUi, { routePrefix });
  await pages.ready();
  return {
    async answer(request) {
      // HEAD is answered as GET: the service's HEAD route sends the headers of the full body.
      const reply = await pages.inject({
        method: "GET",
        url: request.url,
        headers: { ...request.headers, host: request.headers.host ?? "localhost" },
      });
      const error = errors.get(reply.raw.req);
      if (error) return { error };
      if (reply.statusCode === 404) return { notFound: true };
      const headers: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(reply.headers)) {
        if (value !== undefined && !HOP_HEADERS.has(name))
          headers[name] = Array.isArray(value) ? value : String(value);
      }
      return { status: reply.statusCode, headers, body: reply.rawPayload };
    },
    close: () => pages.close(),
  };
}
