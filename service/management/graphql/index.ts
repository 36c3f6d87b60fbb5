import type { FastifyPluginAsync } from "fastify";
import {
  buildSchema,
  defaultFieldResolver,
  type ExecutionResult,
  type GraphQLFieldResolver,
  graphql,
} from "graphql";
import { z } from "zod";
import { graphqlErrorBody } from "../../edge/errors";
import { parseInput } from "../../edge/parse";
import type { ManagementWireDeps } from "../index";
import { type GraphqlContext, resolvers } from "./resolvers";
import { typeDefs } from "./schema";

const GraphqlRequest = z.object({
  query: z.string().min(1),
  variables: z.record(z.string(), z.unknown()).nullish(),
  operationName: z.string().nullish(),
});

const GraphqlQuery = z.object({ api_key: z.string().optional() });

type ResolverMap = Record<string, Record<string, GraphQLFieldResolver<unknown, GraphqlContext>>>;

/**
 * Resolves each field from the resolver map, by type and field name, else reads the property. Done
 * with graphql-js alone (not @graphql-tools) so one copy of graphql runs the schema under every
 * loader (vitest loads graphql's ESM build while @graphql-tools would require its CJS build).
 */
const fieldResolver: GraphQLFieldResolver<unknown, GraphqlContext> = (source, args, context, info) => {
  const resolve = (resolvers as unknown as ResolverMap)[info.parentType.name]?.[info.fieldName];
  return (resolve ?? defaultFieldResolver)(source, args, context, info);
};

/** POST /graphql: the GraphQL management API, key in `?api_key=` or a Bearer header. */
export function graphqlPlugin(deps: ManagementWireDeps): FastifyPluginAsync {
  const schema = buildSchema(typeDefs);
  return async (app) => {
    app.post("/graphql", { bodyLimit: deps.bodyLimit }, async (request, reply) => {
      const { api_key: apiKey } = parseInput(GraphqlQuery, request.query, "query");
      const accountId = deps.accounts.authenticate(apiKey ?? request.headers.authorization);
      const body = parseInput(GraphqlRequest, request.body, "body");
      const contextValue: GraphqlContext = { management: deps.management, accountId };
      const result: ExecutionResult = await graphql({
        schema,
        source: body.query,
        variableValues: body.variables ?? undefined,
        operationName: body.operationName ?? undefined,
        contextValue,
        fieldResolver,
      });
      return reply.code(200).send({
        ...(result.errors ? { errors: result.errors.map((e) => graphqlErrorBody(e, request.log)) } : {}),
        data: result.data ?? null,
      });
    });
  };
}
