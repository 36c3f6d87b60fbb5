/**
 * What the job plane needs to know about an endpoint and its template. The management plane owns
 * the records; the job plane reads them through an EndpointDirectory, so it never touches their tables.
 */
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
  flashBootType: "OFF" | "FLASHBOOT";
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

export interface EndpointDirectory {
  get(accountId: string, endpointId: string): EndpointSettings | undefined;
  listAll(): EndpointSettings[];
}

const MAX_ENTRIES = 10_000;

/**
 * Reads through to a directory and keeps what it read until told that the endpoint changed (the
 * management plane's endpoint.saved / endpoint.deleted events), so /run does not query per request.
 */
export class CachedEndpoints implements EndpointDirectory {
  readonly #source: EndpointDirectory;
  readonly #cache = new Map<string, EndpointSettings | null>();

  constructor(source: EndpointDirectory) {
    this.#source = source;
  }

  get(accountId: string, endpointId: string): EndpointSettings | undefined {
    const key = `${accountId}/${endpointId}`;
    let entry = this.#cache.get(key);
    if (entry === undefined) {
      // Misses are kept too (requests to a wrong id cost no query): creating the endpoint later
      // emits endpoint.saved, which invalidates the entry.
      entry = this.#source.get(accountId, endpointId) ?? null;
      if (this.#cache.size >= MAX_ENTRIES) this.#cache.clear();
      this.#cache.set(key, entry);
    }
    return entry ?? undefined;
  }

  listAll(): EndpointSettings[] {
    return this.#source.listAll();
  }

  invalidate(accountId: string, endpointId: string): void {
    this.#cache.delete(`${accountId}/${endpointId}`);
  }
}
