import { z } from "zod";

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
export const GpuPoolId = z.enum(GPU_POOL_IDS);

/** GraphQL location codes (locations). Empty or null means any region. */
export const LOCATIONS = ["CZ", "FR", "GB", "NO", "RO", "US"] as const;
export const Location = z.enum(LOCATIONS);

export const SCALER_TYPES = ["QUEUE_DELAY", "REQUEST_COUNT"] as const;
export const ScalerType = z.enum(SCALER_TYPES);

/** GraphQL enum FlashBootType; sent as an enum literal. */
export const FLASHBOOT_TYPES = ["OFF", "FLASHBOOT", "PRIORITY_FLASHBOOT"] as const;
export const FlashBootType = z.enum(FLASHBOOT_TYPES);

export const COMPUTE_TYPES = ["GPU", "CPU"] as const;
export const ComputeType = z.enum(COMPUTE_TYPES);

/** Endpoint type: QB = queue-based, LB = load balancing. */
export const ENDPOINT_TYPES = ["QB", "LB"] as const;
export const EndpointType = z.enum(ENDPOINT_TYPES);

export const TEMPLATE_CATEGORIES = ["NVIDIA", "AMD", "CPU"] as const;
export const TemplateCategory = z.enum(TEMPLATE_CATEGORIES);

export const CUDA_VERSIONS = [
  "13.0",
  "12.9",
  "12.8",
  "12.7",
  "12.6",
  "12.5",
  "12.4",
  "12.3",
  "12.2",
  "12.1",
  "12.0",
  "11.8",
] as const;
export const CudaVersion = z.enum(CUDA_VERSIONS);

export const CPU_FLAVOR_IDS = ["cpu3c", "cpu3g", "cpu5c", "cpu5g"] as const;
export const CpuFlavorId = z.enum(CPU_FLAVOR_IDS);

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
export const DataCenterId = z.enum(DATA_CENTER_IDS);

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
export const GpuTypeId = z.enum(GPU_TYPE_IDS);

/** Values of a pod's (worker's) desiredStatus. */
export const POD_STATUSES = ["RUNNING", "EXITED", "TERMINATED"] as const;
export const PodStatus = z.enum(POD_STATUSES);
/** GraphQL's PodStatus enum: the values this service answers, and the others the real schema has. */
export const GQL_POD_STATUSES = [
  "CREATED",
  "RUNNING",
  "RESTARTING",
  "EXITED",
  "PAUSED",
  "DEAD",
  "TERMINATED",
] as const;
export const GqlPodStatus = z.enum(GQL_POD_STATUSES);

/**
 * gpuIds: a comma list of pool ids with optional exclusions of GPU type names, for example
 * "AMPERE_48,-NVIDIA RTX A6000". At least one pool id is required.
 */
export const GpuIdsList = z.string().superRefine((value, ctx) => {
  const items = value.split(",").map((s) => s.trim());
  let pools = 0;
  for (const item of items) {
    if (item.startsWith("-")) {
      const name = item.slice(1).trim();
      if (!(GPU_TYPE_IDS as readonly string[]).includes(name)) {
        ctx.addIssue({ code: "custom", message: `unknown GPU type "${name}" in exclusion "${item}"` });
      }
    } else if ((GPU_POOL_IDS as readonly string[]).includes(item)) {
      pools++;
    } else {
      ctx.addIssue({
        code: "custom",
        message: `unknown GPU pool id "${item}"; expected one of ${GPU_POOL_IDS.join(", ")}, or "-<GPU type>" to exclude one`,
      });
    }
  }
  if (pools === 0) ctx.addIssue({ code: "custom", message: "needs at least one GPU pool id" });
});

/** locations: empty/null for any region, or a comma list of location codes. */
export const LocationsList = z
  .string()
  .nullable()
  .superRefine((value, ctx) => {
    if (value === null || value.trim() === "") return;
    for (const item of value.split(",").map((s) => s.trim())) {
      if (!(LOCATIONS as readonly string[]).includes(item)) {
        ctx.addIssue({
          code: "custom",
          message: `unknown location "${item}"; expected one of ${LOCATIONS.join(", ")}`,
        });
      }
    }
  });

/**
 * An optional reference id in a GraphQL input (networkVolumeId, containerRegistryAuthId, templateId of
 * a pod, ...). The empty string means "not given", as on the real service, whose own Python library
 * always sends `""` for the references a caller left out.
 */
export const OptionalRef = z.string().nullish();

/** The reading of an OptionalRef: `""` and null are "not given". */
export const givenRef = (value: string | null | undefined): string | undefined => value || undefined;

/** The REST error body. */
export const ErrorBody = z.object({ message: z.string() });
export type ErrorBody = z.infer<typeof ErrorBody>;

/** Every field of a shape made optional, in the same order (the fields of a partial update). */
export function optionalFields<T extends z.ZodRawShape>(shape: T) {
  return z.object(shape).partial().shape;
}

/** Formats a zod error as "field: problem; field: problem", naming every field that failed. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map(String).join(".");
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join("; ");
}
