import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { managementJsonBodies } from "../../edge/body";
import { withoutOptimizingCompilers } from "../../heap";
import type { ManagementWireDeps } from "../index";
import type { DocsPages } from "./docs";

/**
 * Every REST v1 route, as method and URL: what the service registers at start. The routes themselves
 * (handlers, the zod schemas of sdk/schemas/* they validate with, openapi.json) are in routes.ts,
 * loaded by the first request to one of them, so a start (and the job plane) does not pay for them.
 * test/service/management/rest-table.test.ts keeps this table equal to routes.ts's list.
 */
export const REST_ROUTE_TABLE: readonly (readonly ["GET" | "POST" | "PATCH" | "DELETE", string])[] = [
  ["POST", "/pods"],
  ["GET", "/pods"],
  ["GET", "/pods/:podId"],
  ["PATCH", "/pods/:podId"],
  ["POST", "/pods/:podId/update"],
  ["DELETE", "/pods/:podId"],
  ["POST", "/pods/:podId/start"],
  ["POST", "/pods/:podId/stop"],
  ["POST", "/pods/:podId/reset"],
  ["POST", "/pods/:podId/restart"],
  ["POST", "/endpoints"],
  ["GET", "/endpoints"],
  ["GET", "/endpoints/:endpointId"],
  ["PATCH", "/endpoints/:endpointId"],
  ["POST", "/endpoints/:endpointId/update"],
  ["DELETE", "/endpoints/:endpointId"],
  ["POST", "/networkvolumes"],
  ["GET", "/networkvolumes"],
  ["GET", "/networkvolumes/:networkVolumeId"],
  ["PATCH", "/networkvolumes/:networkVolumeId"],
  ["POST", "/networkvolumes/:networkVolumeId/update"],
  ["DELETE", "/networkvolumes/:networkVolumeId"],
  ["POST", "/templates"],
  ["GET", "/templates"],
  ["GET", "/templates/:templateId"],
  ["PATCH", "/templates/:templateId"],
  ["POST", "/templates/:templateId/update"],
  ["DELETE", "/templates/:templateId"],
  ["POST", "/containerregistryauth"],
  ["GET", "/containerregistryauth"],
  ["GET", "/containerregistryauth/:containerRegistryAuthId"],
  ["DELETE", "/containerregistryauth/:containerRegistryAuthId"],
  ["GET", "/billing/pods"],
  ["GET", "/billing/endpoints"],
  ["GET", "/billing/networkvolumes"],
];

type Routes = typeof import("./routes");

/** routes.ts, loaded by the first request that needs it (then `afterLoad`) and kept. */
let loading: Promise<Routes> | undefined;
let loaded: Routes | undefined;
const loadRoutes = (afterLoad: (() => void) | undefined): Promise<Routes> => {
  loading ??= withoutOptimizingCompilers(() => import("./routes.js")).then((routes) => {
    loaded = routes;
    afterLoad?.();
    return routes;
  });
  return loading;
};

/**
 * On every docs page: swagger-ui takes an API key ("Authorize") and sends requests with it ("Try it
 * out", DELETE included), so no other site may frame it under a decoy (clickjacking), as the console.
 */
const DOCS_HEADERS = {
  "content-security-policy": "frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
} as const;

/**
 * REST v1, registered under /v1. Bearer auth on every route except the docs: GET /openapi.json and
 * the swagger-ui pages under /docs, which load with their first request (docs.ts).
 */
export function restPlugin(deps: ManagementWireDeps): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    // Bodyless operations (DELETE, pod start/stop/reset/restart) sent with a client's default
    // `content-type: application/json` and no body are fine; a route needing a body says so (zod).
    // A key given twice in one object is refused (edge/body.ts managementJsonBodies).
    managementJsonBodies(app, { emptyIsUndefined: true });
    // Authenticated in onRequest, before the body is read (or the routes loaded): a bad key costs no parsing.
    const accounts = new WeakMap<FastifyRequest, string>();
    const onRequest = async (request: FastifyRequest) => {
      accounts.set(request, deps.accounts.authenticate(request.headers.authorization));
    };
    for (const [method, url] of REST_ROUTE_TABLE) {
      app.route({
        method,
        url,
        bodyLimit: deps.bodyLimit,
        onRequest,
        handler: async (request, reply) => {
          const routes = loaded ?? (await loadRoutes(deps.afterLoad));
          const route = routes.routesByKey.get(routes.routeKey(method, url));
          const accountId = accounts.get(request);
          if (route === undefined) throw new Error(`${method} /v1${url}: no such route in rest/routes.ts`);
          if (accountId === undefined) throw new Error(`${method} /v1${url}: not authenticated`);
          return route.serve(request, reply, deps.management, accountId);
        },
      });
    }
    app.get("/openapi.json", async () => (loaded ?? (await loadRoutes(deps.afterLoad))).openApi());
    let docs: Promise<DocsPages> | undefined;
    const docsPage = async (request: FastifyRequest, reply: FastifyReply) => {
      docs ??= Promise.all([
        withoutOptimizingCompilers(() => import("./docs.js")),
        loadRoutes(deps.afterLoad),
      ]).then(([{ docsPages }, { openApi }]) => docsPages(openApi, `${app.prefix}/docs`));
      const answer = await (await docs).answer(request);
      if ("error" in answer) throw answer.error;
      if ("notFound" in answer) return reply.callNotFound();
      reply.code(answer.status).headers({ ...answer.headers, ...DOCS_HEADERS });
      // A redirect has no body (and no content type to give it).
      return answer.body.length > 0 ? reply.send(answer.body) : reply.send();
    };
    app.get("/docs", docsPage);
    app.get("/docs/*", docsPage);
    app.addHook("onClose", async () => {
      if (docs) await (await docs).close();
    });
  };
}
