/**
 * customTimeouts as the program sends them (Go duration strings, "" when not set) and as the engine
 * passes them to the provider: `timeout` in seconds on Create, Update and Delete requests.
 */
export interface CustomTimeouts {
  create: string;
  update: string;
  delete: string;
}

export const NO_TIMEOUTS: CustomTimeouts = { create: "", update: "", delete: "" };

const UNIT_SECONDS: Record<string, number> = {
  h: 3600,
  m: 60,
  s: 1,
  ms: 0.001,
  us: 1e-6,
  µs: 1e-6,
  ns: 1e-9,
};

/** Seconds for a Go duration such as "1h30m" or "90s"; undefined when not set (the provider's default applies). */
export function timeoutSeconds(duration: string | undefined): number | undefined {
  if (!duration) return undefined;
  const parts = [...duration.matchAll(/(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)/g)];
  if (parts.map((p) => p[0]).join("") !== duration) return undefined;
  const seconds = parts.reduce((sum, [, n, unit]) => sum + Number(n) * (UNIT_SECONDS[unit ?? "s"] ?? 0), 0);
  return seconds > 0 ? seconds : undefined;
}
