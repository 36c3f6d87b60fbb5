import type { EventEmitter } from "node:events";
import type { DatabaseSync } from "node:sqlite";
import type { Clock } from "./clock";
import type { Accounts } from "./edge/auth";
import type { Ids } from "./ids";
import type { JobPlaneConfig } from "./job-plane";

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
}

/** Implemented by the job plane's worker pool; the management plane only reads it. */
export interface WorkerRegistry {
  list(accountId: string, endpointId?: string): WorkerPod[];
}

/** Events between the management plane and the job plane. */
export interface ServiceEventMap {
  /** An endpoint was created or replaced (REST or GraphQL): the scaler re-reads its settings. */
  "endpoint.saved": [accountId: string, endpointId: string];
  /** An endpoint was deleted: its jobs and workers go with it. */
  "endpoint.deleted": [accountId: string, endpointId: string];
}

export type ServiceEvents = EventEmitter<ServiceEventMap>;

/** Tunables of the local service; every one has a default that matches the real service. */
export interface ServiceConfig {
  /** Max JSON body of the management APIs, in bytes. */
  managementBodyLimit: number;
  /** Job-plane tunables (handlers by image, cold starts, long-poll holds, rate limits, ...). */
  jobs?: Partial<JobPlaneConfig>;
}

/** Everything the app is built from: no module-level state anywhere in the service. */
export interface ServiceDeps {
  db: DatabaseSync;
  clock: Clock;
  ids: Ids;
  accounts: Accounts;
  events: ServiceEvents;
  workers: WorkerRegistry;
  config: ServiceConfig;
}
