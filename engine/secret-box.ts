/**
 * Encrypts secret values before state reaches disk, like Pulumi's passphrase secrets provider: a key
 * derived from the passphrase (scrypt, per-stack salt) and AES-256-GCM per value. A sealed secret keeps
 * Pulumi's secret signature and carries `ciphertext` instead of `value`, so state stays inspectable
 * without ever holding the plaintext.
 */
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from "node:crypto";
import { EngineError } from "./errors";
import { isObject, isSecret, type PropertyValue, SECRET_SIG, SIG_KEY } from "./values";

const FORMAT = "v1";
const CHECK_TEXT = "runpodkit-test-engine";

export class SecretBox {
  private constructor(
    private readonly key: Buffer,
    readonly salt: string,
  ) {}

  static create(passphrase: string, salt: string = randomBytes(16).toString("base64")): SecretBox {
    if (passphrase === "") {
      throw new EngineError(
        "PASSPHRASE_REQUIRED",
        "state.open",
        "a passphrase is required to encrypt secrets",
      );
    }
    return new SecretBox(scryptSync(passphrase, Buffer.from(salt, "base64"), 32), salt);
  }

  /** A value stored beside the salt that proves a later passphrase is the same one. */
  checkValue(): string {
    return this.encrypt(CHECK_TEXT);
  }

  verify(check: string): void {
    let ok = false;
    try {
      ok = this.decrypt(check) === CHECK_TEXT;
    } catch {
      ok = false;
    }
    if (!ok)
      throw new EngineError("PASSPHRASE_MISMATCH", "state.open", "the passphrase does not open this state");
  }

  encrypt(value: PropertyValue): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(value), "utf8"), cipher.final()]);
    return `${FORMAT}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64")}`;
  }

  decrypt(text: string): PropertyValue {
    const [format, payload] = text.split(":", 2);
    if (format !== FORMAT || payload === undefined) {
      throw new EngineError("SECRET_FORMAT", "state.decrypt", `unknown secret format ${format ?? ""}`);
    }
    const raw = Buffer.from(payload, "base64");
    const decipher = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    const plain = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
    return JSON.parse(plain) as PropertyValue;
  }

  /** Replaces every secret (deeply) by its sealed form. */
  seal(value: PropertyValue): PropertyValue {
    if (isSecret(value)) return { [SIG_KEY]: SECRET_SIG, ciphertext: this.encrypt(value.value ?? null) };
    if (Array.isArray(value)) return value.map((v) => this.seal(v));
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.seal(v)]));
    return value;
  }

  /** The inverse of seal: sealed secrets become in-memory secrets again. */
  open(value: PropertyValue): PropertyValue {
    if (isSealed(value)) return { [SIG_KEY]: SECRET_SIG, value: this.decrypt(value.ciphertext) };
    if (Array.isArray(value)) return value.map((v) => this.open(v));
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.open(v)]));
    return value;
  }
}

export function isSealed(
  value: PropertyValue | undefined,
): value is { [SIG_KEY]: string; ciphertext: string } {
  return isObject(value) && value[SIG_KEY] === SECRET_SIG && typeof value.ciphertext === "string";
}
