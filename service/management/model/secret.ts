import type { Clock } from "../../clock";
import { resourceNotFound, ServiceError } from "../../errors";
import type { Ids } from "../../ids";
import type { ResolvedEnv } from "../../planes";
import type { ManagementStore } from "../store/store";
import type { SecretRecord } from "./records";

export type { SecretRecord } from "./records";

/** `{{ RUNPOD_SECRET_<name> }}`, spaces inside the braces optional. */
const REFERENCE = /\{\{\s*RUNPOD_SECRET_([a-zA-Z_][a-zA-Z0-9_.\-/]*)\s*\}\}/g;

/** The secret names an env references, in order of first use. */
export function secretReferences(env: Record<string, string>): string[] {
  const names = new Set<string>();
  for (const value of Object.values(env))
    for (const match of value.matchAll(REFERENCE)) names.add(match[1] ?? "");
  return [...names];
}

/** Replaces every reference with its value; names without a value are reported, nothing replaced. */
export function resolveSecretReferences(
  env: Record<string, string>,
  values: Map<string, string>,
): ResolvedEnv {
  const missing = secretReferences(env).filter((name) => !values.has(name));
  if (missing.length > 0) return { ok: false, missing };
  const resolved: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    resolved[key] = value.replace(REFERENCE, (_, name: string) => values.get(name) ?? "");
  }
  return { ok: true, env: resolved };
}

/**
 * The rules of secrets: names unique per account and fixed at creation; the value is write-only (its
 * own column, read only to start workers).
 */
export class SecretService {
  readonly #store: ManagementStore;
  readonly #clock: Clock;
  readonly #ids: Ids;

  constructor(deps: { store: ManagementStore; clock: Clock; ids: Ids }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#ids = deps.ids;
  }

  list(accountId: string): SecretRecord[] {
    return this.#store.secrets(accountId);
  }

  get(accountId: string, id: string): SecretRecord {
    const record = this.#store.secret(accountId, id);
    if (!record) throw resourceNotFound("secret", id);
    return record;
  }

  create(accountId: string, input: { name: string; value: string; description?: string | null | undefined }) {
    return this.#store.transaction(() => {
      if (this.#store.secretByName(accountId, input.name)) {
        throw new ServiceError("CONFLICT", `name: a secret named "${input.name}" already exists`, {
          field: "name",
        });
      }
      const record: SecretRecord = {
        id: this.#ids.secret(),
        accountId,
        name: input.name,
        description: input.description ?? null,
        createdAt: this.#clock.now(),
        updatedAt: null,
      };
      this.#store.insertSecret(record, input.value);
      return record;
    });
  }

  /** Rotates the value: workers and pods started after it get the new one. */
  updateValue(accountId: string, id: string, value: string): SecretRecord {
    return this.#store.transaction(() => {
      this.get(accountId, id);
      this.#store.updateSecretValue(accountId, id, value, this.#clock.now());
      return this.get(accountId, id);
    });
  }

  updateDescription(accountId: string, id: string, description: string): SecretRecord {
    return this.#store.transaction(() => {
      this.get(accountId, id);
      this.#store.updateSecretDescription(accountId, id, description, this.#clock.now());
      return this.get(accountId, id);
    });
  }

  /** Workers already running keep the value they started with; new ones fail to start while referenced. */
  delete(accountId: string, id: string): void {
    this.#store.transaction(() => {
      this.get(accountId, id);
      this.#store.deleteSecret(accountId, id);
    });
  }
}
