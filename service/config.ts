import type { JobPlaneConfig } from "./jobs/config";

/** Tunables of the local service; every one has a default that matches the real service. */
export interface ServiceConfig {
  /** Max JSON body of the management APIs, in bytes. */
  managementBodyLimit: number;
  /** Job-plane tunables (handlers by image, cold starts, long-poll holds, rate limits, ...). */
  jobs?: Partial<JobPlaneConfig>;
}

/** 1 MiB for management bodies: far above any real resource definition. */
export const DEFAULT_CONFIG: ServiceConfig = {
  managementBodyLimit: 1024 * 1024,
};
