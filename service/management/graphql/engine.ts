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
  const refused = document ? refusedInput(error, document) : null;
  return {
    // Named as a resolver's refusal is (`workersMax: ...`), with the operation graphql-js's words omit.
    message: refused === null ? error.message : `${refused.operation}: ${refused.field}: ${error.message}`,
    ...path,
    extensions: { code: "GRAPHQL_VALIDATION", ...(refused === null ? {} : { field: refused.field }) },
  };
}

type Step = string | number;

/** The input graphql-js refused: the field (or directive) whose argument holds it, and its dotted place. */
interface RefusedInput {
  operation: string;
  field: string;
}

/** The value nodes graphql-js's ValuesOfCorrectTypeRule refuses an inline value on. */
const VALUE_KINDS: ReadonlySet<string> = new Set([
  Kind.INT,
  Kind.FLOAT,
  Kind.STRING,
  Kind.BOOLEAN,
  Kind.NULL,
  Kind.ENUM,
  Kind.LIST,
  Kind.OBJECT,
]);

/** The field an input object lacks, or does not define, as graphql-js words either (inline or in a variable). */
const NAMED_FIELD =
  /(?:^|; )Field "(?:\w+\.)?(\w+)" (?:is not defined by type "\w+"\.(?: Did you mean .*)?|of required type "[^"]*" was not provided\.)$/s;

/**
 * The place of an input graphql-js refused, as REST names a key and a resolver's refusal names its
 * input's fields: dotted, from the argument (`env.0.bogus` of `saveTemplate(input: {env: [{bogus:
 * 1}]})`, `workersMax` of `workersMax: 1.5` or of a variable's `9999999999999`), with the field
 * whose argument holds it; null for any other error. An inline value's error points at its node (a
 * field's, for a field its type does not define); a variable's at its definition, its path within
 * the variable in the message (`at "input.env[0]"`), which is appended to where the variable is used.
 */
function refusedInput(error: GraphQLError, document: DocumentNode): RefusedInput | null {
  const node = error.nodes?.[0];
  if (node === undefined) return null;
  const named = NAMED_FIELD.exec(error.message)?.[1];
  let found: ArgumentPlace | null;
  let steps: Step[];
  if (node.kind === Kind.OBJECT_FIELD) {
    found = argumentPath(document, (value) => value === node);
    steps = found?.steps ?? [];
  } else if (VALUE_KINDS.has(node.kind)) {
    found = argumentPath(document, (value) => value === node);
    steps = found === null ? [] : [...found.steps, ...(named === undefined ? [] : [named])];
  } else if (node.kind === Kind.VARIABLE_DEFINITION) {
    const name = node.variable.name.value;
    if (!error.message.startsWith(`Variable "$${name}" got invalid value `)) return null;
    // The value is printed first, its strings JSON-quoted: only graphql-js's own ` at "` ends unescaped.
    const at = new RegExp(` at "${name}((?:\\.\\w+|\\[\\d+\\])*)"; `).exec(error.message);
    const within = [...(at?.[1] ?? "").matchAll(/\.(\w+)|\[(\d+)\]/g)].map((m) =>
      m[2] === undefined ? (m[1] ?? "") : Number(m[2]),
    );
    found = argumentPath(document, (value) => value.kind === Kind.VARIABLE && value.name.value === name);
    steps = found === null ? [] : [...found.steps, ...within, ...(named === undefined ? [] : [named])];
  } else {
    return null;
  }
  if (found === null || steps.length === 0) return null;
  return { operation: found.owner, field: steps.map((step) => shownKey(String(step))).join(".") };
}

/** Where a value sits: the field (or `@directive`) whose argument holds it, and its path from the argument. */
interface ArgumentPlace {
  owner: string;
  steps: Step[];
}

/**
 * The place of the first value `matches` picks in an argument (an object field's node counts as its
 * value's place, its name included), or null when no argument holds one.
 */
function argumentPath(
  document: DocumentNode,
  matches: (node: ValueNode | ObjectFieldNode) => boolean,
): ArgumentPlace | null {
  let found: ArgumentPlace | null = null;
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
    Argument(argument, _key, _parent, _path, ancestors) {
      const steps = within(argument.value, []);
      if (steps === null) return undefined;
      // The node holding the arguments list: a field, or a directive.
      const holder = ancestors[ancestors.length - 1];
      const owner =
        holder !== undefined &&
        "kind" in holder &&
        (holder.kind === Kind.FIELD || holder.kind === Kind.DIRECTIVE)
          ? `${holder.kind === Kind.DIRECTIVE ? "@" : ""}${holder.name.value}`
          : "argument";
      found = { owner, steps };
      return BREAK;
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
