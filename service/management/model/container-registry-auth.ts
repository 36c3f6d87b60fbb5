import type { Clock } from "../../clock";
import { resourceNotFound, ServiceError } from "../../errors";
import type { Ids } from "../../ids";
import type { ManagementStore } from "../store/store";
import type { RegistryAuthRecord } from "./records";

export type { RegistryAuthRecord } from "./records";

export interface RegistryAuthCreate {
  name: string;
  username: string;
  password: string;
}

export interface RegistryAuthCredentials {
  username: string;
  password: string;
}

/** What any wire shows of a registry auth: credentials never leave the store. */
export function publicRegistryAuth(record: RegistryAuthRecord): { id: string; name: string } {
  return { id: record.id, name: record.name };
}

/** The rules of container registry auths (credentials workers pull private images with). */
export class RegistryAuthService {
  readonly #store: ManagementStore;
  readonly #clock: Clock;
  readonly #ids: Ids;

  constructor(deps: { store: ManagementStore; clock: Clock; ids: Ids }) {
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#ids = deps.ids;
  }

  /** The stored record, credentials included (for workers; wires show publicRegistryAuth). */
  get(accountId: string, authId: string): RegistryAuthRecord {
    const record = this.#store.registryAuths.get(accountId, authId);
    if (!record) throw resourceNotFound("container registry auth", authId);
    return record;
  }

  list(accountId: string): RegistryAuthRecord[] {
    return this.#store.registryAuths.list(accountId);
  }

  /** Names are unique per account. */
  create(accountId: string, input: RegistryAuthCreate): RegistryAuthRecord {
    return this.#store.transaction(() => {
      if (this.#store.registryAuthByName(accountId, input.name)) {
        throw new ServiceError(
          "CONFLICT",
          `name: a container registry auth named "${input.name}" already exists`,
          { field: "name" },
        );
      }
      const record: RegistryAuthRecord = {
        ...input,
        id: this.#ids.registryAuth(),
        accountId,
        createdAt: this.#clock.now(),
      };
      this.#store.putRegistryAuth(record);
      return record;
    });
  }

  /** GraphQL only (REST has no update, as the real service): replaces the credentials. */
  update(accountId: string, authId: string, credentials: RegistryAuthCredentials): RegistryAuthRecord {
    return this.#store.transaction(() => {
      const record = { ...this.get(accountId, authId), ...credentials };
      this.#store.putRegistryAuth(record);
      return record;
    });
  }

  /** Refused while a template or a pod pulls its image with these credentials. */
  delete(accountId: string, authId: string): void {
    this.#store.transaction(() => {
      this.get(accountId, authId);
      const users = this.#store.templateIdsUsingAuth(accountId, authId);
      if (users.length > 0) {
        throw new ServiceError(
          "IN_USE",
          `container registry auth ${authId} is used by template(s) ${users.join(", ")}; set their containerRegistryAuthId to another one (or null) first`,
          { field: "containerRegistryAuthId" },
        );
      }
      const pods = this.#store.podIdsUsing(accountId, "registry_auth_id", authId);
      if (pods.length > 0) {
        throw new ServiceError(
          "IN_USE",
          `container registry auth ${authId} is used by pod(s) ${pods.join(", ")}; terminate them first`,
          {
            field: "containerRegistryAuthId",
          },
        );
      }
      this.#store.registryAuths.delete(accountId, authId);
    });
  }
}
