/**
 * Update plans, as `pulumi preview --save-plan` and `pulumi up --plan` use them: the preview records,
 * per resource, the operation and the checked inputs it intends; the update refuses any step that
 * does not match (another operation, a resource the plan does not know, or an input whose planned
 * value was known and differs). Secret values are kept only as digests, so a plan file holds none;
 * an unknown stays unknown, inside a secret too (Pulumi's rule: a planned unknown accepts any value).
 */
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { z } from "zod";
import { EngineError } from "./errors";
import {
  containsUnknown,
  isObject,
  isSecret,
  type PropertyMap,
  type PropertyValue,
  revealValue,
  sameValues,
  UNKNOWN,
} from "./values";

/** What a step does to a resource (Pulumi's step ops, as this engine names them). */
export type StepOp = "same" | "create" | "update" | "replace" | "delete" | "read";

export interface ResourcePlan {
  op: StepOp;
  inputs: PropertyMap;
}

export interface UpdatePlan {
  version: 1;
  project: string;
  stack: string;
  resources: Record<string, ResourcePlan>;
}

export type PlanRecorder = (urn: string, op: StepOp, inputs: PropertyMap) => void;
export type PlanChecker = (urn: string, op: StepOp, inputs: PropertyMap) => void;

const planSchema = z.object({
  version: z.literal(1),
  project: z.string(),
  stack: z.string(),
  resources: z.record(
    z.string(),
    z.object({
      op: z.enum(["same", "create", "update", "replace", "delete", "read"]),
      inputs: z.record(z.string(), z.json()),
    }),
  ),
});

const DIGEST_KEY = "__secretDigest";
const PARTS_KEY = "__secretParts";

/**
 * Inputs as a plan keeps them: a known secret replaced by a digest of its value; a secret that is
 * unknown stays unknown, and one only partly known keeps its shape with each known leaf digested.
 */
export function planInputs(inputs: PropertyMap): PropertyMap {
  return Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, digestSecrets(v)]));
}

function digestSecrets(value: PropertyValue): PropertyValue {
  if (isSecret(value)) {
    const inner = value.value ?? null;
    if (inner === UNKNOWN) return UNKNOWN;
    return containsUnknown(inner) ? { [PARTS_KEY]: digestLeaves(inner) } : digestOf(inner);
  }
  if (Array.isArray(value)) return value.map(digestSecrets);
  if (isObject(value))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, digestSecrets(v)]));
  return value;
}

function digestOf(value: PropertyValue): PropertyValue {
  return {
    [DIGEST_KEY]: createHash("sha256")
      .update(JSON.stringify(revealValue(value)))
      .digest("hex"),
  };
}

function digestLeaves(value: PropertyValue): PropertyValue {
  if (value === UNKNOWN) return UNKNOWN;
  if (isSecret(value)) return digestLeaves(value.value ?? null);
  if (Array.isArray(value)) return value.map(digestLeaves);
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, digestLeaves(v)]));
  return digestOf(value);
}

const isDigest = (value: PropertyValue): value is { [DIGEST_KEY]: string } =>
  isObject(value) && Object.keys(value).length === 1 && typeof value[DIGEST_KEY] === "string";
const isParts = (value: PropertyValue): value is { [PARTS_KEY]: PropertyValue } =>
  isObject(value) && Object.keys(value).length === 1 && PARTS_KEY in value;

export function newPlan(project: string, stack: string): { plan: UpdatePlan; record: PlanRecorder } {
  const plan: UpdatePlan = { version: 1, project, stack, resources: {} };
  return {
    plan,
    record: (urn, op, inputs) => {
      plan.resources[urn] = { op, inputs };
    },
  };
}

export async function savePlan(path: string, plan: UpdatePlan): Promise<void> {
  await writeFile(path, `${JSON.stringify(plan, null, 2)}\n`, { mode: 0o600 });
}

export async function loadPlan(path: string): Promise<UpdatePlan> {
  const parsed = planSchema.safeParse(JSON.parse(await readFile(path, "utf8")));
  if (!parsed.success) {
    throw new EngineError("BAD_PLAN", "up", `${path} is not an update plan: ${parsed.error.message}`);
  }
  return parsed.data as UpdatePlan;
}

/**
 * The checker `up --plan` runs on each step, given the step's checked inputs as they are (secrets
 * wrapped); throws a PLAN_VIOLATION naming what differs.
 */
export function planChecker(plan: UpdatePlan): PlanChecker {
  return (urn, op, inputs) => {
    const planned = plan.resources[urn];
    if (!planned) violation(urn, `a ${op} of a resource the plan does not contain`);
    if (planned.op !== op)
      violation(urn, `${op} is not allowed by the plan: planned operation ${planned.op}`);
    const changed = [...new Set([...Object.keys(planned.inputs), ...Object.keys(inputs)])]
      .filter((key) => {
        const want = planned.inputs[key];
        const got = inputs[key];
        return want === undefined || got === undefined || !matchesPlan(want, got);
      })
      .sort();
    if (changed.length > 0) violation(urn, `properties changed: ${changed.join(", ")}`);
  };
}

/**
 * A planned unknown (a value the preview could not know) matches anything, at any depth; a planned
 * secret matches a secret whose value has its digest (leaf by leaf where the plan kept its shape).
 */
function matchesPlan(want: PropertyValue, got: PropertyValue): boolean {
  if (want === UNKNOWN) return true;
  if (isDigest(want)) return isSecret(got) && matchesDigest(want, got.value ?? null);
  if (isParts(want)) return isSecret(got) && matchesLeaves(want[PARTS_KEY], got.value ?? null);
  if (Array.isArray(want)) {
    return (
      Array.isArray(got) && want.length === got.length && want.every((w, i) => matchesPlan(w, got[i] ?? null))
    );
  }
  if (isObject(want)) {
    if (!isObject(got)) return false;
    const keys = new Set([...Object.keys(want), ...Object.keys(got)]);
    return [...keys].every((k) => k in want && k in got && matchesPlan(want[k] ?? null, got[k] ?? null));
  }
  return sameValues(want, got);
}

function matchesDigest(want: { [DIGEST_KEY]: string }, got: PropertyValue): boolean {
  return sameValues(digestOf(got), want);
}

/** Inside a partly known secret: unknown leaves match anything, known ones by digest. */
function matchesLeaves(want: PropertyValue, got: PropertyValue): boolean {
  if (want === UNKNOWN) return true;
  if (isSecret(got)) return matchesLeaves(want, got.value ?? null);
  if (isDigest(want)) return matchesDigest(want, got);
  if (Array.isArray(want)) {
    return (
      Array.isArray(got) &&
      want.length === got.length &&
      want.every((w, i) => matchesLeaves(w, got[i] ?? null))
    );
  }
  if (!isObject(want) || !isObject(got)) return false;
  const keys = new Set([...Object.keys(want), ...Object.keys(got)]);
  return [...keys].every((k) => k in want && k in got && matchesLeaves(want[k] ?? null, got[k] ?? null));
}

function violation(urn: string, detail: string): never {
  throw new EngineError("PLAN_VIOLATION", "up", `resource ${urn} violates plan: ${detail}`, urn);
}
