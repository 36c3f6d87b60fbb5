/**
 * The GraphQL engine: the schema built from the SDL, graphql-js parsing, cost limits, validation and
 * execution, and the body of each error execution raised. Loaded on the first POST /graphql
 * (index.ts), so a service nobody queries over GraphQL never loads graphql-js or builds the schema.
 */
import type { FastifyBaseLogger } from "fastify";
import {
  BREAK,
  buildSchema,
  type DocumentNode,
  defaultFieldResolver,
  type ExecutionResult,
  execute,
  GraphQLError,
  type GraphQLFieldResolver,
  type GraphQLSchema,
  Kind,
  type ObjectFieldNode,
  parse,
  type ValueNode,
  validate,
  visit,
} from "graphql";
import { shownKey } from "../../edge/body";
import type { GraphqlErrorBody } from "../../edge/errors";
import { ServiceError } from "../../errors";
import { costErrors, GRAPHQL_COST_LIMITS } from "./cost";
import { type GraphqlContext, resolvers } from "./resolvers";
import { typeDefs } from "./schema";

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

const schema = buildSchema(typeDefs);

/**
 * The document of a request, or why it is refused: too many tokens or too deep to parse, beyond the
 * cost limits (cost.ts, checked first and alone: some of graphql-js's rules grow with the square of
 * the fields), then graphql-js's own validation.
 */
export function checkedDocument(
  schema: GraphQLSchema,
  source: string,
): { document: DocumentNode } | { errors: readonly GraphQLError[]; document?: DocumentNode } {
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
  // Measured on the document, not in validate(), which would visit all of it first.
  const refused = costErrors(schema, document, GRAPHQL_COST_LIMITS);
  if (refused.length > 0) return { errors: refused };
  const errors = validate(schema, document);
  return errors.length > 0 ? { errors, document } : { document };
}

/**
 * An error raised while a GraphQL document executed (the reply is still a 200): a ServiceError keeps
 * its code, a document graphql-js refused is GRAPHQL_VALIDATION, anything else is logged and INTERNAL.
 * (Errors refused before execution, such as a bad key, are answered by the edge: edge/errors.ts.)
 */
export function graphqlErrorBody(
  error: GraphQLError,
  log: FastifyBaseLogger,
  document?: DocumentNode,
): GraphqlErrorBody {
  const original = error.originalError;
  const path = error.path ? { path: error.path } : {};
  if (original instanceof ServiceError) {
    const field = original.field ? { field: original.field } : {};
    return { message: original.message, ...path, extensions: { code: original.code, ...field } };
  }
  if (original && !(original instanceof GraphQLError)) {
    log.error(
      { err: { message: original.message, stack: original.stack } },
      "unexpected error in a GraphQL resolver",
    );
    return { message: "Internal server error", ...path, extensions: { code: "INTERNAL" } };
  }
  const field = document ? unknownInputField(error, document) : null;
  return {
    message: error.message,
    ...path,
    extensions: { code: "GRAPHQL_VALIDATION", ...(field === null ? {} : { field }) },
  };
}

type Step = string | number;

/**
 * The field of graphql-js's refusal of an input field its type does not define, as REST names an
 * unknown key and as a resolver's refusal names its input's fields: dotted, from the argument
 * (`env.0.bogus` of `saveTemplate(input: {env: [{bogus: 1}]})`); null for any other error. An inline
 * value's error points at the field's node; a variable's at its definition, its path within the
 * variable in the message (`at "input.env[0]"`), which is appended to where the variable is used.
 */
function unknownInputField(error: GraphQLError, document: DocumentNode): string | null {
  const unknown =
    /; Field "(.*)" is not defined by type "\w+"\.(?: Did you mean .*)?$|^Field "(.*)" is not defined by type "\w+"\.(?: Did you mean .*)?$/s.exec(
      error.message,
    );
  const node = error.nodes?.[0];
  if (!unknown || node === undefined) return null;
  let steps: Step[] | null;
  if (node.kind === Kind.OBJECT_FIELD) {
    steps = argumentPath(document, (value) => value === node);
  } else if (node.kind === Kind.VARIABLE_DEFINITION) {
    const name = node.variable.name.value;
    const at = new RegExp(
      `^Variable "\\$${name}" got invalid value .* at "${name}((?:\\.[^.[]*|\\[\\d+\\])*)"; Field "`,
      "s",
    ).exec(error.message);
    const within = [...(at?.[1] ?? "").matchAll(/\.([^.[]*)|\[(\d+)\]/g)].map((m) =>
      m[2] === undefined ? (m[1] ?? "") : Number(m[2]),
    );
    const used = argumentPath(document, (value) => value.kind === Kind.VARIABLE && value.name.value === name);
    steps = used === null ? null : [...used, ...within, unknown[1] ?? ""];
  } else {
    return null;
  }
  return steps === null || steps.length === 0 ? null : steps.map((step) => shownKey(String(step))).join(".");
}

/**
 * The path from the argument holding the first value `matches` picks (an object field's node counts
 * as its value's place, its name included), or null when no argument holds one.
 */
function argumentPath(
  document: DocumentNode,
  matches: (node: ValueNode | ObjectFieldNode) => boolean,
): Step[] | null {
  let found: Step[] | null = null;
  const within = (value: ValueNode, path: Step[]): Step[] | null => {
    if (matches(value)) return path;
    if (value.kind === Kind.OBJECT) {
      for (const field of value.fields) {
        const at = [...path, field.name.value];
        if (matches(field)) return at;
        const inner = within(field.value, at);
        if (inner) return inner;
      }
    } else if (value.kind === Kind.LIST) {
      for (const [index, item] of value.values.entries()) {
        const inner = within(item, [...path, index]);
        if (inner) return inner;
      }
    }
    return null;
  };
  visit(document, {
    Argument(argument) {
      found = within(argument.value, []);
      return found === null ? undefined : BREAK;
    },
  });
  return found;
}

export interface GraphqlOperation {
  query: string;
  variables?: Record<string, unknown> | null | undefined;
  operationName?: string | null | undefined;
}

/** The reply body of one operation: refused (errors, data null) or executed (data, and errors if any). */
export async function runGraphql(
  operation: GraphqlOperation,
  contextValue: GraphqlContext,
  log: FastifyBaseLogger,
): Promise<{ errors?: GraphqlErrorBody[]; data: unknown }> {
  const checked = checkedDocument(schema, operation.query);
  const result: ExecutionResult =
    "errors" in checked
      ? { errors: checked.errors }
      : await execute({
          schema,
          document: checked.document,
          variableValues: operation.variables ?? undefined,
          operationName: operation.operationName ?? undefined,
          contextValue,
          fieldResolver,
        });
  const values = result.errors && operation.variables ? variableStrings(operation.variables) : [];
  return {
    ...(result.errors
      ? {
          errors: result.errors.map((e) => withoutValues(graphqlErrorBody(e, log, checked.document), values)),
        }
      : {}),
    data: result.data ?? null,
  };
}

/** The most string values of the variables an error is cleared of (a body holds at most 1 MiB). */
const VARIABLE_STRINGS_MAX = 10_000;

/** The string values in `variables`, longest first, as graphql-js prints them (JSON strings). */
function variableStrings(variables: Record<string, unknown>): string[] {
  const found = new Set<string>();
  const visit = (value: unknown): void => {
    if (found.size >= VARIABLE_STRINGS_MAX) return;
    if (typeof value === "string") found.add(JSON.stringify(value));
    else if (Array.isArray(value)) for (const item of value) visit(item);
    else if (value !== null && typeof value === "object")
      for (const item of Object.values(value)) visit(item);
  };
  visit(variables);
  return [...found].sort((a, b) => b.length - a.length);
}

/**
 * graphql-js words a variable it cannot coerce with the value it was given, the whole input object
 * around a bad field included (`Variable "$input" got invalid value { name: "x", password: "..." }`):
 * a typo next to a registry password or an env value sent the secret back, into the caller's logs.
 * A refusal keeps its path and reason; every string value of the variables is written `"…"`.
 */
function withoutValues(body: GraphqlErrorBody, values: readonly string[]): GraphqlErrorBody {
  if (values.length === 0 || body.extensions.code !== "GRAPHQL_VALIDATION") return body;
  let message = body.message;
  for (const value of values) if (message.includes(value)) message = message.split(value).join('"…"');
  return { ...body, message };
}
