import { z } from "zod";
import type * as api from "../public-types";

/*
 * The service's catalogue as GraphQL answers it: GPU types (`gpuTypes`), CPU flavors (`cpuFlavors`) and
 * data centers (`dataCenters`). Field names, arguments and nullability follow the real service's schema;
 * every reply field may be null there, so readers accept null.
 */

/** gpuTypes(input): one id, several ids, or all (no input). */
export const GqlGpuTypeFilter = z.strictObject({
  id: z.string().nullish(),
  ids: z.array(z.string()).nullish(),
  cluster: z.boolean().nullish(),
});
export type GqlGpuTypeFilter = api.GqlGpuTypeFilter;

/** GpuType.lowestPrice(input): the cheapest offer for gpuCount GPUs of the type. */
export const GqlGpuLowestPriceInput = z.strictObject({
  gpuCount: z.int().min(1),
  countryCode: z.string().nullish(),
  dataCenterId: z.string().nullish(),
  includeAiApi: z.boolean().nullish(),
  minDisk: z.int().nullish(),
  minDownload: z.int().nullish(),
  minMemoryInGb: z.int().nullish(),
  minUpload: z.int().nullish(),
  minVcpuCount: z.int().nullish(),
  secureCloud: z.boolean().nullish(),
  supportPublicIp: z.boolean().nullish(),
  cudaVersion: z.string().nullish(),
  allowedCudaVersions: z.array(z.string().nullable()).nullish(),
  minCudaVersion: z.string().nullish(),
});
export type GqlGpuLowestPriceInput = api.GqlGpuLowestPriceInput;

export const LowestPrice = z.object({
  gpuName: z.string().nullish(),
  gpuTypeId: z.string().nullish(),
  /** USD per GPU-hour, interruptible (spot). */
  minimumBidPrice: z.number().nullish(),
  /** USD per GPU-hour, on demand. */
  uninterruptablePrice: z.number().nullish(),
  minMemory: z.number().int().nullish(),
  minVcpu: z.number().int().nullish(),
  rentedCount: z.number().int().nullish(),
  totalCount: z.number().int().nullish(),
  stockStatus: z.string().nullish(),
  countryCode: z.string().nullish(),
  supportPublicIp: z.boolean().nullish(),
  maxGpuCount: z.number().int().nullish(),
  availableGpuCounts: z.array(z.number().int().nullable()).nullish(),
});
export type LowestPrice = z.infer<typeof LowestPrice>;

/** GpuType: prices are USD per GPU-hour; null where the type is not offered that way. */
export const GpuType = z.object({
  id: z.string().nullish(),
  displayName: z.string().nullish(),
  manufacturer: z.string().nullish(),
  memoryInGb: z.number().int().nullish(),
  cudaCores: z.number().int().nullish(),
  secureCloud: z.boolean().nullish(),
  communityCloud: z.boolean().nullish(),
  securePrice: z.number().nullish(),
  communityPrice: z.number().nullish(),
  communitySpotPrice: z.number().nullish(),
  secureSpotPrice: z.number().nullish(),
  oneWeekPrice: z.number().nullish(),
  oneMonthPrice: z.number().nullish(),
  threeMonthPrice: z.number().nullish(),
  maxGpuCount: z.number().int().nullish(),
  maxGpuCountCommunityCloud: z.number().int().nullish(),
  maxGpuCountSecureCloud: z.number().int().nullish(),
  minPodGpuCount: z.number().int().nullish(),
  lowestPrice: LowestPrice.nullish(),
});
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type GpuType = api.GpuType;

/** cpuFlavors(input). */
export const GqlCpuFlavorInput = z.strictObject({
  id: z.string().nullish(),
  slsOnly: z.boolean().nullish(),
  isSls: z.boolean().nullish(),
});
export type GqlCpuFlavorInput = api.GqlCpuFlavorInput;

/** A CPU flavor; its instance ids are `<id>-<vcpu>-<vcpu x ramMultiplier>`, e.g. "cpu3c-2-4". */
export const CpuFlavor = z.object({
  id: z.string().nullish(),
  groupId: z.string().nullish(),
  groupName: z.string().nullish(),
  displayName: z.string().nullish(),
  minVcpu: z.number().nullish(),
  maxVcpu: z.number().int().nullish(),
  vcpuBurstable: z.boolean().nullish(),
  ramMultiplier: z.number().nullish(),
  diskLimitPerVcpu: z.number().int().nullish(),
});
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type CpuFlavor = api.CpuFlavor;

export const DATA_CENTER_REGIONS = [
  "NORTH_AMERICA",
  "ASIA",
  "EUROPE",
  "MIDDLE_EAST",
  "AFRICA",
  "SOUTH_AMERICA",
  "OCEANIA",
  "ANTARCTICA",
  "UNKNOWN",
] as const;
export const DataCenterRegion = z.enum(DATA_CENTER_REGIONS);

export const COMPLIANCES = [
  "GDPR",
  "ISO_IEC_27001",
  "ISO_14001",
  "PCI_DSS",
  "HITRUST",
  "SOC_1_TYPE_2",
  "SOC_2_TYPE_2",
  "SOC_3_TYPE_2",
  "ITAR",
  "FISMA_HIGH",
  "HIPAA",
] as const;
export const Compliance = z.enum(COMPLIANCES);

/** DataCenter.gpuAvailability(input). */
export const GqlGpuAvailabilityInput = z.strictObject({
  gpuCount: z.int().min(1).nullish(),
  minDisk: z.int().nullish(),
  minMemoryInGb: z.int().nullish(),
  minVcpuCount: z.int().nullish(),
  secureCloud: z.boolean().nullish(),
  allowedCudaVersions: z.array(z.string().nullable()).nullish(),
  minCudaVersion: z.string().nullish(),
  includeAiApi: z.boolean().nullish(),
});
export type GqlGpuAvailabilityInput = api.GqlGpuAvailabilityInput;

export const GpuAvailability = z.object({
  available: z.boolean().nullish(),
  stockStatus: z.string().nullish(),
  gpuTypeId: z.string().nullish(),
  gpuTypeDisplayName: z.string().nullish(),
  displayName: z.string().nullish(),
  id: z.string().nullish(),
});
export type GpuAvailability = z.infer<typeof GpuAvailability>;

export const DataCenter = z.object({
  id: z.string().nullish(),
  name: z.string().nullish(),
  location: z.string().nullish(),
  listed: z.boolean().nullish(),
  storageSupport: z.boolean().nullish(),
  globalNetwork: z.boolean().nullish(),
  region: DataCenterRegion.nullish(),
  compliance: z.array(Compliance.nullable()).nullish(),
  gpuAvailability: z.array(GpuAvailability.nullable()).nullish(),
});
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type DataCenter = api.DataCenter;
