/** HTTP load with autocannon: a fixed number of connections for a fixed time, 2xx counted as accepted. */
import autocannon from "autocannon";

export interface LoadResult {
  /** 2xx replies per second over the run. */
  acceptedPerSec: number;
  total2xx: number;
  non2xx: number;
  errors: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
}

export interface LoadOptions {
  url: string;
  connections: number;
  /** Seconds of load, or `amount` requests in all. */
  durationSec?: number;
  amount?: number;
  method: "POST" | "GET";
  headers: Record<string, string>;
  body?: string;
}

export async function load(options: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    // autocannon notices that `amount` requests are done only on its sampling tick (1 s by default),
    // so a count that takes 0.4 s measured as 1 s: sampled every 10 ms instead.
    ...(options.amount === undefined
      ? { duration: options.durationSec }
      : { amount: options.amount, sampleInt: 10 }),
    method: options.method,
    headers: options.headers,
    body: options.body,
    pipelining: 1,
    timeout: 30,
  });
  return {
    acceptedPerSec: result["2xx"] / result.duration,
    total2xx: result["2xx"],
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
  };
}
