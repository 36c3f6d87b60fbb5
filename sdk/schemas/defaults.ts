/**
 * The plain values of the wire schemas (defaults, id lists, storage types, a list splitter), without zod: what
 * the local service's management rules read at start, so loading them does not build the schemas.
 * common.ts, endpoint.ts, template.ts and network-volume.ts re-export them; import from there elsewhere.
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

/** Each item once, in the order first given (a list of choices names each choice once). */
export function uniqueItems<T>(items: readonly T[]): T[] {
  return [...new Set(items)];
}

/**
 * A comma list (GraphQL gpuIds, locations, allowedCudaVersions) as it is stored and compared: items
 * trimmed (an exclusion's "-" joined to its GPU type), empty items dropped, each once, joined by ",".
 * "" when it names nothing. `" US , CZ,US"` is `"US,CZ"`; `"AMPERE_48, - NVIDIA A40"` is
 * `"AMPERE_48,-NVIDIA A40"`.
 */
export function canonicalCommaList(value: string): string {
  const items = splitCommaList(value).map((item) =>
    item.startsWith("-") ? `-${item.slice(1).trim()}` : item,
  );
  return uniqueItems(items).join(",");
}

/**
 * Why an endpoint naming one volume both as networkVolumeId and in networkVolumeIds is refused (REST,
 * GraphQL, the provider's check): clearing networkVolumeId left the volume attached through the list.
 */
export function volumeGivenTwice(volumeId: string): string {
  return `network volume ${volumeId} is also the endpoint's networkVolumeId; give each volume once: as networkVolumeId, or in networkVolumeIds (volumes in several data centers), not both`;
}

/** The storage types of network-volume.ts's NEXT_GEN_STORAGE_TYPE and STANDARD_STORAGE_TYPE (see there). */
export const NEXT_GEN_STORAGE_TYPE = "VAST";
export const STANDARD_STORAGE_TYPE = "MOOSE_FS";

/** GraphQL GPU pool ids (gpuIds). */
export const GPU_POOL_IDS = [
  "AMPERE_16",
  "AMPERE_24",
  "ADA_24",
  "AMPERE_48",
  "ADA_48_PRO",
  "AMPERE_80",
  "ADA_80_PRO",
] as const;

export const CPU_FLAVOR_IDS = ["cpu3c", "cpu3g", "cpu5c", "cpu5g"] as const;

export const DATA_CENTER_IDS = [
  "EU-RO-1",
  "CA-MTL-1",
  "EU-SE-1",
  "US-IL-1",
  "EUR-IS-1",
  "EU-CZ-1",
  "US-TX-3",
  "EUR-IS-2",
  "US-KS-2",
  "US-GA-2",
  "US-WA-1",
  "US-TX-1",
  "CA-MTL-3",
  "EU-NL-1",
  "US-TX-4",
  "US-CA-2",
  "US-NC-1",
  "OC-AU-1",
  "US-DE-1",
  "EUR-IS-3",
  "CA-MTL-2",
  "AP-JP-1",
  "EUR-NO-1",
  "EU-FR-1",
  "US-KS-3",
  "US-GA-1",
] as const;

/** REST GPU type names (gpuTypeIds), as the real service's OpenAPI description lists them. */
export const GPU_TYPE_IDS = [
  "NVIDIA GeForce RTX 4090",
  "NVIDIA A40",
  "NVIDIA RTX A5000",
  "NVIDIA GeForce RTX 5090",
  "NVIDIA H100 80GB HBM3",
  "NVIDIA GeForce RTX 3090",
  "NVIDIA RTX A4500",
  "NVIDIA L40S",
  "NVIDIA H200",
  "NVIDIA L4",
  "NVIDIA RTX 6000 Ada Generation",
  "NVIDIA A100-SXM4-80GB",
  "NVIDIA RTX 4000 Ada Generation",
  "NVIDIA RTX A6000",
  "NVIDIA A100 80GB PCIe",
  "NVIDIA RTX 2000 Ada Generation",
  "NVIDIA RTX A4000",
  "NVIDIA RTX PRO 6000 Blackwell Server Edition",
  "NVIDIA H100 PCIe",
  "NVIDIA H100 NVL",
  "NVIDIA L40",
  "NVIDIA B200",
  "NVIDIA GeForce RTX 3080 Ti",
  "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
  "NVIDIA GeForce RTX 3080",
  "NVIDIA GeForce RTX 3070",
  "AMD Instinct MI300X OAM",
  "NVIDIA GeForce RTX 4080 SUPER",
  "Tesla V100-PCIE-16GB",
  "Tesla V100-SXM2-32GB",
  "NVIDIA RTX 5000 Ada Generation",
  "NVIDIA GeForce RTX 4070 Ti",
  "NVIDIA RTX 4000 SFF Ada Generation",
  "NVIDIA GeForce RTX 3090 Ti",
  "NVIDIA RTX A2000",
  "NVIDIA GeForce RTX 4080",
  "NVIDIA A30",
  "NVIDIA GeForce RTX 5080",
  "Tesla V100-FHHL-16GB",
  "NVIDIA H200 NVL",
  "Tesla V100-SXM2-16GB",
  "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
  "NVIDIA A5000 Ada",
  "Tesla V100-PCIE-32GB",
  "NVIDIA  RTX A4500",
  "NVIDIA  A30",
  "NVIDIA GeForce RTX 3080TI",
  "Tesla T4",
  "NVIDIA RTX A30",
] as const;
