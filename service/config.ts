import { type ConnectionLimits, DEFAULT_CONNECTION_LIMITS } from "./edge/server";
import type { JobPlaneConfig } from "./jobs/config";

/** Tunables of the local service; every one has a default that matches the real service. */
export interface ServiceConfig {
  /** Max JSON body of the management APIs, in bytes. */
  managementBodyLimit: number;
  /**
   * Once listening, run one memory-reducing garbage collection of the whole process (heap.ts): an
   * empty service then holds ~13 MB less. Off for a process whose own heap is large and that cannot
   * spare the one pause (~30 ms; skipped when the live heap is already large).
   */
  releaseStartupMemory: boolean;
  /**
   * Once listening, switch V8 to favour memory over speed for the whole process (heap.ts
   * `favourMemoryOverSpeed`): the young generation a burst of requests grows is ~2 MB instead of
   * ~100 MB, for ~8% more CPU per /run (bench/README.md; per completed job see heap.ts). Skipped when
   * the process's live heap is already large (an embedding host) or the process was started with its
   * young generation sized (`--max-semi-space-size`, heap.ts youngGenerationSizedAtStart).
   */
  favourMemoryOverSpeed: boolean;
  /** How long a client may take to send one request: headers, then body (edge/server.ts). */
  connections: ConnectionLimits;
  /**
   * Host names (or addresses) the service answers besides localhost (and *.localhost), 127.0.0.0/8,
   * [::1] and the bound address (edge/hosts.ts). Bound to loopback, a request addressed to any other name is refused
   * (421), so a page rebinding its own name to 127.0.0.1 reads nothing; bound elsewhere, names given
   * here switch that check on. At most 64.
   */
  allowedHosts: readonly string[];
  /** Job-plane tunables (handlers by image, cold starts, long-poll holds, rate limits, ...). */
  jobs?: Partial<JobPlaneConfig>;
}

/** 1 MiB for management bodies: far above any real resource definition. */
export const DEFAULT_CONFIG: ServiceConfig = {
  managementBodyLimit: 1024 * 1024,
  releaseStartupMemory: true,
  favourMemoryOverSpeed: true,
  connections: DEFAULT_CONNECTION_LIMITS,
  allowedHosts: [],
};
