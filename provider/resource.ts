import * as pulumi from "@pulumi/pulumi";
import type { z } from "zod";
import { APPLIED, CUSTOM_TIMEOUTS, LOGICAL_NAME, PARENT, REPLACE_ON_CHANGES, SCOPE } from "./bookkeeping";
import type { InputSpec } from "./check";

/** The Pulumi module of every resource: tokens are `pulumi-nodejs:dynamic/runpodkit:<Type>`. */
export const DYNAMIC_MODULE = "runpodkit";

// Defined with the generated plain types, which the published declarations reach without zod.
export type { DeepInput, OutputsOf, PulumiInputs } from "./public-types";

/**
 * A resource's state (its outputs) from its schemas: every input with defaults applied (a name is
 * always set; adoptId is null when not used) and the fields the service computes.
 */
export type StateOf<I extends z.ZodObject, C extends z.ZodObject | undefined = undefined> = Omit<
  z.output<I>,
  "name" | "adoptId"
> & { name: string; adoptId: string | null } & (C extends z.ZodObject ? z.output<C> : unknown);

/** Every output key of a resource: its inputs, then the fields the service computes. */
export function outputKeys(spec: InputSpec): string[] {
  return [...Object.keys(spec.schema.shape), ...Object.keys(spec.computed?.shape ?? {})];
}

/**
 * The props a Resource class registers: every output key (undefined = computed by the provider, so
 * the class exposes it as an Output), the arguments, secret inputs wrapped so the state stores them
 * encrypted, and the bookkeeping check needs: the logical name and the stack (for generated names)
 * and the customTimeouts option (Pulumi's host does not pass it to dynamic providers).
 */
export function resourceProps(
  name: string,
  args: object | undefined,
  spec: InputSpec,
  opts: pulumi.CustomResourceOptions | undefined,
): pulumi.Inputs {
  const secretInputs = spec.secrets ?? [];
  const props: pulumi.Inputs = {};
  for (const key of outputKeys(spec)) props[key] = undefined;
  // An output the provider fills (declared, so that additionalSecretOutputs may name it).
  props[APPLIED] = undefined;
  for (const [key, value] of Object.entries(args ?? {})) {
    if (value !== undefined) props[key] = secretInputs.includes(key) ? pulumi.secret(value) : value;
  }
  const given = (args ?? {}) as Record<string, unknown>;
  for (const group of spec.spellings ?? []) {
    const canonical = spec.canonical;
    if (canonical === undefined || group.every((key) => given[key] === undefined)) continue;
    // One Output of the whole group, each key its canonical spelling: secret if any key was secret.
    const joined = pulumi
      .all(group.map((key) => given[key]))
      .apply((values) => canonical(Object.fromEntries(group.map((key, i) => [key, values[i]]))));
    for (const key of group) props[key] = joined.apply((spelled) => spelled[key] ?? null);
  }
  props[LOGICAL_NAME] = name;
  props[SCOPE] = `${pulumi.getProject()}/${pulumi.getStack()}`;
  // Only a parent the program gave: a resource at the top keeps the name it had before parents counted.
  const parent = parentPath(opts?.parent);
  if (parent !== undefined) props[PARENT] = parent;
  if (opts?.customTimeouts !== undefined) props[CUSTOM_TIMEOUTS] = opts.customTimeouts;
  // Pulumi's engine cannot apply it to a dynamic resource (see REPLACE_ON_CHANGES): the provider does.
  if (opts?.replaceOnChanges !== undefined && opts.replaceOnChanges.length > 0) {
    props[REPLACE_ON_CHANGES] = [...opts.replaceOnChanges];
  }
  for (const warning of inertIgnorePaths(spec, opts?.ignoreChanges ?? [])) {
    void pulumi.log.warn(`${spec.type} ${name}: ${warning}`);
  }
  return props;
}

/**
 * What is wrong with each ignoreChanges path that indexes a position (`[0]`) into a field that is
 * not a list: a comma string (gpuIds) or a map (env). Pulumi's engine (PropertyPath.Reset) finds no
 * value there in the old or the new inputs and silently ignores nothing, so a change the user meant
 * to ignore is applied.
 */
export function inertIgnorePaths(spec: InputSpec, paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const path of paths) {
    const match = /^([A-Za-z_$][\w$]*)\s*\[\s*\d+\s*\]/.exec(path);
    const field = match?.[1];
    const schema = field === undefined ? undefined : spec.schema.shape[field];
    if (field === undefined || schema === undefined) continue;
    const kind = baseKind(schema);
    if (kind === "array") continue;
    const instead = kind === "record" ? `"${field}" whole, or one key ("${field}.KEY")` : `"${field}" whole`;
    out.push(
      `ignoreChanges "${path}" ignores nothing: ${field} is ${kind === "record" ? "a map" : "not a list"}, so Pulumi's engine finds no value at a position in it. Ignore ${instead}.`,
    );
  }
  return out;
}

/** The zod type under defaults, optional and nullable wrappers ("string", "record", "array", ...). */
function baseKind(schema: z.ZodType): string {
  let def = schema._zod.def as { type: string; innerType?: z.ZodType };
  for (let depth = 0; def.innerType !== undefined && depth < 8; depth++) {
    def = def.innerType._zod.def as { type: string; innerType?: z.ZodType };
  }
  return def.type;
}

/**
 * The parent's place as its URN spells it (`<type>::<name>` of each ancestor below the stack, joined
 * by `$`), or undefined at the top. A plain string, not the parent's `urn` Output: an input holding a
 * component's URN makes the resource depend on the component, which Pulumi expands to its children,
 * the resource itself among them (a deadlock).
 */
function parentPath(parent: pulumi.Resource | undefined): string | undefined {
  const parts: string[] = [];
  let at = parent;
  for (let depth = 0; at !== undefined && depth < 64; depth++) {
    // Read where Pulumi keeps them: its resourceType()/resourceName() getters came after 3.139, the
    // peer range's floor, and return these same fields. It has no getter for the parent at all.
    const kept = at as unknown as {
      __pulumiType?: string;
      __name?: string;
      __parentResource?: pulumi.Resource;
    };
    const type = kept.__pulumiType;
    if (type === undefined || type === "pulumi:pulumi:Stack") break;
    parts.unshift(`${type}::${kept.__name ?? ""}`);
    at = kept.__parentResource;
  }
  return parts.length > 0 ? parts.join("$") : undefined;
}

/**
 * Marks sensitive outputs secret in addition to whatever the caller asked, and the applied inputs
 * (a copy of every input, secret ones included).
 */
export function withSecretOutputs(
  opts: pulumi.CustomResourceOptions | undefined,
  spec: InputSpec,
): pulumi.CustomResourceOptions {
  // Always, even for a resource with no secret field: a program may pass any input as a secret, and
  // Pulumi keeps its secretness only under that input's own key, not inside the applied copy.
  return pulumi.mergeOptions(opts, { additionalSecretOutputs: [...(spec.secrets ?? []), APPLIED] });
}
