import { GPU_POOLS } from "../../../sdk/schemas/gpu-pools";
import type { Clock } from "../../clock";
import { invalid } from "../../errors";
import type { WorkerPod, WorkerRegistry, WorkerUsageLog } from "../../planes";
import type { ManagementStore } from "../store/store";
import type { EndpointRecord, WorkerBilling, WorkerUsageRow } from "./records";

/*
 * The billing model of this local service, simple and honest:
 * - Compute: a serverless worker (pod) is billed from its creation (its cold start included, as the
 *   real service bills a worker's initialization) until it stops, at
 *   a per-GPU hourly price of its endpoint's first GPU type (taken when the worker was created) times
 *   its GPU count. Running workers are read from the job plane; a stopped worker's time is kept in
 *   the store (WorkerUsageLedger), written when it stops (a graceful shutdown stops them all), one
 *   row per UTC hour, so it is still billed after the worker, its endpoint or the service is gone.
 *   Bounds: past WORKER_ROWS_PER_ENDPOINT_HOUR rows of an endpoint in one hour, further workers' time
 *   in that hour is merged into one row per billing (billed, grouped by podId, as podId "unknown";
 *   a range starting or ending inside that hour counts it pro rata); rows older than
 *   WORKER_USAGE_RETENTION_MS are deleted. A running worker's time so far is also written at each
 *   checkpoint (the job plane's `usageCheckpointMs`, a minute), extending its row of the hour, so a
 *   service killed without a graceful stop loses at most the time since the last checkpoint.
 * - Rented pods (/billing/pods only): every running period (kept after the pod is stopped or
 *   terminated, until WORKER_USAGE_RETENTION_MS after it ended) at the pod's hourly price then
 *   (costPerHr); grouped by gpuTypeId, a CPU pod counts under its CPU flavor.
 * - Storage: each network volume is billed for every size it had (kept in a usage history that
 *   outlives the volume, until WORKER_USAGE_RETENTION_MS after each size ended) at $0.07 per GB per
 *   30 days, prorated to the millisecond.
 * Records are grouped per time bucket (UTC) and per the asked grouping; empty buckets are omitted.
 */

export type BucketSize = "hour" | "day" | "week" | "month" | "year";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const MAX_BUCKETS = 10_000;
/**
 * Billed time is kept this long (a year and a month), then deleted: stopped workers' time, rented
 * pods' running periods and volumes' past sizes (each kind was kept for good before but workers').
 */
export const WORKER_USAGE_RETENTION_MS = 400 * DAY;
/** Rows of one endpoint in one hour with their own pod id; past it, time is merged per billing. */
export const WORKER_ROWS_PER_ENDPOINT_HOUR = 100;
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
  if (start > end) {
    // Without endTime the range ends now: a startTime still to come holds nothing billed yet.
    if (range.endTime === undefined) return [];
    throw invalid("startTime", `must not be after endTime (${range.startTime} > ${range.endTime})`);
  }
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

function selected(q: ComputeBillingQuery, podId: string | null, billing: WorkerBilling): boolean {
  if (q.endpointId !== undefined && billing.endpointId !== q.endpointId) return false;
  if (q.podId !== undefined && podId !== q.podId) return false;
  if (q.templateId !== undefined && billing.templateId !== q.templateId) return false;
  if (q.imageName !== undefined && billing.imageName !== q.imageName) return false;
  const gpu = billing.gpuTypeId;
  if (q.gpuTypeIds?.length && !(gpu && q.gpuTypeIds.includes(gpu))) return false;
  if (q.dataCenterIds?.length && !billing.dataCenterIds.some((dc) => q.dataCenterIds?.includes(dc)))
    return false;
  return true;
}

function groupOf(
  grouping: NonNullable<ComputeBillingQuery["grouping"]>,
  podId: string | null,
  billing: WorkerBilling,
): Pick<ComputeBillingRecord, "endpointId" | "podId" | "gpuTypeId"> {
  if (grouping === "podId") return { podId: podId ?? "unknown" };
  if (grouping === "gpuTypeId") return { gpuTypeId: billing.gpuTypeId ?? "unknown" };
  return { endpointId: billing.endpointId };
}

const usdPerMs = (billing: WorkerBilling) => (billing.usdPerGpuHour * Math.max(1, billing.gpuCount)) / HOUR;

/**
 * The workers' running time the job plane no longer has: each worker's billing taken when it is
 * created, and its time written to the store when it stops. The job plane's pool reports to it
 * (WorkerUsageLog); BillingService reads it.
 */
export class WorkerUsageLedger implements WorkerUsageLog {
  readonly #store: ManagementStore;
  /** Billing of the workers created and not yet stopped, by pod id. */
  readonly #live = new Map<string, WorkerBilling>();
  /** Until when a running worker's time is already in the store (written by a checkpoint), by pod id. */
  readonly #recordedUntil = new Map<string, number>();

  constructor(deps: { store: ManagementStore; clock: Clock }) {
    this.#store = deps.store;
    this.#store.pruneUsage(deps.clock.now() - WORKER_USAGE_RETENTION_MS);
  }

  started(pod: WorkerPod): void {
    this.#live.set(pod.id, this.#current(pod));
  }

  stopped(pod: WorkerPod, stoppedAt: number): void {
    const billing = this.billingOf(pod);
    // Time past the retention is not written (it would be deleted at once).
    const from = Math.max(this.unrecordedSince(pod), stoppedAt - WORKER_USAGE_RETENTION_MS);
    this.#live.delete(pod.id);
    this.#recordedUntil.delete(pod.id);
    this.#store.transaction(() => {
      this.#write(pod, billing, from, stoppedAt);
      this.#store.pruneUsage(stoppedAt - WORKER_USAGE_RETENTION_MS);
    });
  }

  /**
   * Running workers' time so far is written now, so that a service killed outright (SIGKILL, a
   * crash, the machine's power) loses only the time since the last checkpoint.
   */
  checkpoint(pods: WorkerPod[], now: number): void {
    const running = pods.filter((pod) => this.#live.has(pod.id));
    if (running.length === 0) return;
    this.#store.transaction(() => {
      for (const pod of running) {
        const billing = this.billingOf(pod);
        const from = Math.max(this.unrecordedSince(pod), now - WORKER_USAGE_RETENTION_MS);
        this.#write(pod, billing, from, now);
        this.#recordedUntil.set(pod.id, now);
      }
    });
  }

  /** From when a running worker's time is not yet in the store (BillingService adds it from here). */
  unrecordedSince(pod: WorkerPod): number {
    // From its creation: billed from its process start instead, a worker's bill shrank by its cold
    // start at the moment the process started.
    const since = pod.createdAt;
    return Math.max(since, this.#recordedUntil.get(pod.id) ?? since);
  }

  /** One row per UTC hour (every bucket size is made of whole hours); a checkpointed hour's row grows. */
  #write(pod: WorkerPod, billing: WorkerBilling, from: number, until: number): void {
    for (let hourMs = from - (from % HOUR); hourMs < until; hourMs += HOUR) {
      const fromMs = Math.max(hourMs, from);
      const untilMs = Math.min(hourMs + HOUR, until);
      if (untilMs <= fromMs) continue;
      const row = { ...billing, podId: pod.id, hourMs, fromMs, untilMs, billedMs: untilMs - fromMs };
      this.#store.addWorkerUsage(pod.accountId, row, WORKER_ROWS_PER_ENDPOINT_HOUR);
    }
  }

  /** What a worker is billed at: taken at its creation, or (one not created by the pool) its endpoint's now. */
  billingOf(pod: WorkerPod): WorkerBilling {
    return this.#live.get(pod.id) ?? this.#current(pod);
  }

  /** The account's stopped workers' time in the hours overlapping `fromMs`..`untilMs`. */
  history(accountId: string, fromMs: number, untilMs: number): WorkerUsageRow[] {
    return this.#store.workerUsage(accountId, fromMs - (fromMs % HOUR), untilMs);
  }

  #current(pod: WorkerPod): WorkerBilling {
    const endpoint = this.#store.endpoints.get(pod.accountId, pod.endpointId);
    return {
      endpointId: pod.endpointId,
      templateId: pod.templateId,
      imageName: pod.imageName,
      gpuTypeId: endpoint?.gpuTypeIds[0] ?? null,
      gpuCount: pod.gpuCount,
      dataCenterIds: endpoint?.dataCenterIds ?? [],
      computeType: endpoint?.computeType ?? "GPU",
      usdPerGpuHour: gpuHourPrice(endpoint),
    };
  }
}

/** Compute and storage billing of an account, from the job plane's workers, the workers' kept time and the volumes' history. */
export class BillingService {
  readonly #store: ManagementStore;
  readonly #clock: Clock;
  readonly #workers: WorkerRegistry;
  readonly #usage: WorkerUsageLedger;

  constructor(deps: {
    store: ManagementStore;
    clock: Clock;
    workers: WorkerRegistry;
    usage: WorkerUsageLedger;
  }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#workers = deps.workers;
    this.#usage = deps.usage;
  }

  /**
   * /billing/endpoints and /billing/pods: worker time per bucket and group. A worker is either running
   * (the job plane's, desiredStatus RUNNING) or stopped (its time in the ledger), so counted once.
   */
  compute(accountId: string, q: ComputeBillingQuery): ComputeBillingRecord[] {
    const now = this.#clock.now();
    const buckets = bucketsOf(q, now);
    const grouping = q.grouping ?? "endpointId";
    const totals = new Map<string, ComputeBillingRecord>();
    for (const worker of this.#workers.list(accountId)) {
      if (worker.desiredStatus !== "RUNNING") continue;
      const billing = this.#usage.billingOf(worker);
      if (!selected(q, worker.id, billing)) continue;
      // Its time until the last checkpoint is in the ledger's rows below: counted once.
      const runningSince = this.#usage.unrecordedSince(worker);
      addToBuckets(
        totals,
        buckets,
        groupOf(grouping, worker.id, billing),
        runningSince,
        now,
        usdPerMs(billing),
      );
    }
    const first = buckets[0];
    const last = buckets.at(-1);
    if (first && last) {
      for (const row of this.#usage.history(accountId, first.from, last.to)) {
        if (!selected(q, row.podId, row)) continue;
        // A merged row's time is spread evenly over its span.
        const density = row.billedMs / (row.untilMs - row.fromMs);
        const group = groupOf(grouping, row.podId, row);
        addToBuckets(totals, buckets, group, row.fromMs, row.untilMs, usdPerMs(row), density);
      }
    }
    if (q.includeRentedPods) this.#rentedPods(accountId, q, buckets, now, grouping, totals);
    // Rounded once, from the exact sum of its periods.
    for (const record of totals.values()) record.amount = round(record.amount);
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

/**
 * Adds a running period (fromMs..untilMs at usdPerMs) to each bucket it overlaps, per group; `density`:
 * billed ms per ms of the period (a merged row of several workers' time).
 */
function addToBuckets(
  totals: Map<string, ComputeBillingRecord>,
  buckets: Bucket[],
  group: Pick<ComputeBillingRecord, "endpointId" | "podId" | "gpuTypeId">,
  fromMs: number,
  untilMs: number,
  usdPerMs: number,
  density = 1,
): void {
  for (const bucket of buckets) {
    const ms = Math.round(overlap(bucket, fromMs, untilMs) * density);
    if (ms === 0) continue;
    const key = `${bucket.label}|${Object.values(group)[0]}`;
    const record = totals.get(key) ?? {
      amount: 0,
      timeBilledMs: 0,
      time: new Date(bucket.label).toISOString(),
      ...group,
    };
    record.timeBilledMs += ms;
    record.amount += ms * usdPerMs;
    totals.set(key, record);
  }
}
