import { z } from "zod";
import { CUSTOM_TIMEOUTS } from "./bookkeeping";
import type { Props } from "./check";

/**
 * Pulumi's customTimeouts option, as the Resource classes record it (`__customTimeouts`). Pulumi's
 * dynamic-provider host does not hand a request's timeout to the provider's methods, so the classes
 * send the option as an input and the provider reads it back from the outputs, where delete finds it.
 */
export const CustomTimeouts = z.object({
  create: z.string().nullish(),
  update: z.string().nullish(),
  delete: z.string().nullish(),
});
export type CustomTimeouts = z.infer<typeof CustomTimeouts>;

/** A Go duration as Pulumi takes it: "90s", "5m", "1h30m", "1.5h", "250ms". */
const GoDuration = /^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/;
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Milliseconds of a Go duration, or undefined when the text is not one. */
export function durationMs(text: string): number | undefined {
  if (!GoDuration.test(text)) return undefined;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) {
    total += Number(amount) * (UNIT_MS[unit ?? ""] ?? 0);
  }
  return Math.round(total);
}

/** How long a delete may wait out refusals: customTimeouts.delete when given, else `fallbackMs`. */
export function deleteBoundMs(props: Props, fallbackMs: number): number {
  return operationBoundMs(props, "delete", fallbackMs);
}

/**
 * How long a create or update may wait out a busy service (429, 503) unless the resource's
 * customTimeouts say otherwise: long enough for a rate window or a restart, short of hanging an up.
 */
export const BUSY_BOUND_MS = 20 * 60_000;

/** customTimeouts.<operation> of a resource's props (inputs or outputs) when given, else `fallbackMs`. */
export function operationBoundMs(
  props: Props,
  operation: "create" | "update" | "delete",
  fallbackMs: number,
): number {
  const timeouts = CustomTimeouts.safeParse(props[CUSTOM_TIMEOUTS]);
  const text = timeouts.success ? timeouts.data[operation] : undefined;
  const ms = typeof text === "string" ? durationMs(text) : undefined;
  return ms ?? fallbackMs;
}
