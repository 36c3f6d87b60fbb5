import { distance } from "fastest-levenshtein";
import type { z } from "zod";
import { canonicalName } from "../sdk/schemas/common";
import { uniqueItems } from "../sdk/schemas/defaults";
import { describeIssues, isMissing, issueMessage } from "../sdk/schemas/issues";
import { AUTO_NAMED, CARRIED_KEYS, INTERNAL_KEYS } from "./bookkeeping";
import { ProviderError } from "./errors";
import { type NameBasis, resolveName } from "./naming";
import { containsUnknown, isUnknown, pathHitsUnknown } from "./unknowns";

export interface CheckFailure {
  property: string;
  reason: string;
}

/** Inputs or outputs as Pulumi hands them over: plain JSON, validated by the schema before use. */
export type Props = Record<string, unknown>;

/** " (did you mean workersMax?)" for a property a letter or two off one of the resource's; else "". */
function nearest(spec: InputSpec, key: string): string {
  let best = "";
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of Object.keys(spec.schema.shape)) {
    // Case does not count: templateID is one letter off templateId.
    const apart = distance(key.toLowerCase(), name.toLowerCase());
    if (apart < bestDistance) [best, bestDistance] = [name, apart];
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 4)) ? ` (did you mean ${best}?)` : "";
}

/** How one resource's inputs are validated and normalised; shared by check, diff and schema.json. */
export interface InputSpec {
  /** The Pulumi type name, e.g. "Endpoint" (token `runpodkit:index:Endpoint`). */
  readonly type: string;
  /**
   * Every user-facing input, strict (an unknown property is a failure). The service's default of a
   * field is its zod `.default()`: check fills defaults in, so an omitted field and its default
   * compare equal in diff and the service always receives the whole configuration.
   */
  readonly schema: z.ZodObject;
  /** Properties the service cannot change in place: a change replaces the resource. */
  readonly replaceOnChange: readonly string[];
  /** The service requires the name to be unique in the account. */
  readonly uniqueName: boolean;
  /**
   * Rules across fields or across olds and news (e.g. a volume may only grow). Each must skip values
   * that are unknown during preview. `olds` is undefined on a first check and on a replacement.
   */
  readonly rules?: (news: Props, olds: Props | undefined) => CheckFailure[];
  /** Inputs diff ignores: they act only at create (adoptId). */
  readonly createOnly?: readonly string[];
  /** Outputs the service computes, beyond the inputs (for schema.json and the Resource class). */
  readonly computed?: z.ZodObject;
  /** Inputs stored only as secrets in the state. */
  readonly secrets?: readonly string[];
  /** One spelling per value where the service accepts several ("a, b" and "a,b"; "" and null). */
  readonly canonical?: (props: Props) => Props;
  /**
   * Values the service reads back that the schema refuses as an input: an endpoint's gpuIds "" (GPU
   * types set through REST that no pool describes). A refresh puts such a value in the inputs, and
   * ignoreChanges then carries it into the next check; carried over unchanged from the old inputs it
   * passes check and means "keep what the service has" (the resource's apply keeps it). `whenNew` is
   * said when a new resource (checked without old inputs: a create, a replacement) is given it: it has
   * nothing to keep, and the schema's own message cannot say where the value came from.
   */
  readonly keptAsRead?: Readonly<Record<string, { value: string; whenNew: string }>>;
  /**
   * Lists whose items are independent choices (an endpoint's volumes): an update takes them item by
   * item as it takes a map key by key, so an item the program left as it was keeps the value set
   * elsewhere (ignoreChanges on one item, `networkVolumeIds[0]`). Not for an argv, whose items are
   * one command.
   */
  readonly listsByItem?: readonly string[];
  /**
   * Inputs that are one value under several keys, each derived from the others by `canonical`
   * (dockerArgs and dockerStartCmd). Pulumi keeps an input's secretness only under its own key, so the
   * Resource class registers each group as one Output (see resource.ts): a secret in one key makes the
   * others secret in the state and in the outputs.
   */
  readonly spellings?: readonly (readonly string[])[];
}

/** The inputs without the provider's bookkeeping keys. */
export function userInputs(props: Props): Props {
  const out: Props = {};
  for (const [key, value] of Object.entries(props)) {
    if (!INTERNAL_KEYS.includes(key) && value !== undefined) out[key] = value;
  }
  return out;
}

/** Every input field of the resource, in declaration order. */
export function inputFields(spec: InputSpec): string[] {
  return Object.keys(spec.schema.shape);
}

/** The service's default of each field that has one (the schema's `.default()`). */
export function defaultsOf(spec: InputSpec): Props {
  const defaults: Props = {};
  for (const [field, schema] of Object.entries(spec.schema.shape)) {
    const parsed = schema.safeParse(undefined);
    if (parsed.success && parsed.data !== undefined) defaults[field] = parsed.data;
  }
  return defaults;
}

/** The input part of inputs or old outputs, with defaults applied to absent fields. */
export function normalizeInputs(spec: InputSpec, props: Props): Props {
  const defaults = defaultsOf(spec);
  const out: Props = {};
  for (const field of inputFields(spec)) {
    const value = props[field];
    if (value !== undefined && value !== null) out[field] = value;
    else if (defaults[field] !== undefined) out[field] = defaults[field];
    else if (value === null) out[field] = null;
  }
  return canonicalProps(spec, out);
}

/**
 * Props in today's spelling: the name as the service stores every resource's name (canonicalName:
 * trimmed, composed), so a stack that applied " web " or a decomposed "café" sees no diff, then the
 * spec's own (InputSpec.canonical).
 */
export function canonicalProps(spec: InputSpec, props: Props): Props {
  const named =
    typeof props.name === "string" && !isUnknown(props.name)
      ? { ...props, name: canonicalName(props.name) }
      : props;
  return spec.canonical ? spec.canonical(named) : named;
}

/** What a generated name of this resource is derived from, read from normalised inputs. */
export function nameBasis(spec: InputSpec, normalized: Props): NameBasis {
  return {
    type: spec.type,
    replaceKey: spec.replaceOnChange.filter((f) => f !== "name").map((f) => normalized[f] ?? null),
  };
}

/**
 * check: names the resource, fills defaults and validates, before any API call. Every failure names
 * its property; values still unknown during preview are accepted as they are. Pure: the same olds and
 * news always give the same inputs (Pulumi's plans rely on it).
 */
export function checkInputs(
  spec: InputSpec,
  olds: Props | undefined,
  news: Props,
): { inputs: Props; failures: CheckFailure[] } {
  const oldInputs = olds && Object.keys(olds).length > 0 ? olds : undefined;
  const failures: CheckFailure[] = [];
  const given = userInputs(news);
  const candidate = normalizeInputs(spec, given);
  // Keep unknown keys so the strict schema reports them by name.
  for (const [key, value] of Object.entries(given)) if (!(key in candidate)) candidate[key] = value;
  // An explicit name in its canonical spelling (trimmed, composed), as the service stores it.
  const named = "name" in candidate ? { ...news, name: candidate.name } : news;
  const resolved = resolveName(oldInputs, named, nameBasis(spec, candidate));
  if (resolved) candidate.name = resolved.name;
  else failures.push({ property: "name", reason: "name is required (no resource name to derive one from)" });

  const parsed = spec.schema.safeParse(candidate);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      if (pathHitsUnknown(candidate, issue.path)) continue;
      if (carriedAsRead(spec, issue.path[0], candidate, oldInputs)) continue;
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) {
          failures.push({
            property: key,
            reason: `${key} is not a property of ${spec.type}${nearest(spec, key)}`,
          });
        }
        continue;
      }
      const property = issue.path.map(String).join(".") || "(inputs)";
      // zod says "expected string, received undefined" of a field left out.
      const missing = isMissing(issue, candidate);
      const whenNew = keptAsReadWhenNew(spec, issue.path[0], candidate, oldInputs);
      failures.push({
        property,
        reason: missing
          ? `${property} is required`
          : `${property}: ${stringForScalar(issue, candidate) ?? issueMessage(issue)}${whenNew ? `. ${whenNew}` : ""}`,
      });
    }
  }
  // A property already reported by the schema is not reported again by a rule.
  const reported = new Set(failures.map((failure) => failure.property));
  const ruled = spec.rules?.(candidate, oldInputs ? normalizeInputs(spec, oldInputs) : undefined) ?? [];
  failures.push(...ruled.filter((failure) => !reported.has(failure.property)));

  const inputs: Props = { ...candidate };
  for (const key of CARRIED_KEYS) if (news[key] !== undefined && key !== AUTO_NAMED) inputs[key] = news[key];
  inputs[AUTO_NAMED] = resolved?.autoNamed ?? false;
  return { inputs, failures: mergeByProperty(failures) };
}

/** Config getters that read a value as each type (pulumi.Config), for a value given as a string. */
const CONFIG_GETTERS: Record<string, { noun: string; getters: string }> = {
  number: { noun: "a number", getters: "config.requireNumber / getNumber" },
  boolean: { noun: "a boolean", getters: "config.requireBoolean / getBoolean" },
};

/**
 * A number or boolean input given a string, most often `config.get("max")` (always a string):
 * `expected a number, got the string "3" (use config.requireNumber / getNumber)`; else undefined.
 */
function stringForScalar(issue: z.core.$ZodIssue, input: Props): string | undefined {
  if (issue.code !== "invalid_type") return undefined;
  const wanted = CONFIG_GETTERS[issue.expected];
  if (wanted === undefined) return undefined;
  let at: unknown = input;
  for (const step of issue.path) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<PropertyKey, unknown>)[step];
  }
  if (typeof at !== "string") return undefined;
  const shown = at.length > 40 ? `${at.slice(0, 40)}…` : at;
  return `expected ${wanted.noun}, got the string ${JSON.stringify(shown)} (use ${wanted.getters})`;
}

/** One failure per property, its reasons joined, in first-seen order. */
function mergeByProperty(failures: CheckFailure[]): CheckFailure[] {
  const merged = new Map<string, string[]>();
  for (const { property, reason } of failures) {
    const reasons = merged.get(property) ?? [];
    if (!reasons.includes(reason)) reasons.push(reason);
    merged.set(property, reasons);
  }
  return [...merged].map(([property, reasons]) => ({ property, reason: reasons.join("; ") }));
}

/**
 * The validated inputs of create or update, typed by the resource's schema (defaults applied). The
 * engine only calls those with inputs check accepted, so a failure here is a bug or a hand-edited
 * state; it is reported by property like a check failure.
 */
export function parseInputs<S extends z.ZodObject>(
  spec: InputSpec & { schema: S },
  props: Props,
): z.output<S> & { name: string } {
  const name = props.name;
  const operation = `${spec.type} inputs`;
  if (typeof name !== "string" || name === "") {
    throw new ProviderError("VALIDATION", `${operation}: no name`, { operation, field: "name" });
  }
  const inputs = userInputs(props);
  // A value kept as read (InputSpec.keptAsRead) is checked as absent and then put back as it is.
  const kept = Object.entries(spec.keptAsRead ?? {})
    .filter(([field, { value }]) => inputs[field] === value)
    .map(([field, { value }]) => [field, value] as const);
  for (const [field] of kept) delete inputs[field];
  const parsed = spec.schema.safeParse(inputs);
  if (!parsed.success) {
    throw new ProviderError("VALIDATION", `${operation}: ${describeIssues(parsed.error, inputs)}`, {
      operation,
    });
  }
  return { ...parsed.data, ...Object.fromEntries(kept), name };
}

/** Whether `field` holds its kept-as-read value (InputSpec.keptAsRead), carried over from the old inputs. */
function carriedAsRead(
  spec: InputSpec,
  field: PropertyKey | undefined,
  news: Props,
  olds: Props | undefined,
) {
  if (typeof field !== "string" || olds === undefined) return false;
  const value = spec.keptAsRead?.[field]?.value;
  return value !== undefined && news[field] === value && olds[field] === value;
}

/** What to tell a new resource given `field`'s kept-as-read value (InputSpec.keptAsRead), else undefined. */
function keptAsReadWhenNew(
  spec: InputSpec,
  field: PropertyKey | undefined,
  news: Props,
  olds: Props | undefined,
): string | undefined {
  if (typeof field !== "string" || olds !== undefined) return undefined;
  const kept = spec.keptAsRead?.[field];
  return kept !== undefined && news[field] === kept.value ? kept.whenNew : undefined;
}

/**
 * `{[field]: its items once, in the order first given}` for a list of known values, as the service
 * stores such a list (a port or a volume named twice is one); `{}` otherwise (absent, or unknown
 * during preview). For InputSpec.canonical.
 */
export function uniqueList(props: Props, field: string): Props {
  const value = props[field];
  if (!Array.isArray(value) || containsUnknown(value)) return {};
  return { [field]: uniqueItems(value) };
}
