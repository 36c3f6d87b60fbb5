import { z } from "zod";
import { PodStatus } from "./common";

/**
 * A pod as REST v1 returns it (GET /pods, GET /pods/{id}, endpoint `workers`). Serverless workers are
 * pods with an `endpointId`. Only the fields this service fills are listed; readers keep unknown ones.
 */
export const Pod = z.object({
  id: z.string(),
  name: z.string(),
  desiredStatus: PodStatus,
  /** Set when the pod is a serverless worker. */
  endpointId: z.string().nullish(),
  /** Legacy synonym of endpointId. */
  aiApiId: z.string().nullish(),
  consumerUserId: z.string().optional(),
  image: z.string(),
  templateId: z.string().nullish(),
  gpu: z
    .object({ id: z.string().optional(), count: z.number().int(), displayName: z.string().optional() })
    .nullish(),
  costPerHr: z.number().optional(),
  adjustedCostPerHr: z.number().optional(),
  env: z.record(z.string(), z.string()).optional(),
  ports: z.array(z.string()).optional(),
  interruptible: z.boolean().optional(),
  locked: z.boolean().optional(),
  /** ISO-8601; null when never started. */
  lastStartedAt: z.string().nullish(),
  lastStatusChange: z.string().optional(),
  /** For workers: the endpoint version the worker runs. */
  slsVersion: z.number().int().optional(),
});
export type Pod = z.infer<typeof Pod>;
export const PodList = z.array(Pod);

const BoolQuery = z.stringbool().optional();

/** GET /pods query (filters of the real service; unknown parameters are refused). */
export const PodListQuery = z.strictObject({
  computeType: z.enum(["GPU", "CPU"]).optional(),
  desiredStatus: PodStatus.optional(),
  endpointId: z.string().max(191).optional(),
  id: z.string().optional(),
  imageName: z.string().optional(),
  name: z.string().max(191).optional(),
  templateId: z.string().optional(),
  networkVolumeId: z.string().optional(),
  includeMachine: BoolQuery,
  includeNetworkVolume: BoolQuery,
  includeSavingsPlans: BoolQuery,
  includeTemplate: BoolQuery,
  /** Serverless workers are listed only when true (as the real service). */
  includeWorkers: BoolQuery,
});
export type PodListQuery = z.infer<typeof PodListQuery>;

/** GET /pods/{podId} query. */
export const PodGetQuery = z.strictObject({
  includeMachine: BoolQuery,
  includeNetworkVolume: BoolQuery,
  includeSavingsPlans: BoolQuery,
  includeTemplate: BoolQuery,
  includeWorkers: BoolQuery,
});
export type PodGetQuery = z.infer<typeof PodGetQuery>;
