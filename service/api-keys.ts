import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { z } from "zod";
import { accountIdOf } from "./edge/auth";

/** The environment variable the CLI reads account keys from (comma- or whitespace-separated). */
export const API_KEYS_ENV = "RUNPODKIT_API_KEYS";

/** One account key: printable, no whitespace (keys travel in headers and query strings). */
const ApiKey = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[\x21-\x7e]+$/, "an API key is printable ASCII without spaces");

export interface ApiKeySources {
  /** `--api-key` values (visible to anyone who can list processes). */
  flags?: readonly string[];
  /** `--api-key-file` paths: one key per line; blank lines and `#` comments are skipped. */
  files?: readonly string[];
  /** The value of RUNPODKIT_API_KEYS, if set. */
  env?: string;
}

export interface ApiKeys {
  keys: string[];
  /**
   * Further keys, each opening the account of the key it names (startService's sameAccountKeys): a
   * key file's `<further key> = <account key>` lines, to rehearse a key rotation.
   */
  sameAccountKeys: Record<string, string>;
  /** Problems worth a warning (never carrying a key): keys on the command line, a readable key file. */
  warnings: string[];
}

/** A key file holds keys, one a line: far below this. A larger file is not a key file. */
const MAX_KEY_FILE_BYTES = 1024 * 1024;

const FILE_ERRORS: Record<string, string> = {
  ENOENT: "no such file",
  EACCES: "permission denied",
  EISDIR: "a directory, not a file",
  ENOTDIR: "a part of the path is not a directory",
};

/**
 * A key file's text and mode, read through one descriptor. Bounded: a device such as /dev/zero (or a
 * large file given by mistake) was read without end, gigabytes in seconds, before any word was said.
 * A pipe is read to its end (`--api-key-file <(pass show runpodkit)`), within the same bound.
 */
function readKeyFile(file: string): { text: string; mode: number } {
  const refuse = (why: string) =>
    new Error(`--api-key-file ${file}: ${why}: give a file with one account key per line`);
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "";
    throw refuse(`${FILE_ERRORS[code] ?? "cannot be opened"}${code ? ` (${code})` : ""}`);
  }
  try {
    const stats = fstatSync(fd);
    if (stats.isDirectory()) throw refuse(`${FILE_ERRORS.EISDIR} (EISDIR)`);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024);
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      total += n;
      if (total > MAX_KEY_FILE_BYTES)
        throw refuse(`more than ${MAX_KEY_FILE_BYTES} bytes, which no key file holds`);
      chunks.push(chunk.subarray(0, n));
    }
    return { text: Buffer.concat(chunks).toString("utf8"), mode: stats.mode };
  } finally {
    closeSync(fd);
  }
}

/**
 * Collects the accounts' keys from the CLI's three sources, in order: the environment, key files, flags;
 * a key given twice is one account. A key file's line `<further key> = <account key>` (the "=" alone
 * between spaces: a key holds no space) gives an account a further key, as the real service's
 * accounts have several. Errors name the source (and a line number), never the key.
 */
export function readApiKeys(sources: ApiKeySources): ApiKeys {
  const keys: string[] = [];
  const warnings: string[] = [];
  const further: { key: string; of: string; where: string }[] = [];
  const valid = (value: string, where: string): string => {
    const parsed = ApiKey.safeParse(value);
    if (!parsed.success)
      throw new Error(`${where}: ${parsed.error.issues[0]?.message ?? "not a valid API key"}`);
    return parsed.data;
  };
  const add = (value: string, where: string) => {
    const key = valid(value, where);
    if (!keys.includes(key)) keys.push(key);
  };
  if (sources.env !== undefined) {
    for (const key of sources.env.split(/[\s,]+/).filter(Boolean)) add(key, API_KEYS_ENV);
  }
  for (const file of sources.files ?? []) {
    const { text, mode } = readKeyFile(file);
    if ((mode & 0o077) !== 0) {
      warnings.push(`--api-key-file ${file} can be read by other users of this machine (chmod 600 it)`);
    }
    text.split(/\r?\n/).forEach((raw, index) => {
      const line = raw.trim();
      if (line === "" || line.startsWith("#")) return;
      const where = `--api-key-file ${file} line ${index + 1}`;
      const words = line.split(/\s+/);
      if (words.length === 3 && words[1] === "=") {
        further.push({ key: valid(words[0] ?? "", where), of: valid(words[2] ?? "", where), where });
      } else add(line, where);
    });
  }
  for (const [index, key] of (sources.flags ?? []).entries()) add(key, `--api-key #${index + 1}`);
  if ((sources.flags ?? []).length > 0) {
    warnings.push(
      `--api-key puts keys on the command line, where any user of this machine can read them (ps); prefer ${API_KEYS_ENV} or --api-key-file`,
    );
  }
  return { keys, sameAccountKeys: sameAccountKeys(keys, further), warnings };
}

/** The further keys as a map; each must name an account's key and be no account's key itself. */
function sameAccountKeys(
  keys: readonly string[],
  further: readonly { key: string; of: string; where: string }[],
): Record<string, string> {
  const map: Record<string, string> = {};
  for (const { key, of, where } of further) {
    if (!keys.includes(of)) {
      throw new Error(
        `${where}: the key after "=" is no account's key; give it on a line of its own (or in ${API_KEYS_ENV}) to make it an account`,
      );
    }
    if (keys.includes(key)) {
      throw new Error(
        `${where}: the key before "=" is an account's key itself (given on its own elsewhere); a key opens one account`,
      );
    }
    if (map[key] !== undefined && map[key] !== of) {
      throw new Error(`${where}: the key before "=" is already a further key of another account`);
    }
    map[key] = of;
  }
  return map;
}

/**
 * A key as it may be printed: its account id and at most its first 3 characters (none for keys under
 * 20 characters), e.g. `rpk… (user_1a2b…)`.
 */
export function redactKey(key: string): string {
  return `${keyPrefix(key)}… (${accountIdOf(key)})`;
}

/** A further key as it may be printed: at most its first 3 characters, and the account it opens. */
export function redactFurtherKey(key: string, of: string): string {
  return `${keyPrefix(key)}… (opens ${accountIdOf(of)})`;
}

const keyPrefix = (key: string) => (key.length >= 20 ? key.slice(0, 3) : "");
