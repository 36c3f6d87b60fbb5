import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { z } from "zod";
import { managementJsonBodies } from "../../edge/body";
import { parseInput, parseQuery } from "../../edge/parse";
import { withoutOptimizingCompilers } from "../../heap";
import type { ManagementWireDeps } from "../index";
import type { GraphqlContext } from "./resolvers";

const GraphqlRequest = z.object({
  query: z.string().min(1),
  variables: z.record(z.string(), z.unknown()).nullish(),
  operationName: z.string().nullish(),
});

const GraphqlQuery = z.object({ api_key: z.string().optional() });

/**
 * The GraphQL engine (graphql-js, the schema, the resolvers and their input schemas), loaded by the
 * first request that needs it and then kept: most runs of the service never query GraphQL, and
 * loading it costs several MB of memory.
 */
let engine: Promise<typeof import("./engine")> | undefined;
const loadEngine = (afterLoad: (() => void) | undefined) => {
  engine ??= withoutOptimizingCompilers(() => import("./engine.js")).then((loaded) => {
    afterLoad?.();
    return loaded;
  });
  return engine;
};

/** POST /graphql: the GraphQL management API, key in `?api_key=` or a Bearer header. */
export function graphqlPlugin(deps: ManagementWireDeps): FastifyPluginAsync {
  return async (app) => {
    // A key given twice in one object of the body (variables) is refused, as on REST.
    managementJsonBodies(app, { emptyIsUndefined: false });
    // Authenticated in onRequest, before the body is read: a bad key costs no parsing.
    const accounts = new WeakMap<FastifyRequest, string>();
    const authenticate = async (request: FastifyRequest) => {
      const { api_key: apiKey } = parseQuery(GraphqlQuery, request.query, "query");
      accounts.set(request, deps.accounts.authenticate(apiKey ?? request.headers.authorization));
    };
    app.post("/graphql", { bodyLimit: deps.bodyLimit, onRequest: authenticate }, async (request, reply) => {
      const accountId = accounts.get(request);
      if (accountId === undefined) throw new Error("POST /graphql: not authenticated");
      const body = parseInput(GraphqlRequest, request.body, "body");
      const contextValue: GraphqlContext = { management: deps.management, accountId };
      const { runGraphql } = await loadEngine(deps.afterLoad);
      return reply.code(200).send(await runGraphql(body, contextValue, request.log));
    });
  };
}
