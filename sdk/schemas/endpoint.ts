import { z } from "zod";
import type * as api from "../public-types";
import {
  ComputeType,
  CpuFlavorId,
  CUDA_VERSIONS,
  CudaVersion,
  DataCenterId,
  EndpointType,
  FlashBootType,
  GpuIdsList,
  GpuTypeId,
  GqlPodStatus,
  LocationsList,
  OptionalRef,
  optionalFields,
  ResourceName,
  refuseItems,
  restRef,
  ScalerType,
} from "./common";
import { GPU_ENDPOINT_NEEDS_A_TYPE } from "./gpu-pools";
import { Pod } from "./pod";
import { GqlEnvList, splitCommaList, Template } from "./template";

export { ENDPOINT_DEFAULTS } from "./defaults";

const IdleTimeout = z.int().min(1).max(3600);
const ScalerValue = z.int().min(1);
const Workers = z.int().min(0);
const GpuCount = z.int().min(1).max(8);
/** Per-job limit: 5 s .. 7 days, as the job policy's executionTimeout. */
const ExecutionTimeoutMs = z
  .int()
  .min(5_000)
  .max(7 * 24 * 3600 * 1000);
const Name = ResourceName;

const restEndpointFields = {
  templateId: z.string().min(1),
  name: Name,
  gpuTypeIds: z.array(GpuTypeId),
  gpuCount: GpuCount,
  idleTimeout: IdleTimeout,
  scalerType: ScalerType,
  scalerValue: ScalerValue,
  workersMin: Workers,
  workersMax: Workers,
  dataCenterIds: z.array(DataCenterId).min(1),
  networkVolumeId: restRef("a network volume"),
  networkVolumeIds: z.array(z.string().min(1)),
  flashboot: z.boolean(),
  executionTimeoutMs: ExecutionTimeoutMs,
  allowedCudaVersions: z.array(CudaVersion),
  minCudaVersion: CudaVersion,
  cpuFlavorIds: z.array(CpuFlavorId),
  vcpuCount: z.int().min(1),
};

const optionalEndpointFields = optionalFields(restEndpointFields);
const { templateId: _templateId, name: optionalName, ...otherEndpointFields } = optionalEndpointFields;

/** POST /endpoints. Only templateId is required; see ENDPOINT_DEFAULTS for the rest. */
export const EndpointCreateInput = z
  .strictObject({
    templateId: restEndpointFields.templateId,
    name: optionalName,
    computeType: ComputeType.optional(),
    ...otherEndpointFields,
  })
  .superRefine((input, ctx) => {
    if (input.computeType !== "CPU" && input.gpuTypeIds?.length === 0) {
      ctx.addIssue({ code: "custom", path: ["gpuTypeIds"], message: GPU_ENDPOINT_NEEDS_A_TYPE });
    }
  });
export type EndpointCreateInput = api.EndpointCreateInput;

/**
 * PATCH /endpoints/{id} and POST .../update (same body). Partial: an absent field is unchanged, while
 * `0` and `false` are values. `networkVolumeId: null` detaches the volume. computeType is fixed.
 */
export const EndpointUpdateInput = z.strictObject({
  ...optionalEndpointFields,
  networkVolumeId: restEndpointFields.networkVolumeId.nullable().optional(),
  minCudaVersion: restEndpointFields.minCudaVersion.nullable().optional(),
  computeType: z.never({ error: "is not updatable; create a new endpoint instead" }).optional(),
});
export type EndpointUpdateInput = api.EndpointUpdateInput;

/** GET /endpoints and /endpoints/{id} query. */
export const EndpointGetQuery = z.strictObject({
  includeTemplate: z.stringbool().optional(),
  includeWorkers: z.stringbool().optional(),
});
export type EndpointGetQuery = z.infer<typeof EndpointGetQuery>;

/** The REST record (never carries GraphQL's gpuIds). */
export const Endpoint = z.object({
  id: z.string(),
  name: z.string(),
  userId: z.string(),
  templateId: z.string(),
  computeType: ComputeType,
  gpuTypeIds: z.array(z.string()),
  gpuCount: z.number().int(),
  idleTimeout: z.number().int(),
  scalerType: ScalerType,
  scalerValue: z.number().int(),
  workersMin: z.number().int(),
  workersMax: z.number().int(),
  dataCenterIds: z.array(z.string()),
  networkVolumeId: z.string().nullish(),
  networkVolumeIds: z.array(z.string()).optional(),
  // Not in the real service's record schema: optional so its replies parse.
  flashboot: z.boolean().optional(),
  executionTimeoutMs: z.number().int(),
  env: z.record(z.string(), z.string()),
  allowedCudaVersions: z.array(z.string()),
  minCudaVersion: z.string().nullish(),
  cpuFlavorIds: z.array(z.string()).optional(),
  vcpuCount: z.number().int().optional(),
  instanceIds: z.array(z.string()).optional(),
  /** Bumped when the template (its id or its content) or env changes. */
  version: z.number().int(),
  /** ISO-8601 */
  createdAt: z.string(),
  template: Template.optional(),
  workers: z.array(Pod).optional(),
});
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type Endpoint = api.Endpoint;
export const EndpointList = z.array(Endpoint);

/** allowedCudaVersions in GraphQL: a comma string such as "12.4,12.5". */
export const CudaVersionsList = z.string().superRefine((value, ctx) =>
  refuseItems(
    splitCommaList(value),
    (item) => !(CUDA_VERSIONS as readonly string[]).includes(item),
    (item) => `unknown CUDA version "${item}"; expected a comma list of ${CUDA_VERSIONS.join(", ")}`,
    ctx,
  ),
);

/** GraphQL NetworkVolumeIdsInput: one of an endpoint's volumes in several data centers. */
export const GqlNetworkVolumeIdsInput = z.strictObject({ networkVolumeId: z.string().min(1) });

/**
 * GraphQL EndpointInput of saveEndpoint. Without id: create. With id: FULL REPLACE, as the real
 * service: every omitted (or null) field is reset to ENDPOINT_DEFAULTS. computeType cannot change.
 */
export const GqlEndpointInput = z.strictObject({
  id: z.string().min(1).nullish(),
  name: Name,
  templateId: z.string().min(1),
  gpuIds: GpuIdsList,
  idleTimeout: IdleTimeout.nullish(),
  locations: LocationsList.optional(),
  flashBootType: FlashBootType.nullish(),
  scalerType: ScalerType.nullish(),
  scalerValue: ScalerValue.nullish(),
  workersMin: Workers.nullish(),
  workersMax: Workers.nullish(),
  workersStandby: Workers.nullish(),
  /** "" = not given. */
  networkVolumeId: OptionalRef,
  /** Deploy from a preconfigured repository release. */
  hubReleaseId: z.string().min(1).nullish(),
  /** A model repository URL to cache on workers. */
  modelName: z.string().min(1).nullish(),
  type: EndpointType.nullish(),
  gpuCount: GpuCount.nullish(),
  executionTimeoutMs: ExecutionTimeoutMs.nullish(),
  env: GqlEnvList.nullish(),
  allowedCudaVersions: CudaVersionsList.nullish(),
  /** CPU instance ids, e.g. "cpu3c-2-4". */
  instanceIds: z.array(z.string().min(1)).nullish(),
  computeType: ComputeType.nullish(),
  /** Volumes in several data centers (each id must exist; at most one per data center). */
  networkVolumeIds: z.array(GqlNetworkVolumeIdsInput).nullish(),
  minCudaVersion: CudaVersion.nullish(),
});
export type GqlEndpointInput = api.GqlEndpointInput;

/** GraphQL updateEndpointTemplate(input): points an endpoint at another template (a new release). */
export const GqlUpdateEndpointTemplateInput = z.strictObject({
  endpointId: z.string().min(1),
  templateId: z.string().min(1),
});
export type GqlUpdateEndpointTemplateInput = api.GqlUpdateEndpointTemplateInput;

/** GraphQL Endpoint, every field this service answers (select what you need). */
export const GqlEndpoint = z.object({
  id: z.string(),
  name: z.string(),
  userId: z.string(),
  templateId: z.string(),
  gpuIds: z.string(),
  /** This service's own field (the REST list, in priority order): absent from the real service's replies. */
  gpuTypeIds: z.array(z.string()).optional(),
  idleTimeout: z.number().int(),
  locations: z.string().nullish(),
  flashBootType: FlashBootType,
  scalerType: ScalerType,
  scalerValue: z.number().int(),
  workersMin: z.number().int(),
  workersMax: z.number().int(),
  workersStandby: z.number().int(),
  networkVolumeId: z.string().nullish(),
  hubReleaseId: z.string().nullish(),
  modelName: z.string().nullish(),
  type: EndpointType,
  computeType: ComputeType,
  gpuCount: z.number().int(),
  executionTimeoutMs: z.number().int(),
  env: z.array(z.object({ key: z.string(), value: z.string() })),
  allowedCudaVersions: z.string().nullish(),
  instanceIds: z.array(z.string()),
  version: z.number().int(),
  createdAt: z.string(),
  pods: z.array(z.object({ id: z.string(), desiredStatus: GqlPodStatus })),
  /** Not selected by the portable documents: absent from replies of services without them. */
  networkVolumeIds: z
    .array(z.object({ networkVolumeId: z.string().nullish(), dataCenterId: z.string().nullish() }))
    .optional(),
  minCudaVersion: z.string().nullish(),
});
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type GqlEndpoint = api.GqlEndpoint;

/** myself { serverlessDiscount }: null when the account has none (always, on this service). */
export const ServerlessDiscount = z
  .object({ discountFactor: z.number(), type: z.string(), expirationDate: z.string().nullish() })
  .nullable();
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type ServerlessDiscount = api.ServerlessDiscount;
