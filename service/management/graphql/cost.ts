import {
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  GraphQLError,
  type GraphQLNamedType,
  type GraphQLOutputType,
  type GraphQLSchema,
  getNamedType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValidationRule,
} from "graphql";

/**
 * How much one GraphQL document may ask for, checked before anything runs (and before graphql-js's
 * own validation, some of whose rules grow with the square of the fields): a document beyond any bound
 * is refused whole, with a message naming the bound. The SDK's documents (sdk/graphql-documents.ts)
 * cost at most about 700 and nest 4 levels (test/service/management/graphql-cost.test.ts keeps them
 * within a quarter of each limit); the official Python library's documents (test/service/compat,
 * run against the service with these limits) nest up to 5 levels and stay within a quarter of the
 * cost and alias limits.
 */
export interface GraphqlCostLimits {
  maxTokens: number;
  maxDepth: number;
  maxAliases: number;
  maxCost: number;
  listFactor: number;
}

export const GRAPHQL_COST_LIMITS: Readonly<GraphqlCostLimits> = {
  /** Tokens of the document text (graphql-js stops parsing past it). */
  maxTokens: 50_000,
  /** Levels of fields, `myself { endpoints { env { key } } }` has 4. */
  maxDepth: 16,
  /** Aliased fields, counted through fragments. */
  maxAliases: 30,
  /** Fields, each counted once per item of the lists above it (see listFactor). */
  maxCost: 5_000,
  /** Items a list field is assumed to hold when its cost is estimated. */
  listFactor: 10,
};

/** A bound passed: measuring stops at once, so a hostile document costs little to refuse. */
class Exceeded extends Error {}

interface Tally {
  aliases: number;
  cost: number;
}

/**
 * The cost limits' refusal of each operation of `document` past a bound, measured on the document
 * itself: it reads only as far as the first bound passed, where a validation rule would have
 * graphql-js visit every node of the document (with its type information) first, which for a document
 * of 50,000 tokens costs a second of the event loop. Unknown fields and fragments count 1 and are left
 * to graphql-js's own rules to name.
 */
export function costErrors(
  schema: GraphQLSchema,
  document: DocumentNode,
  limits: GraphqlCostLimits = GRAPHQL_COST_LIMITS,
): GraphQLError[] {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const definition of document.definitions) {
    // The last of a name, as ValidationContext.getFragment reads it (a duplicate is graphql-js's to report).
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
  }
  const errors: GraphQLError[] = [];
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    const error = operationCost(schema, (name) => fragments.get(name), definition, limits);
    if (error) errors.push(error);
  }
  return errors;
}

/** The same limits as a graphql-js validation rule (costErrors, within validate()). */
export function costLimitRule(limits: GraphqlCostLimits = GRAPHQL_COST_LIMITS): ValidationRule {
  return (context) => ({
    OperationDefinition(operation) {
      const error = operationCost(
        context.getSchema(),
        (name) => context.getFragment(name),
        operation,
        limits,
      );
      if (error) context.reportError(error);
      return false;
    },
  });
}

/** One operation's depth, aliases and estimated cost (fields, times `listFactor` under each list field) within `limits`, or its refusal. */
function operationCost(
  schema: GraphQLSchema,
  getFragment: (name: string) => FragmentDefinitionNode | null | undefined,
  operation: OperationDefinitionNode,
  limits: GraphqlCostLimits,
): GraphQLError | null {
  /** Adds a selection set on `type`, `depth` levels down, each field counting `weight`, to `tally`. */
  const measure = (
    selections: SelectionSetNode,
    type: GraphQLNamedType | undefined,
    depth: number,
    weight: number,
    tally: Tally,
    fragments: readonly string[],
  ): void => {
    for (const selection of selections.selections) {
      if (selection.kind === Kind.FIELD) {
        measureField(selection, type, depth, weight, tally, fragments);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const on = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : type;
        measure(selection.selectionSet, on ?? undefined, depth, weight, tally, fragments);
      } else {
        const name = selection.name.value;
        const fragment = getFragment(name);
        // A cycle is NoFragmentCyclesRule's to report; here it only must not recurse forever.
        if (!fragment || fragments.includes(name)) continue;
        const on = schema.getType(fragment.typeCondition.name.value) ?? undefined;
        measure(fragment.selectionSet, on, depth, weight, tally, [...fragments, name]);
      }
    }
  };

  const measureField = (
    field: FieldNode,
    parent: GraphQLNamedType | undefined,
    depth: number,
    weight: number,
    tally: Tally,
    fragments: readonly string[],
  ): void => {
    if (depth + 1 > limits.maxDepth) {
      throw new Exceeded(`the document nests fields more than ${limits.maxDepth} levels deep (the limit)`);
    }
    if (field.alias && ++tally.aliases > limits.maxAliases) {
      throw new Exceeded(`the document has more than ${limits.maxAliases} aliased fields (the limit)`);
    }
    tally.cost += weight;
    if (tally.cost > limits.maxCost) throw new Exceeded(costMessage(limits));
    if (!field.selectionSet) return;
    const definition = isObjectType(parent) ? parent.getFields()[field.name.value] : undefined;
    const factor = definition && returnsList(definition.type) ? limits.listFactor : 1;
    const child = getNamedType(definition?.type);
    measure(field.selectionSet, child, depth + 1, weight * factor, tally, fragments);
  };

  const root = schema.getRootType(operation.operation) ?? undefined;
  try {
    measure(operation.selectionSet, root, 0, 1, { aliases: 0, cost: 0 }, []);
    return null;
  } catch (error) {
    if (!(error instanceof Exceeded)) throw error;
    return new GraphQLError(`Query refused: ${error.message}`, { nodes: operation });
  }
}

function returnsList(type: GraphQLOutputType): boolean {
  return isListType(isNonNullType(type) ? type.ofType : type);
}

const costMessage = (limits: GraphqlCostLimits) =>
  `the document's estimated cost is above ${limits.maxCost} (the limit; each field counts 1, times ${limits.listFactor} under each list field)`;
