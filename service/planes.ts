import type { EventBus } from "./event-bus";

/*
 * The contract between the service's two planes, and all they know of each other. The management
 * plane (service/management/) owns endpoints and templates; the job plane (service/jobs/) owns jobs
 * and workers. Neither imports the other: each reads the other through an interface declared here,
 * and the management plane announces changes as events. service/index.ts wires the two together.
 */

/** What the management plane announces; the job plane follows its endpoints through these. */
export interface ServiceEvents {
  /** An endpoint was created or replaced (REST or GraphQL), or its template changed: its settings apply now. */
  "endpoint.saved": [accountId: string, endpointId: string];
  /** An endpoint was deleted: its jobs and workers go with it. */
  "endpoint.deleted": [accountId: string, endpointId: string];
}

export type ServiceEventBus = EventBus<ServiceEvents>;

/** A serverless worker as it appears among the account's pods. */
export interface WorkerPod {
  id: string;
  accountId: string;
  endpointId: string;
  /** RUNNING while starting or up, EXITED once stopped (idle scale-down), TERMINATED when removed. */
  desiredStatus: "RUNNING" | "EXITED" | "TERMINATED";
  imageName: string;
  templateId: string;
  gpuCount: number;
  /** ms since the epoch */
  createdAt: number;
  lastStartedAt: number | null;
  /** Job-plane detail shown by /health: idle, running, initializing, ... */
  state: "initializing" | "idle" | "running" | "unhealthy";
  /** Why the worker could not start (e.g. an unknown secret in its env); absent when it did. */
  failure?: string;
  /** When it stopped (ms since the epoch), once desiredStatus is EXITED or TERMINATED. */
  stoppedAt?: number;
}

/** The job plane's workers, as the management plane reads them (pods, billing). */
export interface WorkerRegistry {
  list(accountId: string, endpointId?: string): WorkerPod[];
}

/**
 * The management plane's record of the workers' running time (billing): the job plane's pool reports
 * each worker it creates and each that has stopped; never on the job path.
 */
export interface WorkerUsageLog {
  /** A worker was created: what it is billed at is taken now (its endpoint may change or go later). */
  started(pod: WorkerPod): void;
  /** A worker stopped at `stoppedAt` (ms since the epoch): its running time is kept. */
  stopped(pod: WorkerPod, stoppedAt: number): void;
  /** The workers still running: their time until `now` is kept already (a killed service loses less). */
  checkpoint(pods: WorkerPod[], now: number): void;
}

/** What the job plane needs to know about an endpoint and its template. */
export interface EndpointSettings {
  id: string;
  accountId: string;
  /** QB: queue-based (the job API applies); LB: load balancing (it does not). */
  type: "QB" | "LB";
  workersMin: number;
  workersMax: number;
  /** Seconds an idle worker stays up (above workersMin). */
  idleTimeout: number;
  scalerType: "QUEUE_DELAY" | "REQUEST_COUNT";
  scalerValue: number;
  flashBootType: "OFF" | "FLASHBOOT" | "PRIORITY_FLASHBOOT";
  /** Default execution timeout of its jobs, ms. */
  executionTimeoutMs: number;
  /** Set when the model is cached: faster cold starts. */
  modelName: string | null;
  gpuCount: number;
  templateId: string;
  imageName: string;
  /** Template env, then endpoint env (the endpoint wins). */
  env: Record<string, string>;
  /** Changes when the template or env changes: running workers are then replaced. */
  version: number;
}

/** The management plane's endpoints, as the job plane reads them. */
export interface EndpointDirectory {
  get(accountId: string, endpointId: string): EndpointSettings | undefined;
  listAll(): EndpointSettings[];
}

/** An env with its secret references resolved, or the names no secret of the account has. */
export type ResolvedEnv = { ok: true; env: Record<string, string> } | { ok: false; missing: string[] };

/**
 * The management plane's secrets, as the job plane reads them to start a worker. Values go only into
 * the worker's environment: never into a reply, a log or the job plane's caches.
 */
export interface SecretDirectory {
  /** `env` with every `{{ RUNPOD_SECRET_<name> }}` replaced by the value of the account's secret. */
  resolveEnv(accountId: string, env: Record<string, string>): ResolvedEnv;
}
