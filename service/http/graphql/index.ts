import { makeExecutableSchema } from "@graphql-tools/schema";
import type { FastifyBaseLogger, FastifyPluginAsync } from "fastify";
import { type ExecutionResult, GraphQLError, graphql } from "graphql";
import { z } from "zod";
import type { ServiceDeps } from "../../deps";
import { ServiceError } from "../../domain/errors";
import { graphqlAccountOf } from "../auth";
import { parseInput } from "../rest/parse";
import { type GraphqlContext, resolvers } from "./resolvers";
import { typeDefs } from "./schema";

const GraphqlRequest = z.object({
  query: z.string().min(1),
  variables: z.record(z.string(), z.unknown()).nullish(),
  operationName: z.string().nullish(),
});

const GraphqlQuery = z.object({ api_key: z.string().optional() });

export interface GraphqlErrorBody {
  message: string;
  path?: readonly (string | number)[];
  extensions: { code: string; field?: string };
}

/**
 * Errors keep their stable code in `extensions.code` (the domain's ErrorCode, or GRAPHQL_VALIDATION
 * for documents graphql-js refuses) so clients branch on codes, never on message text.
 */
function formatError(error: GraphQLError, log: FastifyBaseLogger): GraphqlErrorBody {
  const original = error.originalError;
  const path = error.path ? { path: error.path } : {};
  if (original instanceof ServiceError) {
    return {
      message: original.message,
      ...path,
      extensions: { code: original.code, ...(original.field ? { field: original.field } : {}) },
    };
  }
  if (original && !(original instanceof GraphQLError)) {
    log.error(
      { err: { message: original.message, stack: original.stack } },
      "unexpected error in a GraphQL resolver",
    );
    return { message: "Internal server error", ...path, extensions: { code: "INTERNAL" } };
  }
  return { message: error.message, ...path, extensions: { code: "GRAPHQL_VALIDATION" } };
}

/** POST /graphql: the GraphQL management API, key in `?api_key=` or a Bearer header. */
export function graphqlPlugin(deps: ServiceDeps): FastifyPluginAsync {
  const schema = makeExecutableSchema({ typeDefs, resolvers });
  return async (app) => {
    app.post("/graphql", { bodyLimit: deps.config.managementBodyLimit }, async (request, reply) => {
      const { api_key: apiKey } = parseInput(GraphqlQuery, request.query, "query");
      const accountId = graphqlAccountOf(deps, apiKey, request.headers.authorization);
      const body = parseInput(GraphqlRequest, request.body, "body");
      const contextValue: GraphqlContext = { deps, accountId };
      const result: ExecutionResult = await graphql({
        schema,
        source: body.query,
        variableValues: body.variables ?? undefined,
        operationName: body.operationName ?? undefined,
        contextValue,
      });
      return reply.code(200).send({
        ...(result.errors ? { errors: result.errors.map((e) => formatError(e, request.log)) } : {}),
        data: result.data ?? null,
      });
    });
  };
}
