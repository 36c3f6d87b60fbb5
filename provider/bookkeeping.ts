/**
 * Keys the provider keeps for itself beside a resource's own fields: the Resource classes send some as
 * inputs, the provider adds others to the outputs. None is sent to the service or validated as a field.
 */

/** The serialized provider (Pulumi's own key). */
export const PROVIDER_TEXT = "__provider";
/** The resource's logical name (the dynamic provider's check gets no URN, so the class sends it). */
export const LOGICAL_NAME = "__logicalName";
/** `<project>/<stack>`: generated names are unique per stack, not only per logical name. */
export const SCOPE = "__scope";
/**
 * The URN of the resource's parent when the program gave one (a component): children of two
 * components may share a logical name, and their generated names must not.
 */
export const PARENT = "__parent";
/** Whether check generated the name (recorded so later checks keep it and diffs know it is ours). */
export const AUTO_NAMED = "__autoNamed";
/** The resource's customTimeouts option ({create, update, delete} as Go durations), when given. */
export const CUSTOM_TIMEOUTS = "__customTimeouts";
/**
 * The resource's replaceOnChanges option (property paths), when given. Pulumi's engine applies the
 * option only to the property keys a provider's diff names as changed, and the dynamic-provider host
 * never names any (it passes on `changes` and `replaces` alone): the option would do nothing. So the
 * classes send it as an input and the provider's diff adds the properties it names to `replaces`.
 */
export const REPLACE_ON_CHANGES = "__replaceOnChanges";
/** The runpodkit version that last wrote the outputs (create, update or refresh). */
export const WRITTEN_BY = "__runpodkitVersion";

/**
 * The program's inputs the last create or update applied (defaults filled), kept in the outputs and
 * stored as a secret (env is among them). diff and update compare the program's inputs with these,
 * not with the live values the outputs hold: a field the program did not change keeps its live value
 * (ignoreChanges, a change made elsewhere), and does not show as a change on the next run. A refresh
 * sets it to the values it reads, so drift shows and the next up puts the program's value back.
 */
export const APPLIED = "__runpodkitApplied";

/**
 * The id of the account the resource was created in (`myself { id }` of the key that created it).
 * A key of another account sees none of its resources: without this, a refresh would drop them
 * from the stack as deleted and a destroy would report them deleted, leaving them running.
 */
export const ACCOUNT = "__runpodkitAccount";

/**
 * The name an adopted resource had, kept because the program gave no `name` (adoption keeps the
 * existing name). The inputs hold the name check generated, so without this the next up would rename
 * the resource to it.
 */
export const ADOPTED_NAME = "__runpodkitAdoptedName";

export const INTERNAL_KEYS: readonly string[] = [
  PROVIDER_TEXT,
  LOGICAL_NAME,
  SCOPE,
  PARENT,
  AUTO_NAMED,
  CUSTOM_TIMEOUTS,
  REPLACE_ON_CHANGES,
  WRITTEN_BY,
  APPLIED,
  ACCOUNT,
  ADOPTED_NAME,
];

/** Kept from the inputs into the outputs and back into the inputs a refresh returns. */
export const CARRIED_KEYS: readonly string[] = [
  LOGICAL_NAME,
  SCOPE,
  PARENT,
  AUTO_NAMED,
  CUSTOM_TIMEOUTS,
  REPLACE_ON_CHANGES,
];
