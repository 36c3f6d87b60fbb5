import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, FastifyPluginAsync } from "fastify";
import type { ManagementWireDeps } from "../index";
import { billingRoutes } from "./billing";
import { endpointRoutes } from "./endpoints";
import { networkVolumeRoutes } from "./network-volumes";
import { openApiDocument } from "./openapi";
import { podRoutes } from "./pods";
import { registryAuthRoutes } from "./registry-auths";
import type { RestRoute } from "./route";
import { templateRoutes } from "./templates";

export const restRoutes: readonly RestRoute[] = [
  ...podRoutes,
  ...endpointRoutes,
  ...networkVolumeRoutes,
  ...templateRoutes,
  ...registryAuthRoutes,
  ...billingRoutes,
];

/**
 * Stands in for @fastify/swagger, which @fastify/swagger-ui declares as a dependency: our document
 * is generated from the zod schemas (openapi.ts), so only the `swagger()` accessor is needed.
 * The two symbols are the ones fastify-plugin sets (share the decorator, carry the plugin's name).
 */
function documentProvider(document: Record<string, unknown>): FastifyPluginAsync {
  const plugin: FastifyPluginAsync = async (app) => {
    app.decorate("swagger", () => document);
  };
  Object.assign(plugin, {
    [Symbol.for("skip-override")]: true,
    [Symbol.for("plugin-meta")]: { name: "@fastify/swagger", fastify: "5.x" },
  });
  return plugin;
}

/** REST v1, registered under /v1. Bearer auth on every route except the docs. */
export function restPlugin(deps: ManagementWireDeps): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    for (const r of restRoutes) r.register(app, deps);
    const document = openApiDocument(restRoutes);
    app.get("/openapi.json", async () => document);
    await app.register(documentProvider(document));
    await app.register(swaggerUi, { routePrefix: "/docs" });
  };
}
