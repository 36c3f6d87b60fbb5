import * as pulumi from "@pulumi/pulumi";
import { LOGICAL_NAME } from "./naming";

/** The Pulumi module of every resource: tokens are `pulumi-nodejs:dynamic/runpodkit:<Type>`. */
export const DYNAMIC_MODULE = "runpodkit";

/** A resource's arguments: each input may be a plain value, a promise or an Output. */
export type PulumiInputs<T> = { [K in keyof T]: pulumi.Input<T[K]> };

/**
 * The props a Resource class registers: every output key (undefined = computed by the provider, so
 * the class exposes it as an Output), the arguments, secret inputs wrapped so the state stores them
 * encrypted, and the logical name check needs for auto-naming.
 */
export function resourceProps(
  name: string,
  args: object | undefined,
  outputKeys: readonly string[],
  secretInputs: readonly string[] = [],
): pulumi.Inputs {
  const props: pulumi.Inputs = {};
  for (const key of outputKeys) props[key] = undefined;
  for (const [key, value] of Object.entries(args ?? {})) {
    if (value !== undefined) props[key] = secretInputs.includes(key) ? pulumi.secret(value) : value;
  }
  props[LOGICAL_NAME] = name;
  return props;
}

/** Marks sensitive outputs secret in addition to whatever the caller asked. */
export function withSecretOutputs(
  opts: pulumi.CustomResourceOptions | undefined,
  secretOutputs: readonly string[],
): pulumi.CustomResourceOptions {
  if (secretOutputs.length === 0) return opts ?? {};
  return pulumi.mergeOptions(opts, { additionalSecretOutputs: [...secretOutputs] });
}
