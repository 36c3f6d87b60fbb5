import { createHash, hash } from "node:crypto";
import { ServiceError } from "../errors";

/**
 * The one place a credential becomes an account. Each API key is an account; the account id is
 * derived from the key (never the key itself), so it is stable across restarts and safe to store
 * and log. Every wire authenticates here: REST (`Authorization: Bearer <key>`), GraphQL (`?api_key=`
 * or a Bearer header), the job API and the worker protocol (the raw key, as the real workers send it).
 */
export class Accounts {
  /**
   * Accounts by their keys' digests (keyDigest), never by the keys: a lookup compares digests, so how
   * long it takes says nothing about how much of a key a guess got right.
   */
  readonly #byKey = new Map<string, string>();

  /**
   * `sameAccount` maps further keys to a key of `apiKeys` whose account they open too: an account with
   * several keys, as the real service has, so a key rotation can be rehearsed.
   */
  constructor(apiKeys: readonly string[], sameAccount: Readonly<Record<string, string>> = {}) {
    for (const key of apiKeys) this.#byKey.set(keyDigest(key), accountIdOf(key));
    for (const [key, of] of Object.entries(sameAccount)) {
      const accountId = this.#byKey.get(keyDigest(of));
      if (accountId === undefined)
        throw new Error("Accounts: a further key names a key that is not an account's");
      if (!this.#byKey.has(keyDigest(key))) this.#byKey.set(keyDigest(key), accountId);
    }
  }

  /** The account of a raw key or of an `Authorization` value with or without `Bearer `. */
  resolve(credential: string | undefined | null): string | undefined {
    if (!credential) return undefined;
    return this.#byKey.get(keyDigest(bareKey(credential)));
  }

  /** The account, or UNAUTHORIZED. The key never appears in the error. */
  authenticate(credential: string | undefined | null): string {
    const accountId = this.resolve(credential);
    if (!accountId) {
      throw new ServiceError(
        "UNAUTHORIZED",
        credential ? "Unauthorized: the API key is not valid" : "Unauthorized: an API key is required",
      );
    }
    return accountId;
  }

  get ids(): string[] {
    return [...new Set(this.#byKey.values())];
  }
}

/** The key of a credential: an `Authorization` value loses its `Bearer ` prefix. */
export function bareKey(credential: string): string {
  // Every worker request carries the raw key: printable ASCII at both ends and no b/B first can have
  // neither a prefix nor anything trim() would remove, so it is its own key (no regular expression).
  // Clients send exactly "Bearer <key>": printable ASCII after one space needs no regex either.
  const first = credential.charCodeAt(0);
  const last = credential.charCodeAt(credential.length - 1);
  if (last > 0x20 && last < 0x7f) {
    if (first > 0x20 && first < 0x7f && (first | 0x20) !== 0x62) return credential;
    if (credential.startsWith("Bearer ")) {
      const keyFirst = credential.charCodeAt(7);
      if (keyFirst > 0x20 && keyFirst < 0x7f) return credential.slice(7);
    }
  }
  return credential.replace(/^Bearer\s+/i, "").trim();
}

/**
 * A key's SHA-256 (base64): the fixed-length form keys are looked up and compared in. The one-shot
 * `hash` (no Hash object): every request of every plane takes one or two.
 */
export function keyDigest(key: string): string {
  return hash("sha256", key, "base64");
}

/**
 * Whether two keys are the same, in a time that says nothing of the keys: their digests are compared,
 * and where `===` over digests stops tells a guesser only how much of a SHA-256 they matched, which
 * no key prefix steers.
 */
export function sameKey(given: string, expected: string): boolean {
  return keyDigest(given) === keyDigest(expected);
}

export function accountIdOf(apiKey: string): string {
  return `user_${createHash("sha256").update(apiKey).digest("hex").slice(0, 24)}`;
}
