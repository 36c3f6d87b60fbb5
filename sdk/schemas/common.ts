import { z } from "zod";
import { CPU_FLAVOR_IDS, DATA_CENTER_IDS, GPU_POOL_IDS, GPU_TYPE_IDS } from "./defaults";
import { gpuTypesOfPools } from "./gpu-pools";
import { DESCRIBED_ISSUES_MAX } from "./issues";

export { GPU_IDS_NOT_POOLS, GPU_POOLS, gpuTypesOfPools, poolsOfGpuTypes } from "./gpu-pools";
export { describeIssues } from "./issues";
export { CPU_FLAVOR_IDS, DATA_CENTER_IDS, GPU_POOL_IDS, GPU_TYPE_IDS };

/**
 * Refuses the items of a comma list that `refused` picks out: the first few each as an issue worded
 * by `message` (an item given again is not named again: "XX,XX" is one problem), then how many more,
 * so a list of 400,000 bad items costs no 400,000 issues (nor messages, nor a reply naming each).
 */
export function refuseItems(
  items: readonly string[],
  refused: (item: string) => boolean,
  message: (item: string) => string,
  ctx: z.RefinementCtx,
): void {
  const named = new Set<string>();
  let more = 0;
  for (const item of items) {
    if (named.has(item) || !refused(item)) continue;
    if (named.size < DESCRIBED_ISSUES_MAX - 1) {
      named.add(item);
      ctx.addIssue({ code: "custom", message: message(item) });
    } else more++;
  }
  if (more > 0) ctx.addIssue({ code: "custom", message: `${more} more items refused` });
}

export const GpuPoolId = z.enum(GPU_POOL_IDS);

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
/** A UTF-16 surrogate without its pair: no character, and no UTF-8 encoder keeps it (it becomes U+FFFD). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether a name is text a person can read and every client can carry: no control character (NUL, a
 * tab, a line break, ...) and no unpaired surrogate, which a UTF-8 client (Pulumi's gRPC, a Go or
 * Python client) receives as U+FFFD, so it held another name than the one stored.
 */
export function isPrintableName(name: string): boolean {
  return !CONTROL_CHARACTER.test(name) && !LONE_SURROGATE.test(name);
}
export const PRINTABLE_NAME =
  "must be printable text: no control character (such as NUL, a tab or a line break) and no unpaired UTF-16 surrogate";

/**
 * A name as every resource kind stores it and every lookup by name compares it: without surrounding
 * white space, in Unicode's composed form (NFC). `" web "` is `"web"`, and "café" typed with a
 * combining accent is the "café" typed with "é" (a user reads the spellings as one).
 */
export const canonicalName = (name: string): string => name.trim().normalize("NFC");

/** Whether two names are one name (the same in canonicalName's spelling). */
export const sameName = (a: string, b: string): boolean => canonicalName(a) === canonicalName(b);

/** Name text in its canonical spelling (canonicalName), printable, at most 191 characters. */
const NameText = z
  .string()
  .trim()
  .normalize("NFC")
  .max(191)
  .refine(isPrintableName, { error: PRINTABLE_NAME });

/**
 * A resource's name (templates, endpoints, network volumes, registry auths, pods), the same rule on
 * REST, GraphQL and the provider: 1-191 characters of printable text, stored in its canonical spelling
 * (canonicalName). Names stored otherwise before this rule keep their spelling until saved again.
 */
export const ResourceName = NameText.min(1, { error: "must not be empty (nor only white space)" });

/** A name where "" means "not given" (GraphQL pod deploys, the pod list's filter): ResourceName's spelling. */
export const OptionalResourceName = NameText;

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

export const CpuFlavorId = z.enum(CPU_FLAVOR_IDS);

/**
 * A CPU instance, "<flavor>-<vCPUs>-<memory GB>" (e.g. "cpu3c-2-4"). The shape and the flavor are
 * checked here; whether the memory fits the flavor and vCPUs is the service's rule.
 */
export const CpuInstanceId = z
  .string()
  .regex(
    new RegExp(`^(${CPU_FLAVOR_IDS.join("|")})-[1-9][0-9]{0,2}-[1-9][0-9]{0,3}$`),
    `must be <flavor>-<vCPUs>-<memory GB> with a flavor of ${CPU_FLAVOR_IDS.join(", ")}, e.g. cpu3c-2-4`,
  );

export const DataCenterId = z.enum(DATA_CENTER_IDS);

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
 * "AMPERE_48,-NVIDIA RTX A6000". At least one pool id is required, and the exclusions must leave at
 * least one GPU type. "" is what an endpoint reads whose REST gpuTypeIds no pools can describe
 * (GPU_IDS_NOT_POOLS): refused, so that saving it back cannot change the endpoint's GPUs.
 */
export const GpuIdsList = z.string().superRefine((value, ctx) => {
  if (value.trim() === "") {
    ctx.addIssue({
      code: "custom",
      message: `is empty: name at least one GPU pool (${GPU_POOL_IDS.join(", ")}). An endpoint reads "" when its GPU types (REST gpuTypeIds) are not a set of pools; change those through REST gpuTypeIds`,
    });
    return;
  }
  const items = value.split(",").map((s) => s.trim());
  let pools = 0;
  let known = true;
  refuseItems(
    items,
    (item) => {
      const unknown = item.startsWith("-")
        ? !(GPU_TYPE_IDS as readonly string[]).includes(item.slice(1).trim())
        : !(GPU_POOL_IDS as readonly string[]).includes(item);
      if (unknown) known = false;
      else if (!item.startsWith("-")) pools++;
      return unknown;
    },
    (item) =>
      item.startsWith("-")
        ? `unknown GPU type "${item.slice(1).trim()}" in exclusion "${item}"`
        : `unknown GPU pool id "${item}"; expected one of ${GPU_POOL_IDS.join(", ")}, or "-<GPU type>" to exclude one`,
    ctx,
  );
  // Unknown items are named above: "needs a pool" only when every item is known (all exclusions).
  if (!known) return;
  if (pools === 0) ctx.addIssue({ code: "custom", message: "needs at least one GPU pool id" });
  else if (gpuTypesOfPools(value).length === 0) {
    ctx.addIssue({
      code: "custom",
      message: `excludes every GPU type of its pools ("${value}"); a GPU endpoint needs at least one`,
    });
  }
});

/**
 * A whole number in a query string, written in digits (`?ttl=60000`), within [min, max]. Not
 * z.coerce.number(): it reads as Number() does, so `ttl=0x2710`, `ttl=1e5`, `ttl=%2010000` and
 * `ttl=10000.0` were taken and an empty `ttl=` was read as 0 ("Too small"). A number (a caller's own
 * object, before it is written into a URL) is taken as it is.
 */
export const queryInt = (min: number, max: number) =>
  z
    .union([z.number(), z.string()])
    .transform((value, ctx) => {
      if (typeof value === "number" || /^\d{1,16}$/.test(value)) return Number(value);
      const shown = value.length > 20 ? `${value.slice(0, 20)}...` : value;
      ctx.addIssue({
        code: "custom",
        message: `expected a whole number written in digits (${min} to ${max}), received ${JSON.stringify(shown)}`,
      });
      return z.NEVER;
    })
    .pipe(z.number().int().min(min).max(max));

/** A query parameter that may repeat: it arrives as a string, or an array of strings when repeated. */
export const many = <T extends z.ZodType>(item: T) => z.union([item, z.array(item)]);

/** A repeatable query parameter's values as a list (undefined when absent). */
export const manyList = <T>(value: T | T[] | undefined): T[] | undefined =>
  value === undefined ? undefined : Array.isArray(value) ? value : [value];

/** locations: empty/null for any region, or a comma list of location codes. */
export const LocationsList = z
  .string()
  .nullable()
  .superRefine((value, ctx) => {
    if (value === null || value.trim() === "") return;
    refuseItems(
      value.split(",").map((s) => s.trim()),
      (item) => !(LOCATIONS as readonly string[]).includes(item),
      (item) => `unknown location "${item}"; expected one of ${LOCATIONS.join(", ")}`,
      ctx,
    );
  });

/**
 * An optional reference id in a GraphQL input (networkVolumeId, containerRegistryAuthId, templateId of
 * a pod, ...). The empty string means "not given", as on the real service, whose own Python library
 * always sends `""` for the references a caller left out.
 */
export const OptionalRef = z.string().nullish();

/**
 * A reference id in a REST body (networkVolumeId, containerRegistryAuthId): `""` names nothing, and is
 * refused saying what to send instead (GraphQL reads `""` as not given; REST updates take null).
 */
export const restRef = (what: string) =>
  z.string().min(1, { error: `is empty: give ${what} id, or leave it out (in an update, null removes it)` });

/** The reading of an OptionalRef: `""` and null are "not given". */
export const givenRef = (value: string | null | undefined): string | undefined => value || undefined;

/** The REST error body. */
export const ErrorBody = z.object({ message: z.string() });
export type ErrorBody = z.infer<typeof ErrorBody>;

/** Every field of a shape made optional, in the same order (the fields of a partial update). */
export function optionalFields<T extends z.ZodRawShape>(shape: T) {
  return z.object(shape).partial().shape;
}
