import { createHash } from "node:crypto";

/**
 * Each API key is an account. The account id is derived from the key (never the key itself), so it is
 * stable across restarts and safe to store and log.
 */
export class Accounts {
  readonly #byKey = new Map<string, string>();

  constructor(apiKeys: readonly string[]) {
    for (const key of apiKeys) this.#byKey.set(key, accountIdOf(key));
  }

  /** Resolves a raw key or an `Authorization` value with or without `Bearer `. */
  resolve(credential: string | undefined | null): string | undefined {
    if (!credential) return undefined;
    const key = credential.replace(/^Bearer\s+/i, "").trim();
    return this.#byKey.get(key);
  }

  get ids(): string[] {
    return [...this.#byKey.values()];
  }
}

export function accountIdOf(apiKey: string): string {
  return `user_${createHash("sha256").update(apiKey).digest("hex").slice(0, 24)}`;
}
