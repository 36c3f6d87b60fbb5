import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import {
  buildSchema,
  type DocumentNode,
  defaultFieldResolver,
  type ExecutionResult,
  execute,
  GraphQLError,
  type GraphQLFieldResolver,
  type GraphQLSchema,
  parse,
  validate,
} from "graphql";
import { z } from "zod";
import { graphqlErrorBody } from "../../edge/errors";
import { parseInput } from "../../edge/parse";
import type { ManagementWireDeps } from "../index";
import { costLimitRule, GRAPHQL_COST_LIMITS } from "./cost";
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

const costRule = costLimitRule(GRAPHQL_COST_LIMITS);

/**
 * The document of a request, or why it is refused: too many tokens or too deep to parse, beyond the
 * cost limits (cost.ts, checked first and alone: some of graphql-js's rules grow with the square of
 * the fields), then graphql-js's own validation.
 */
export function checkedDocument(
  schema: GraphQLSchema,
  source: string,
): { document: DocumentNode } | { errors: readonly GraphQLError[] } {
  let document: DocumentNode;
  try {
    document = parse(source, { maxTokens: GRAPHQL_COST_LIMITS.maxTokens });
  } catch (error) {
    if (error instanceof GraphQLError) return { errors: [error] };
    // The parser recurses once per level of braces, brackets and parentheses.
    if (error instanceof RangeError)
      return { errors: [new GraphQLError("Query refused: the document is nested too deep to parse")] };
    throw error;
  }
  const costErrors = validate(schema, document, [costRule]);
  if (costErrors.length > 0) return { errors: costErrors };
  const errors = validate(schema, document);
  return errors.length > 0 ? { errors } : { document };
}

/** POST /graphql: the GraphQL management API, key in `?api_key=` or a Bearer header. */
export function graphqlPlugin(deps: ManagementWireDeps): FastifyPluginAsync {
  const schema = buildSchema(typeDefs);
  return async (app) => {
    // Authenticated in onRequest, before the body is read: a bad key costs no parsing.
    const accounts = new WeakMap<FastifyRequest, string>();
    const authenticate = async (request: FastifyRequest) => {
      const { api_key: apiKey } = parseInput(GraphqlQuery, request.query, "query");
      accounts.set(request, deps.accounts.authenticate(apiKey ?? request.headers.authorization));
    };
    app.post("/graphql", { bodyLimit: deps.bodyLimit, onRequest: authenticate }, async (request, reply) => {
      const accountId = accounts.get(request);
      if (accountId === undefined) throw new Error("POST /graphql: not authenticated");
      const body = parseInput(GraphqlRequest, request.body, "body");
      const contextValue: GraphqlContext = { management: deps.management, accountId };
      const checked = checkedDocument(schema, body.query);
      const result: ExecutionResult =
        "errors" in checked
          ? { errors: checked.errors }
          : await execute({
              schema,
              document: checked.document,
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
