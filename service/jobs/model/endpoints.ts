import type { EndpointDirectory, EndpointSettings } from "../../planes";

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
