import { z } from "zod";
import type * as api from "../public-types";
import { DataCenterId, GpuTypeId, many } from "./common";

export const BUCKET_SIZES = ["hour", "day", "week", "month", "year"] as const;
export const BucketSize = z.enum(BUCKET_SIZES);

const Time = z.iso.datetime({ offset: true });

/** The buckets and time window every billing query takes. */
const billingWindow = {
  bucketSize: BucketSize.optional(),
  startTime: Time.optional(),
  endTime: Time.optional(),
};

/** GET /billing/pods query. */
export const PodBillingQuery = z.strictObject({
  ...billingWindow,
  gpuTypeId: GpuTypeId.optional(),
  grouping: z.enum(["podId", "gpuTypeId"]).optional(),
  podId: z.string().optional(),
});
export type PodBillingQuery = api.PodBillingQuery;

/** GET /billing/endpoints query. */
export const EndpointBillingQuery = z.strictObject({
  ...billingWindow,
  dataCenterId: many(DataCenterId).optional(),
  endpointId: z.string().optional(),
  gpuTypeId: many(GpuTypeId).optional(),
  grouping: z.enum(["endpointId", "podId", "gpuTypeId"]).optional(),
  imageName: z.string().optional(),
  templateId: z.string().optional(),
});
export type EndpointBillingQuery = api.EndpointBillingQuery;

/** GET /billing/networkvolumes query. */
export const NetworkVolumeBillingQuery = z.strictObject(billingWindow);
export type NetworkVolumeBillingQuery = api.NetworkVolumeBillingQuery;

/** A record of /billing/pods and /billing/endpoints: one per bucket and group. */
export const BillingRecord = z.object({
  /** USD */
  amount: z.number(),
  timeBilledMs: z.number().int().optional(),
  diskSpaceBilledGb: z.number().int().optional(),
  /** Start of the bucket, ISO-8601. */
  time: z.string(),
  endpointId: z.string().optional(),
  podId: z.string().optional(),
  gpuTypeId: z.string().optional(),
});
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type BillingRecord = api.BillingRecord;
export const BillingRecords = z.array(BillingRecord);

/** A record of /billing/networkvolumes. */
export const NetworkVolumeBillingRecord = z.object({
  amount: z.number(),
  diskSpaceBilledGb: z.number().int(),
  highPerformanceStorageAmount: z.number(),
  highPerformanceStorageDiskSpaceBilledGb: z.number().int(),
  time: z.string(),
});
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type NetworkVolumeBillingRecord = api.NetworkVolumeBillingRecord;
export const NetworkVolumeBillingRecords = z.array(NetworkVolumeBillingRecord);
