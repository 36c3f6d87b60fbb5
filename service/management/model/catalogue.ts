import type {
  CpuFlavor,
  DataCenter,
  GpuAvailability,
  GpuType,
  GqlGpuAvailabilityInput,
  GqlGpuLowestPriceInput,
  LowestPrice,
} from "../../../sdk/schemas/catalogue";
import { CPU_FLAVOR_IDS, DATA_CENTER_IDS, GPU_TYPE_IDS } from "../../../sdk/schemas/defaults";
import { invalid } from "../../errors";

/*
 * What this local service offers to rent: GPU types, CPU flavors, data centers (the ids every other
 * part of the service accepts: sdk/schemas/common.ts), and the public templates pods may name. Prices
 * are this service's own list (USD per hour), used by pods and their billing; availability is
 * unlimited up to each type's maxGpuCount, in every data center.
 */

type GpuTypeId = (typeof GPU_TYPE_IDS)[number];

interface GpuSpec {
  displayName: string;
  manufacturer: "Nvidia" | "AMD";
  memoryInGb: number;
  cudaCores: number;
  /** On-demand USD per GPU-hour; null when not offered in that cloud. */
  secure: number | null;
  community: number | null;
  maxGpuCount: number;
}

const gpu = (
  displayName: string,
  memoryInGb: number,
  cudaCores: number,
  secure: number | null,
  community: number | null,
  maxGpuCount = 8,
  manufacturer: GpuSpec["manufacturer"] = "Nvidia",
): GpuSpec => ({ displayName, manufacturer, memoryInGb, cudaCores, secure, community, maxGpuCount });

/** Every GPU type id REST accepts (GPU_TYPE_IDS) has an entry: the compiler checks it. */
const GPU_SPECS: Record<GpuTypeId, GpuSpec> = {
  "NVIDIA GeForce RTX 4090": gpu("RTX 4090", 24, 16384, 0.69, 0.34),
  "NVIDIA A40": gpu("A40", 48, 10752, 0.4, null),
  "NVIDIA RTX A5000": gpu("RTX A5000", 24, 8192, 0.27, 0.16),
  "NVIDIA GeForce RTX 5090": gpu("RTX 5090", 32, 21760, 0.94, 0.69),
  "NVIDIA H100 80GB HBM3": gpu("H100 SXM", 80, 16896, 2.69, null),
  "NVIDIA GeForce RTX 3090": gpu("RTX 3090", 24, 10496, 0.46, 0.22),
  "NVIDIA RTX A4500": gpu("RTX A4500", 20, 7168, 0.25, 0.19),
  "NVIDIA L40S": gpu("L40S", 48, 18176, 0.86, 0.79),
  "NVIDIA H200": gpu("H200 SXM", 141, 16896, 3.59, null),
  "NVIDIA L4": gpu("L4", 24, 7424, 0.43, null),
  "NVIDIA RTX 6000 Ada Generation": gpu("RTX 6000 Ada", 48, 18176, 0.77, 0.74),
  "NVIDIA A100-SXM4-80GB": gpu("A100 SXM", 80, 6912, 1.74, 1.39),
  "NVIDIA RTX 4000 Ada Generation": gpu("RTX 4000 Ada", 20, 6144, 0.26, 0.2),
  "NVIDIA RTX A6000": gpu("RTX A6000", 48, 10752, 0.49, 0.33),
  "NVIDIA A100 80GB PCIe": gpu("A100 PCIe", 80, 6912, 1.64, 1.19),
  "NVIDIA RTX 2000 Ada Generation": gpu("RTX 2000 Ada", 16, 2816, 0.24, 0.23),
  "NVIDIA RTX A4000": gpu("RTX A4000", 16, 6144, 0.25, 0.17),
  "NVIDIA RTX PRO 6000 Blackwell Server Edition": gpu("RTX PRO 6000", 96, 24064, 1.79, null),
  "NVIDIA H100 PCIe": gpu("H100 PCIe", 80, 14592, 2.39, 1.99),
  "NVIDIA H100 NVL": gpu("H100 NVL", 94, 16896, 2.79, 2.59),
  "NVIDIA L40": gpu("L40", 48, 18176, 0.99, null),
  "NVIDIA B200": gpu("B200", 180, 18944, 5.99, null),
  "NVIDIA GeForce RTX 3080 Ti": gpu("RTX 3080 Ti", 12, 10240, null, 0.18, 4),
  "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": gpu("RTX PRO 6000 WK", 96, 24064, 1.84, 1.69),
  "NVIDIA GeForce RTX 3080": gpu("RTX 3080", 10, 8704, null, 0.17, 4),
  "NVIDIA GeForce RTX 3070": gpu("RTX 3070", 8, 5888, null, 0.13, 4),
  "AMD Instinct MI300X OAM": gpu("MI300X", 192, 0, 2.49, null, 8, "AMD"),
  "NVIDIA GeForce RTX 4080 SUPER": gpu("RTX 4080 SUPER", 16, 10240, null, 0.28, 4),
  "Tesla V100-PCIE-16GB": gpu("Tesla V100", 16, 5120, null, 0.19),
  "Tesla V100-SXM2-32GB": gpu("V100 SXM2 32GB", 32, 5120, null, 0.29),
  "NVIDIA RTX 5000 Ada Generation": gpu("RTX 5000 Ada", 32, 12800, 0.79, 0.56),
  "NVIDIA GeForce RTX 4070 Ti": gpu("RTX 4070 Ti", 12, 7680, null, 0.19, 4),
  "NVIDIA RTX 4000 SFF Ada Generation": gpu("RTX 4000 Ada SFF", 20, 6144, 0.25, 0.2),
  "NVIDIA GeForce RTX 3090 Ti": gpu("RTX 3090 Ti", 24, 10752, null, 0.27, 4),
  "NVIDIA RTX A2000": gpu("RTX A2000", 12, 3328, 0.12, 0.1),
  "NVIDIA GeForce RTX 4080": gpu("RTX 4080", 16, 9728, null, 0.27, 4),
  "NVIDIA A30": gpu("A30", 24, 3584, null, 0.22, 4),
  "NVIDIA GeForce RTX 5080": gpu("RTX 5080", 16, 10752, null, 0.39, 4),
  "Tesla V100-FHHL-16GB": gpu("V100 FHHL", 16, 5120, null, 0.19, 4),
  "NVIDIA H200 NVL": gpu("H200 NVL", 143, 16896, 3.39, null),
  "Tesla V100-SXM2-16GB": gpu("V100 SXM2", 16, 5120, null, 0.19),
  "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": gpu("RTX PRO 6000 MaxQ", 96, 24064, 1.74, null),
  "NVIDIA A5000 Ada": gpu("A5000 Ada", 32, 12800, null, 0.5, 4),
  "Tesla V100-PCIE-32GB": gpu("V100 PCIe 32GB", 32, 5120, null, 0.25, 4),
  "NVIDIA  RTX A4500": gpu("RTX A4500 (legacy id)", 20, 7168, null, 0.19, 4),
  "NVIDIA  A30": gpu("A30 (legacy id)", 24, 3584, null, 0.22, 4),
  "NVIDIA GeForce RTX 3080TI": gpu("RTX 3080TI (legacy id)", 12, 10240, null, 0.18, 4),
  "Tesla T4": gpu("Tesla T4", 16, 2560, null, 0.14, 4),
  "NVIDIA RTX A30": gpu("RTX A30", 24, 3584, null, 0.22, 4),
};

const cents = (usd: number) => Math.round(usd * 100) / 100;
/** Interruptible (spot) offers cost half the on-demand price. */
const spot = (usd: number | null) => (usd === null ? null : cents(usd / 2));
/** Savings plans (secure cloud only): 5%, 10% and 15% off for a week, a month and three months. */
const plan = (usd: number | null, off: number) => (usd === null ? null : cents(usd * (1 - off)));

export function isGpuTypeId(id: string): id is GpuTypeId {
  return Object.hasOwn(GPU_SPECS, id);
}

/** GraphQL GpuType without lowestPrice (resolved per its input). */
export type GpuTypeView = Omit<GpuType, "lowestPrice"> & { id: GpuTypeId };

function gpuTypeView(id: GpuTypeId): GpuTypeView {
  const s = GPU_SPECS[id];
  return {
    id,
    displayName: s.displayName,
    manufacturer: s.manufacturer,
    memoryInGb: s.memoryInGb,
    cudaCores: s.cudaCores,
    secureCloud: s.secure !== null,
    communityCloud: s.community !== null,
    securePrice: s.secure,
    communityPrice: s.community,
    secureSpotPrice: spot(s.secure),
    communitySpotPrice: spot(s.community),
    oneWeekPrice: plan(s.secure, 0.05),
    oneMonthPrice: plan(s.secure, 0.1),
    threeMonthPrice: plan(s.secure, 0.15),
    maxGpuCount: s.maxGpuCount,
    maxGpuCountSecureCloud: s.secure === null ? 0 : s.maxGpuCount,
    maxGpuCountCommunityCloud: s.community === null ? 0 : s.maxGpuCount,
    minPodGpuCount: 1,
  };
}

export type CloudChoice = "SECURE" | "COMMUNITY" | "ALL";

/** A GPU offer: which cloud it is rented in and its price per GPU-hour. */
export interface GpuOffer {
  gpuTypeId: GpuTypeId;
  cloudType: "SECURE" | "COMMUNITY";
  usdPerGpuHour: number;
}

/**
 * The cheapest offer of a GPU type for `gpuCount` GPUs in the cloud asked (ALL: either), or undefined
 * when the type is not offered there or not with that many GPUs.
 */
export function gpuOffer(
  id: GpuTypeId,
  gpuCount: number,
  cloud: CloudChoice,
  interruptible = false,
): GpuOffer | undefined {
  const s = GPU_SPECS[id];
  if (gpuCount < 1 || gpuCount > s.maxGpuCount) return undefined;
  const offers: GpuOffer[] = [];
  if (cloud !== "COMMUNITY" && s.secure !== null)
    offers.push({ gpuTypeId: id, cloudType: "SECURE", usdPerGpuHour: s.secure });
  if (cloud !== "SECURE" && s.community !== null)
    offers.push({ gpuTypeId: id, cloudType: "COMMUNITY", usdPerGpuHour: s.community });
  const best = offers.sort((a, b) => a.usdPerGpuHour - b.usdPerGpuHour)[0];
  if (!best) return undefined;
  return interruptible ? { ...best, usdPerGpuHour: spot(best.usdPerGpuHour) ?? 0 } : best;
}

export function gpuDisplayName(id: string): string {
  return isGpuTypeId(id) ? GPU_SPECS[id].displayName : id;
}

/** A GPU type's list prices per GPU-hour, by cloud (null where it is not offered). */
export function gpuPrices(id: string): { securePrice: number | null; communityPrice: number | null } {
  if (!isGpuTypeId(id)) return { securePrice: null, communityPrice: null };
  return { securePrice: GPU_SPECS[id].secure, communityPrice: GPU_SPECS[id].community };
}

// ---- CPU ----------------------------------------------------------------------------------------

type CpuFlavorId = (typeof CPU_FLAVOR_IDS)[number];

interface CpuSpec {
  groupName: string;
  displayName: string;
  ramMultiplier: number;
  /** USD per vCPU-hour. */
  usdPerVcpuHour: number;
}

const CPU_SPECS: Record<CpuFlavorId, CpuSpec> = {
  cpu3c: {
    groupName: "Compute-Optimized",
    displayName: "3rd gen, compute",
    ramMultiplier: 2,
    usdPerVcpuHour: 0.03,
  },
  cpu3g: {
    groupName: "General Purpose",
    displayName: "3rd gen, general",
    ramMultiplier: 4,
    usdPerVcpuHour: 0.04,
  },
  cpu5c: {
    groupName: "Compute-Optimized",
    displayName: "5th gen, compute",
    ramMultiplier: 2,
    usdPerVcpuHour: 0.035,
  },
  cpu5g: {
    groupName: "General Purpose",
    displayName: "5th gen, general",
    ramMultiplier: 4,
    usdPerVcpuHour: 0.045,
  },
};
/** vCPU counts an instance may have. */
export const VCPU_COUNTS = [2, 4, 8, 16, 32] as const;
const DISK_LIMIT_PER_VCPU = 10;
/** What deployCpuPod rents when given no instanceId. */
export const DEFAULT_CPU_INSTANCE = "cpu3c-2-4";

function isCpuFlavorId(id: string): id is CpuFlavorId {
  return Object.hasOwn(CPU_SPECS, id);
}

/** "3rd gen, compute" of cpu3c. */
export function cpuDisplayName(id: string): string {
  return isCpuFlavorId(id) ? CPU_SPECS[id].displayName : id;
}

export function cpuFlavors(filter: { id?: string | null | undefined } = {}): CpuFlavor[] {
  return CPU_FLAVOR_IDS.filter((id) => !filter.id || filter.id === id).map((id) => {
    const s = CPU_SPECS[id];
    return {
      id,
      groupId: id,
      groupName: s.groupName,
      displayName: s.displayName,
      minVcpu: VCPU_COUNTS[0],
      maxVcpu: VCPU_COUNTS[VCPU_COUNTS.length - 1],
      vcpuBurstable: false,
      ramMultiplier: s.ramMultiplier,
      diskLimitPerVcpu: DISK_LIMIT_PER_VCPU,
    };
  });
}

export interface CpuInstance {
  instanceId: string;
  cpuFlavorId: CpuFlavorId;
  vcpuCount: number;
  memoryInGb: number;
  usdPerHour: number;
  /** Largest container disk the instance allows, GB. */
  diskLimitGb: number;
}

export function cpuInstance(flavorId: string, vcpuCount: number, field = "cpuFlavorIds"): CpuInstance {
  if (!isCpuFlavorId(flavorId)) {
    throw invalid(field, `unknown CPU flavor "${flavorId}"; expected one of ${CPU_FLAVOR_IDS.join(", ")}`);
  }
  if (!(VCPU_COUNTS as readonly number[]).includes(vcpuCount)) {
    throw invalid(field, `a ${flavorId} instance has ${VCPU_COUNTS.join(", ")} vCPUs, not ${vcpuCount}`);
  }
  const s = CPU_SPECS[flavorId];
  const memoryInGb = vcpuCount * s.ramMultiplier;
  return {
    instanceId: `${flavorId}-${vcpuCount}-${memoryInGb}`,
    cpuFlavorId: flavorId,
    vcpuCount,
    memoryInGb,
    usdPerHour: Math.round(vcpuCount * s.usdPerVcpuHour * 1000) / 1000,
    diskLimitGb: vcpuCount * DISK_LIMIT_PER_VCPU,
  };
}

/** "cpu3c-2-4" -> the instance; refused unless flavor, vCPUs and memory agree. */
export function parseCpuInstance(instanceId: string, field = "instanceId"): CpuInstance {
  const match = /^([a-z0-9]+)-(\d+)-(\d+)$/.exec(instanceId);
  if (!match)
    throw invalid(field, `"${instanceId}" is not <flavor>-<vcpus>-<memoryGb>, e.g. ${DEFAULT_CPU_INSTANCE}`);
  const instance = cpuInstance(match[1] ?? "", Number(match[2]), field);
  if (instance.memoryInGb !== Number(match[3])) {
    throw invalid(
      field,
      `a ${instance.cpuFlavorId} instance with ${instance.vcpuCount} vCPUs has ${instance.memoryInGb} GB, not ${match[3]}`,
    );
  }
  return instance;
}

// ---- data centers -------------------------------------------------------------------------------

type DataCenterId = (typeof DATA_CENTER_IDS)[number];

const SITES: Record<string, { location: string; countryCode: string; region: DataCenter["region"] }> = {
  "EU-RO": { location: "Romania", countryCode: "RO", region: "EUROPE" },
  "CA-MTL": { location: "Canada (Montreal)", countryCode: "CA", region: "NORTH_AMERICA" },
  "EU-SE": { location: "Sweden", countryCode: "SE", region: "EUROPE" },
  "US-IL": { location: "United States (Illinois)", countryCode: "US", region: "NORTH_AMERICA" },
  "EUR-IS": { location: "Iceland", countryCode: "IS", region: "EUROPE" },
  "EU-CZ": { location: "Czech Republic", countryCode: "CZ", region: "EUROPE" },
  "US-TX": { location: "United States (Texas)", countryCode: "US", region: "NORTH_AMERICA" },
  "US-KS": { location: "United States (Kansas)", countryCode: "US", region: "NORTH_AMERICA" },
  "US-GA": { location: "United States (Georgia)", countryCode: "US", region: "NORTH_AMERICA" },
  "US-WA": { location: "United States (Washington)", countryCode: "US", region: "NORTH_AMERICA" },
  "EU-NL": { location: "Netherlands", countryCode: "NL", region: "EUROPE" },
  "US-CA": { location: "United States (California)", countryCode: "US", region: "NORTH_AMERICA" },
  "US-NC": { location: "United States (North Carolina)", countryCode: "US", region: "NORTH_AMERICA" },
  "OC-AU": { location: "Australia", countryCode: "AU", region: "OCEANIA" },
  "US-DE": { location: "United States (Delaware)", countryCode: "US", region: "NORTH_AMERICA" },
  "AP-JP": { location: "Japan", countryCode: "JP", region: "ASIA" },
  "EUR-NO": { location: "Norway", countryCode: "NO", region: "EUROPE" },
  "EU-FR": { location: "France", countryCode: "FR", region: "EUROPE" },
};

function siteOf(id: string) {
  return SITES[id.replace(/-\d+$/, "")] ?? { location: id, countryCode: "", region: "UNKNOWN" as const };
}

export function isDataCenterId(id: string): id is DataCenterId {
  return (DATA_CENTER_IDS as readonly string[]).includes(id);
}

export function countryOf(dataCenterId: string): string {
  return siteOf(dataCenterId).countryCode;
}

/** "United States (Texas)" of US-TX-3. */
export function locationOf(dataCenterId: string): string {
  return siteOf(dataCenterId).location;
}

/** DataCenter without gpuAvailability (resolved per its input). */
export type DataCenterView = Omit<DataCenter, "gpuAvailability"> & { id: DataCenterId };

export function dataCenters(): DataCenterView[] {
  return DATA_CENTER_IDS.map((id) => {
    const site = siteOf(id);
    return {
      id,
      name: id,
      location: site.location,
      listed: true,
      storageSupport: true,
      globalNetwork: false,
      region: site.region,
      compliance: site.region === "EUROPE" ? ["GDPR"] : [],
    };
  });
}

/** Every GPU type offered for the asked count and cloud is available in every data center. */
export function gpuAvailability(input: GqlGpuAvailabilityInput = {}): GpuAvailability[] {
  const cloud: CloudChoice = input.secureCloud === true ? "SECURE" : "ALL";
  return GPU_TYPE_IDS.map((id) => {
    const available = gpuOffer(id, input.gpuCount ?? 1, cloud) !== undefined;
    return {
      id,
      gpuTypeId: id,
      displayName: GPU_SPECS[id].displayName,
      gpuTypeDisplayName: GPU_SPECS[id].displayName,
      available,
      stockStatus: available ? "High" : null,
    };
  });
}

// ---- GPU types ----------------------------------------------------------------------------------

/** gpuTypes(input): all, one id or several; unknown ids are simply absent (an empty list). */
export function gpuTypes(
  filter: { id?: string | null | undefined; ids?: readonly string[] | null | undefined } = {},
) {
  return GPU_TYPE_IDS.filter(
    (id) => (!filter.id || filter.id === id) && (!filter.ids || filter.ids.includes(id)),
  ).map(gpuTypeView);
}

/** GpuType.lowestPrice(input): prices per GPU-hour for gpuCount GPUs; null prices when not offered. */
export function lowestPrice(id: GpuTypeId, input: GqlGpuLowestPriceInput): LowestPrice {
  const s = GPU_SPECS[id];
  const cloud: CloudChoice =
    input.secureCloud === true ? "SECURE" : input.secureCloud === false ? "COMMUNITY" : "ALL";
  const offer = gpuOffer(id, input.gpuCount, cloud);
  const counts = Array.from({ length: s.maxGpuCount }, (_, i) => i + 1);
  return {
    gpuName: s.displayName,
    gpuTypeId: id,
    minimumBidPrice: offer ? spot(offer.usdPerGpuHour) : null,
    uninterruptablePrice: offer ? offer.usdPerGpuHour : null,
    minMemory: offer ? 8 * input.gpuCount : null,
    minVcpu: offer ? 2 * input.gpuCount : null,
    rentedCount: 0,
    totalCount: s.maxGpuCount,
    stockStatus: offer ? "High" : null,
    countryCode: input.countryCode ?? null,
    supportPublicIp: true,
    maxGpuCount: s.maxGpuCount,
    availableGpuCounts: offer ? counts : [],
  };
}

// ---- public templates ---------------------------------------------------------------------------

/**
 * A public template pods may name (the Python library names runpod-ubuntu for CPU pods): an official
 * Runpod template, which GET /templates lists with includeRunpodTemplates.
 */
export interface PublicTemplate {
  id: string;
  name: string;
  category: "NVIDIA" | "AMD" | "CPU";
  imageName: string;
  ports: string[];
  containerDiskInGb: number;
  volumeInGb: number;
  volumeMountPath: string;
  env: Record<string, string>;
  dockerStartCmd: string[];
  dockerArgs: null;
  containerRegistryAuthId: null;
}

const PUBLIC_TEMPLATES: Record<string, PublicTemplate> = {
  "runpod-ubuntu": {
    id: "runpod-ubuntu",
    name: "Runpod Ubuntu",
    category: "CPU",
    imageName: "runpod/base:0.6.2-ubuntu2204",
    ports: ["8888/http", "22/tcp"],
    containerDiskInGb: 20,
    volumeInGb: 0,
    volumeMountPath: "/workspace",
    env: {},
    dockerStartCmd: [],
    dockerArgs: null,
    containerRegistryAuthId: null,
  },
};

export function publicTemplate(id: string): PublicTemplate | undefined {
  return Object.hasOwn(PUBLIC_TEMPLATES, id) ? PUBLIC_TEMPLATES[id] : undefined;
}

/** Every official template this service knows. */
export function publicTemplates(): PublicTemplate[] {
  return Object.values(PUBLIC_TEMPLATES);
}
