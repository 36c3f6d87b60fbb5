import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chmodSync, linkSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { z } from "zod";

/** The environment variable that may hold the store key (32 bytes: 64 hex digits or base64). */
export const STORE_KEY_ENV = "RUNPODKIT_STORE_KEY";

const PREFIX = "sealed:v1:";
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
/** Authenticated with every value: a value sealed for something else does not open here. */
const AAD = Buffer.from("runpodkit store secret v1");

/** A secret that cannot be opened: the wrong key, or a damaged value. Never carries the value. */
export class StoreKeyError extends Error {
  override readonly name = "StoreKeyError";
}

/** 64 hex digits or base64(url) of 32 bytes, whitespace around it ignored. */
const EncodedKey = z
  .string()
  .trim()
  .transform((text, ctx) => {
    const bytes = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, "hex") : Buffer.from(text, "base64");
    if (bytes.length !== KEY_BYTES) {
      ctx.addIssue({ code: "custom", message: "expected 32 bytes as 64 hex digits or base64" });
      return z.NEVER;
    }
    return bytes;
  });

/**
 * Seals the secrets the store keeps (registry passwords, env values) with AES-256-GCM: each value gets
 * a fresh 96-bit IV, and is stored as `sealed:v1:<base64 of iv | tag | ciphertext>`. One small class
 * so that every table with a secret seals it the same way.
 */
export class Sealer {
  readonly #key: Buffer;
  /** Where the key came from, for errors ("key file /x/store.sqlite.key"); never the key. */
  readonly source: string;

  /** The key file this open created (a store that already had secrets then has lost its key file). */
  readonly createdFile: string | null;

  constructor(key: Buffer, source: string, createdFile: string | null = null) {
    if (key.length !== KEY_BYTES) throw new StoreKeyError(`store key (${source}): expected 32 bytes`);
    this.#key = Buffer.from(key);
    this.source = source;
    this.createdFile = createdFile;
  }

  static isSealed(value: string): boolean {
    return value.startsWith(PREFIX);
  }

  seal(plain: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    cipher.setAAD(AAD);
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
  }

  /** The plain value; `what` names it in the error (e.g. "template tpl_1 env HF_TOKEN"). */
  open(sealed: string, what: string): string {
    if (!Sealer.isSealed(sealed)) throw new StoreKeyError(`unsealing ${what}: the value is not sealed`);
    const bytes = Buffer.from(sealed.slice(PREFIX.length), "base64");
    if (bytes.length < IV_BYTES + TAG_BYTES)
      throw new StoreKeyError(`unsealing ${what}: the value is damaged`);
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(AAD);
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([
        decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)),
        decipher.final(),
      ]).toString("utf8");
    } catch {
      throw new StoreKeyError(
        `unsealing ${what}: the store key (${this.source}) is not the key it was sealed with, or the value is damaged`,
      );
    }
  }
}

/** The key file of a store file: beside it, `<store>.key`. */
export function keyFileOf(data: string): string {
  return `${data}.key`;
}

/**
 * The sealer of a store: the key given (RUNPODKIT_STORE_KEY), else the store's key file (`<store>.key`,
 * created 0600 with a random key on first open, narrowed to 0600 when opened), else, for ":memory:",
 * a random key that lives as long as the process.
 */
export function openSealer(data: string, encodedKey?: string): Sealer {
  if (encodedKey !== undefined) {
    const parsed = EncodedKey.safeParse(encodedKey);
    if (!parsed.success) throw new StoreKeyError(`${STORE_KEY_ENV}: ${parsed.error.issues[0]?.message}`);
    return new Sealer(parsed.data, STORE_KEY_ENV);
  }
  if (data === ":memory:") return new Sealer(randomBytes(KEY_BYTES), "in-memory key");
  const file = keyFileOf(data);
  const source = `key file ${file}`;
  const created = createKeyFile(file);
  chmodSync(file, 0o600);
  const parsed = EncodedKey.safeParse(readFileSync(file, "utf8"));
  if (!parsed.success) throw new StoreKeyError(`${source}: ${parsed.error.issues[0]?.message}`);
  return new Sealer(parsed.data, source, created ? file : null);
}

/**
 * Makes the key file if there is none, whole or not at all: the key is written to a file of its own,
 * then linked in place. Written in place, a full disk (or a kill) left an empty key file, which every
 * later start refused ("expected 32 bytes") though space had returned. An empty key file (left so by
 * an earlier version) holds no key: it is replaced; a key that does not fit the store is refused by
 * the store's key check, and the file made here removed (store.ts checkKey). True if it made one.
 */
function createKeyFile(file: string): boolean {
  const size = sizeOrNull(file);
  if (size !== null && size > 0) return false;
  const temporary = `${file}.${process.pid}.tmp`;
  // One left by a killed process that had this pid.
  rmSync(temporary, { force: true });
  try {
    writeFileSync(temporary, `${randomBytes(KEY_BYTES).toString("hex")}\n`, { mode: 0o600, flag: "wx" });
    if (size === null) {
      try {
        linkSync(temporary, file);
      } catch (error) {
        // Another start made it meanwhile: that one is the key.
        if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
        throw error;
      }
    } else renameSync(temporary, file);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === "ENOSPC"
        ? "no space left on the device (ENOSPC): free space there and start again"
        : error instanceof Error
          ? error.message
          : String(error);
    throw new StoreKeyError(`key file ${file}: it cannot be written: ${why}`, { cause: error });
  } finally {
    // Gone when renamed into place; linked, the key file keeps the key.
    rmSync(temporary, { force: true });
  }
}

function sizeOrNull(file: string): number | null {
  try {
    return statSync(file).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
