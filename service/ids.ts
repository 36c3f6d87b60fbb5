import { randomBytes, randomUUID } from "node:crypto";

/** Id formats of the real service, so clients that pattern-match ids keep working. */
export interface Ids {
  endpoint(): string; // 14 lowercase alphanumerics, e.g. "vsrx8zdokf21gz"
  template(): string; // 10, e.g. "30zmvf89kd"
  networkVolume(): string; // 10
  registryAuth(): string; // cuid-like, e.g. "clzdaifot0001l90809257ynb"
  pod(): string; // 14
  secret(): string; // cuid-like, as registry auths
  /** Async jobs "<uuid>-u1", sync jobs "sync-<uuid>-u1". */
  job(kind: "async" | "sync"): string;
}

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

export function createIds(
  random: (n: number) => Uint8Array = randomBytes,
  uuid: () => string = randomUUID,
): Ids {
  const token = (n: number) => {
    const bytes = random(n);
    let out = "";
    for (let i = 0; i < n; i++) out += ALPHABET[(bytes[i] ?? 0) % ALPHABET.length];
    return out;
  };
  return {
    endpoint: () => token(14),
    template: () => token(10),
    networkVolume: () => token(10),
    registryAuth: () => `cl${token(23)}`,
    pod: () => token(14),
    secret: () => `cl${token(23)}`,
    job: (kind) => (kind === "sync" ? `sync-${uuid()}-u1` : `${uuid()}-u1`),
  };
}

/** Deterministic ids for tests: a counter feeds the same formats. */
export function createSequentialIds(seed = 1): Ids {
  let n = seed;
  const bytes = (len: number) => {
    const out = new Uint8Array(len);
    let v = n++;
    for (let i = len - 1; i >= 0; i--) {
      out[i] = v % 36;
      v = Math.floor(v / 36);
    }
    return out;
  };
  const uuid = () => {
    const hex = (n++).toString(16).padStart(32, "0");
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
  return createIds(bytes, uuid);
}
