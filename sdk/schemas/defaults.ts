/**
 * The plain values of the wire schemas (defaults, storage types, a list splitter), without zod: what
 * the local service's management rules read at start, so loading them does not build the schemas.
 * endpoint.ts, template.ts and network-volume.ts re-export them; import from there elsewhere.
 */

/**
 * Defaults of the real service, applied by REST create and by GraphQL saveEndpoint for every field
 * the input leaves out (saveEndpoint with an id is a full replace, so omitted = default there too).
 */
export const ENDPOINT_DEFAULTS = {
  computeType: "GPU",
  type: "QB",
  gpuCount: 1,
  idleTimeout: 5,
  scalerType: "QUEUE_DELAY",
  scalerValue: 4,
  workersMin: 0,
  workersMax: 3,
  workersStandby: 1,
  flashBootType: "OFF",
  executionTimeoutMs: 600_000,
  gpuIds: "AMPERE_16",
} as const;

/** Defaults of the real service, applied to fields a create leaves out. */
export const TEMPLATE_DEFAULTS = {
  category: "NVIDIA",
  containerDiskInGb: 50,
  volumeInGb: 20,
  volumeMountPath: "/workspace",
  dockerEntrypoint: [] as string[],
  dockerStartCmd: [] as string[],
  env: {} as Record<string, string>,
  ports: ["8888/http", "22/tcp"],
  readme: "",
  isPublic: false,
  isServerless: false,
} as const;

/** "a, b,,c" -> ["a","b","c"]; null/empty -> []. */
export function splitCommaList(value: string | null | undefined): string[] {
  if (!value) return [];
  return value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The storage types of network-volume.ts's NEXT_GEN_STORAGE_TYPE and STANDARD_STORAGE_TYPE (see there). */
export const NEXT_GEN_STORAGE_TYPE = "VAST";
export const STANDARD_STORAGE_TYPE = "MOOSE_FS";
