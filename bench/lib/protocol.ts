/** What the bench's child processes are given and answer, validated at the IPC boundary. */
import { z } from "zod";

export const ServerOptions = z.object({
  data: z.string().min(1),
  /** Image name -> handler module (the job plane's `handlers`). */
  handlers: z.record(z.string(), z.string()).default({}),
  /** The spec's per-endpoint rate limits; off to measure capacity rather than the policy. */
  rateLimits: z.boolean().default(false),
  countCalls: z.boolean().default(false),
  /** The job plane's per-endpoint queue cap (the service's default when absent). */
  maxQueuedPerEndpoint: z.number().int().positive().optional(),
});
export type ServerOptions = z.input<typeof ServerOptions>;

export const ServerReady = z.object({
  restUrl: z.string(),
  graphqlUrl: z.string(),
  queueUrl: z.string(),
  /** Time startService took in this process (store open, restore, listen), ms. */
  startMs: z.number(),
  pid: z.number(),
});
export type ServerReady = z.infer<typeof ServerReady>;

export const CallCount = z.object({ key: z.string(), kind: z.enum(["read", "write"]), count: z.number() });
export type CallCount = z.infer<typeof CallCount>;

export const ServerStats = z.object({
  rss: z.number(),
  heapUsed: z.number(),
  heapTotal: z.number(),
  external: z.number(),
  /** The service process's CPU so far (process.cpuUsage, user + system), microseconds. */
  cpuUs: z.number(),
  calls: z.array(CallCount),
});
export type ServerStats = z.infer<typeof ServerStats>;

export const Empty = z.object({});

/** The bench server's `heapSnapshot` command: the snapshot written (diagnostics). */
export const HeapSnapshotArgs = z.object({ dir: z.string().min(1) });
export const HeapSnapshotWritten = z.object({ file: z.string() });

export const BareReady = z.object({ url: z.string(), pid: z.number() });
export type BareReady = z.infer<typeof BareReady>;

/** The bare server's `queueRequests` command: requests its queue floor answered so far, by route. */
export const QueueRequests = z.object({ byRoute: z.record(z.string(), z.number()) });

/** A client process's measured loop: wall time and its own CPU (user + system), microseconds. */
export const LoopResult = z.object({
  calls: z.number(),
  elapsedMs: z.number(),
  cpuUserUs: z.number(),
  cpuSystemUs: z.number(),
  errors: z.number(),
  firstError: z.string().optional(),
});
export type LoopResult = z.infer<typeof LoopResult>;

export const ClientReady = z.object({ pid: z.number() });

export const E2eArgs = z.object({
  queueUrl: z.string(),
  /** The jobs go round-robin to these endpoints (job i to endpoint i mod n). */
  endpointIds: z.array(z.string()).min(1),
  jobs: z.number().int().positive(),
  concurrency: z.number().int().positive(),
  sample: z.number().int().nonnegative(),
});
export type E2eArgs = z.infer<typeof E2eArgs>;

export const E2eResult = z.object({
  jobs: z.number(),
  elapsedMs: z.number(),
  submittedMs: z.number(),
  failed: z.number(),
  submitErrors: z.number(),
  firstError: z.string().optional(),
  sampleWrong: z.number(),
  /** This client process's CPU during the run (user + system), microseconds. */
  cpuUs: z.number(),
});
export type E2eResult = z.infer<typeof E2eResult>;

export const LatencyArgs = z.object({
  /** The service's queue URL, or the bare server's (the keep-alive round-trip floor). */
  queueUrl: z.string(),
  /** Also time the no-op handler called in-process (the service run only). */
  direct: z.boolean().default(true),
  endpointId: z.string(),
  warmup: z.number().int().nonnegative(),
  requests: z.number().int().positive(),
});
export type LatencyArgs = z.infer<typeof LatencyArgs>;

export const LatencyResult = z.object({
  p50Ms: z.number(),
  p99Ms: z.number(),
  directP50Ms: z.number(),
  directP99Ms: z.number(),
  /** Replies that were not 200 COMPLETED with the input echoed. */
  wrong: z.number(),
});
export type LatencyResult = z.infer<typeof LatencyResult>;

export const CyclesArgs = z.object({
  client: z.enum(["ours", "official", "undici"]),
  /** The job API's base, ending in /v2. */
  baseUrl: z.string(),
  endpointId: z.string(),
  cycles: z.number().int().positive(),
  warmup: z.number().int().nonnegative(),
  concurrency: z.number().int().positive(),
});
export type CyclesArgs = z.infer<typeof CyclesArgs>;

export const StreamArgs = z.object({
  queueUrl: z.string(),
  endpointId: z.string(),
  chunks: z.number().int().positive(),
  chunkBytes: z.number().int().positive(),
});
export type StreamArgs = z.infer<typeof StreamArgs>;

export const StreamResult = z.object({
  bytes: z.number(),
  chunks: z.number(),
  /** From /run to the end of the stream, ms. */
  elapsedMs: z.number(),
  status: z.string(),
});
export type StreamResult = z.infer<typeof StreamResult>;
