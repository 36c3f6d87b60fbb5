import { GPU_POOLS } from "../../../sdk/schemas/gpu-pools";
import type { Clock } from "../../clock";
import { invalid } from "../../errors";
import type { WorkerPod, WorkerRegistry } from "../../planes";
import type { ManagementStore } from "../store/store";
import type { EndpointRecord } from "./records";

/*
 * The billing model of this local service, simple and honest:
 * - Compute: a worker (pod) is billed while the job plane reports it RUNNING, from its last start
 *   (or creation) until now, at a per-GPU hourly price of its endpoint's first GPU type times its
 *   GPU count. Stopped workers are not billed: the registry keeps no history of their past runs.
 * - Rented pods (/billing/pods only): every running period (kept after the pod is stopped or
 *   terminated) at the pod's hourly price then (costPerHr); grouped by gpuTypeId, a CPU pod counts
 *   under its CPU flavor.
 * - Storage: each network volume is billed for every size it had (kept in a usage history that
 *   outlives the volume) at $0.07 per GB per 30 days, prorated to the millisecond.
 * Records are grouped per time bucket (UTC) and per the asked grouping; empty buckets are omitted.
 */

export type BucketSize = "hour" | "day" | "week" | "month" | "year";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const MAX_BUCKETS = 10_000;
const DEFAULT_RANGE_MS = 30 * DAY;
const VOLUME_USD_PER_GB_MS = 0.07 / (30 * DAY);
const CPU_USD_PER_HOUR = 0.36;
const OTHER_GPU_USD_PER_HOUR = 2.72;
/** Flex serverless prices per GPU-hour by pool. */
const POOL_USD_PER_HOUR: Record<keyof typeof GPU_POOLS, number> = {
  AMPERE_16: 0.58,
  AMPERE_24: 0.68,
  ADA_24: 1.12,
  AMPERE_48: 1.22,
  ADA_48_PRO: 1.91,
  AMPERE_80: 2.72,
  ADA_80_PRO: 4.18,
};

export interface BillingRange {
  bucketSize?: BucketSize | undefined;
  /** ISO-8601 */
  startTime?: string | undefined;
  endTime?: string | undefined;
}

export interface ComputeBillingQuery extends BillingRange {
  /** Also bill rented pods (GET /billing/pods). */
  includeRentedPods?: boolean | undefined;
  grouping?: "endpointId" | "podId" | "gpuTypeId" | undefined;
  endpointId?: string | undefined;
  podId?: string | undefined;
  templateId?: string | undefined;
  imageName?: string | undefined;
  gpuTypeIds?: string[] | undefined;
  dataCenterIds?: string[] | undefined;
}

export interface ComputeBillingRecord {
  amount: number;
  timeBilledMs: number;
  time: string;
  endpointId?: string;
  podId?: string;
  gpuTypeId?: string;
}

export interface StorageBillingRecord {
  amount: number;
  diskSpaceBilledGb: number;
  highPerformanceStorageAmount: number;
  highPerformanceStorageDiskSpaceBilledGb: number;
  time: string;
}

function bucketStart(ms: number, size: BucketSize): number {
  const d = new Date(ms);
  switch (size) {
    case "hour":
      return ms - (ms % HOUR);
    case "day":
      return ms - (ms % DAY);
    case "week": {
      const day = ms - (ms % DAY);
      return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY; // ISO weeks start on Monday
    }
    case "month":
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    case "year":
      return Date.UTC(d.getUTCFullYear(), 0, 1);
  }
}

function nextBucket(start: number, size: BucketSize): number {
  const d = new Date(start);
  switch (size) {
    case "hour":
      return start + HOUR;
    case "day":
      return start + DAY;
    case "week":
      return start + 7 * DAY;
    case "month":
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    case "year":
      return Date.UTC(d.getUTCFullYear() + 1, 0, 1);
  }
}

interface Bucket {
  /** Start of the whole bucket: the record's `time`. */
  label: number;
  /** The part of the bucket inside the asked range. */
  from: number;
  to: number;
}

function bucketsOf(range: BillingRange, now: number): Bucket[] {
  const size = range.bucketSize ?? "day";
  const end = range.endTime !== undefined ? Date.parse(range.endTime) : now;
  const start = range.startTime !== undefined ? Date.parse(range.startTime) : end - DEFAULT_RANGE_MS;
  if (start > end) throw invalid("startTime", "must not be after endTime");
  const buckets: Bucket[] = [];
  for (let from = bucketStart(start, size); from < end; from = nextBucket(from, size)) {
    if (buckets.length >= MAX_BUCKETS) {
      throw invalid(
        "startTime",
        `the range holds more than ${MAX_BUCKETS} ${size} buckets; use a larger bucketSize`,
      );
    }
    buckets.push({ label: from, from: Math.max(from, start), to: Math.min(nextBucket(from, size), end) });
  }
  return buckets;
}

const overlap = (b: Bucket, from: number, to: number) =>
  Math.max(0, Math.min(b.to, to) - Math.max(b.from, from));
const round = (usd: number) => Math.round(usd * 1e6) / 1e6;

function gpuHourPrice(endpoint: EndpointRecord | undefined): number {
  if (!endpoint) return OTHER_GPU_USD_PER_HOUR;
  if (endpoint.computeType === "CPU") return CPU_USD_PER_HOUR;
  const first = endpoint.gpuTypeIds[0];
  for (const [pool, types] of Object.entries(GPU_POOLS)) {
    if (first && types.includes(first)) return POOL_USD_PER_HOUR[pool as keyof typeof GPU_POOLS];
  }
  return OTHER_GPU_USD_PER_HOUR;
}

function selected(q: ComputeBillingQuery, worker: WorkerPod, endpoint: EndpointRecord | undefined): boolean {
  if (q.endpointId !== undefined && worker.endpointId !== q.endpointId) return false;
  if (q.podId !== undefined && worker.id !== q.podId) return false;
  if (q.templateId !== undefined && worker.templateId !== q.templateId) return false;
  if (q.imageName !== undefined && worker.imageName !== q.imageName) return false;
  const gpu = endpoint?.gpuTypeIds[0];
  if (q.gpuTypeIds?.length && !(gpu && q.gpuTypeIds.includes(gpu))) return false;
  if (q.dataCenterIds?.length && !endpoint?.dataCenterIds.some((dc) => q.dataCenterIds?.includes(dc)))
    return false;
  return true;
}

/** Compute and storage billing of an account, from the job plane's workers and the volumes' history. */
export class BillingService {
  readonly #store: ManagementStore;
  readonly #clock: Clock;
  readonly #workers: WorkerRegistry;

  constructor(deps: { store: ManagementStore; clock: Clock; workers: WorkerRegistry }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#workers = deps.workers;
  }

  /** /billing/endpoints and /billing/pods: worker time per bucket and group. */
  compute(accountId: string, q: ComputeBillingQuery): ComputeBillingRecord[] {
    const now = this.#clock.now();
    const buckets = bucketsOf(q, now);
    const grouping = q.grouping ?? "endpointId";
    const totals = new Map<string, ComputeBillingRecord>();
    for (const worker of this.#workers.list(accountId)) {
      if (worker.desiredStatus !== "RUNNING") continue;
      const endpoint = this.#store.endpoints.get(accountId, worker.endpointId);
      if (!selected(q, worker, endpoint)) continue;
      const runningSince = worker.lastStartedAt ?? worker.createdAt;
      const usdPerMs = (gpuHourPrice(endpoint) * Math.max(1, worker.gpuCount)) / HOUR;
      const group =
        grouping === "podId"
          ? { podId: worker.id }
          : grouping === "gpuTypeId"
            ? { gpuTypeId: endpoint?.gpuTypeIds[0] ?? "unknown" }
            : { endpointId: worker.endpointId };
      addToBuckets(totals, buckets, group, runningSince, now, usdPerMs);
    }
    if (q.includeRentedPods) this.#rentedPods(accountId, q, buckets, now, grouping, totals);
    return [...totals.values()].sort((a, b) => a.time.localeCompare(b.time));
  }

  #rentedPods(
    accountId: string,
    q: ComputeBillingQuery,
    buckets: Bucket[],
    now: number,
    grouping: NonNullable<ComputeBillingQuery["grouping"]>,
    totals: Map<string, ComputeBillingRecord>,
  ): void {
    const filtered =
      q.endpointId !== undefined ||
      q.templateId !== undefined ||
      q.imageName !== undefined ||
      q.dataCenterIds?.length;
    if (filtered) return;
    for (const row of this.#store.podUsage(accountId)) {
      if (q.podId !== undefined && row.podId !== q.podId) continue;
      if (q.gpuTypeIds?.length && !(row.gpuTypeId && q.gpuTypeIds.includes(row.gpuTypeId))) continue;
      const group =
        grouping === "gpuTypeId" ? { gpuTypeId: row.gpuTypeId ?? "unknown" } : { podId: row.podId };
      const usdPerMs = row.usdPerHour / HOUR;
      addToBuckets(totals, buckets, group, row.fromMs, row.untilMs ?? now, usdPerMs);
    }
  }

  /** /billing/networkvolumes: GB x time of every volume size the account held, per bucket. */
  storage(accountId: string, range: BillingRange): StorageBillingRecord[] {
    const now = this.#clock.now();
    const usage = this.#store.volumeUsage(accountId);
    const records: StorageBillingRecord[] = [];
    for (const bucket of bucketsOf(range, now)) {
      let amount = 0;
      const gbByVolume = new Map<string, number>();
      for (const row of usage) {
        const ms = overlap(bucket, row.fromMs, row.untilMs ?? now);
        if (ms === 0) continue;
        amount += ms * row.sizeGb * VOLUME_USD_PER_GB_MS;
        gbByVolume.set(row.volumeId, Math.max(gbByVolume.get(row.volumeId) ?? 0, row.sizeGb));
      }
      if (gbByVolume.size === 0) continue;
      records.push({
        amount: round(amount),
        diskSpaceBilledGb: [...gbByVolume.values()].reduce((a, b) => a + b, 0),
        highPerformanceStorageAmount: 0,
        highPerformanceStorageDiskSpaceBilledGb: 0,
        time: new Date(bucket.label).toISOString(),
      });
    }
    return records;
  }
}

/** Adds a running period (fromMs..untilMs at usdPerMs) to each bucket it overlaps, per group. */
function addToBuckets(
  totals: Map<string, ComputeBillingRecord>,
  buckets: Bucket[],
  group: Pick<ComputeBillingRecord, "endpointId" | "podId" | "gpuTypeId">,
  fromMs: number,
  untilMs: number,
  usdPerMs: number,
): void {
  for (const bucket of buckets) {
    const ms = overlap(bucket, fromMs, untilMs);
    if (ms === 0) continue;
    const key = `${bucket.label}|${Object.values(group)[0]}`;
    const record = totals.get(key) ?? {
      amount: 0,
      timeBilledMs: 0,
      time: new Date(bucket.label).toISOString(),
      ...group,
    };
    record.timeBilledMs += ms;
    record.amount = round(record.amount + ms * usdPerMs);
    totals.set(key, record);
  }
}
