import type { z } from "zod";
import { AUTO_NAMED, INTERNAL_KEYS, LOGICAL_NAME, resolveName, type Suffix } from "./naming";
import { pathHitsUnknown } from "./unknowns";

export interface CheckFailure {
  property: string;
  reason: string;
}

export type Props = Record<string, unknown>;

/** How one resource's inputs are validated and normalised; shared by check, diff and schema.json. */
export interface InputSpec {
  /** The Pulumi type name, e.g. "Endpoint" (token `runpodkit:index:Endpoint`). */
  readonly type: string;
  /** Every user-facing input, strict (an unknown property is a failure). */
  readonly schema: z.ZodObject;
  /**
   * The value the service uses when a field is omitted. check fills these in, so an omitted field
   * and its default compare equal in diff and the service always receives the whole configuration.
   */
  readonly defaults: Readonly<Props>;
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

/** The input part of inputs or old outputs, with defaults applied to absent fields. */
export function normalizeInputs(spec: InputSpec, props: Props): Props {
  const out: Props = {};
  for (const field of inputFields(spec)) {
    const value = props[field];
    if (value !== undefined && value !== null) out[field] = value;
    else if (spec.defaults[field] !== undefined) out[field] = spec.defaults[field];
    else if (value === null) out[field] = null;
  }
  return spec.canonical ? spec.canonical(out) : out;
}

/**
 * check: names the resource, fills defaults and validates, before any API call. Every failure names
 * its property; values still unknown during preview are accepted as they are.
 */
export function checkInputs(
  spec: InputSpec,
  olds: Props | undefined,
  news: Props,
  suffix?: Suffix,
): { inputs: Props; failures: CheckFailure[] } {
  const oldInputs = olds && Object.keys(olds).length > 0 ? olds : undefined;
  const failures: CheckFailure[] = [];
  const resolved = resolveName(oldInputs, news, suffix);
  const given = userInputs(news);
  const candidate = normalizeInputs(spec, given);
  // Keep unknown keys so the strict schema reports them by name.
  for (const [key, value] of Object.entries(given)) if (!(key in candidate)) candidate[key] = value;
  if (resolved) candidate.name = resolved.name;
  else failures.push({ property: "name", reason: "name is required (no resource name to derive one from)" });

  const parsed = spec.schema.safeParse(candidate);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      if (pathHitsUnknown(candidate, issue.path)) continue;
      if (issue.code === "unrecognized_keys") {
        for (const key of issue.keys) {
          failures.push({ property: key, reason: `${key} is not a property of ${spec.type}` });
        }
        continue;
      }
      const property = issue.path.map(String).join(".") || "(inputs)";
      failures.push({ property, reason: `${property}: ${issue.message}` });
    }
  }
  // A property already reported by the schema is not reported again by a rule.
  const reported = new Set(failures.map((failure) => failure.property));
  const ruled = spec.rules?.(candidate, oldInputs ? normalizeInputs(spec, oldInputs) : undefined) ?? [];
  failures.push(...ruled.filter((failure) => !reported.has(failure.property)));

  const inputs: Props = { ...candidate };
  return {
    inputs: withBookkeeping(inputs, news, resolved?.autoNamed ?? false),
    failures: mergeByProperty(failures),
  };
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

function withBookkeeping(inputs: Props, news: Props, autoNamed: boolean): Props {
  if (news[LOGICAL_NAME] !== undefined) inputs[LOGICAL_NAME] = news[LOGICAL_NAME];
  inputs[AUTO_NAMED] = autoNamed;
  return inputs;
}
