import type { ServiceDeps } from "../deps";
import { inTransaction, storeOf } from "./common";
import { notFound, ServiceError } from "./errors";
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

export function getRegistryAuth(deps: ServiceDeps, accountId: string, authId: string): RegistryAuthRecord {
  const record = storeOf(deps).registryAuths.get(accountId, authId);
  if (!record) throw notFound("container registry auth", authId);
  return record;
}

export function listRegistryAuths(deps: ServiceDeps, accountId: string): RegistryAuthRecord[] {
  return storeOf(deps).registryAuths.list(accountId);
}

/** Names are unique per account. */
export function createRegistryAuth(
  deps: ServiceDeps,
  accountId: string,
  input: RegistryAuthCreate,
): RegistryAuthRecord {
  return inTransaction(deps, (s) => {
    if (s.registryAuthByName(accountId, input.name)) {
      throw new ServiceError(
        "CONFLICT",
        `name: a container registry auth named "${input.name}" already exists`,
        {
          field: "name",
        },
      );
    }
    const record: RegistryAuthRecord = {
      ...input,
      id: deps.ids.registryAuth(),
      accountId,
      createdAt: deps.clock.now(),
    };
    s.putRegistryAuth(record);
    return record;
  });
}

/** GraphQL only (REST has no update, as the real service): replaces the credentials. */
export function updateRegistryAuth(
  deps: ServiceDeps,
  accountId: string,
  authId: string,
  credentials: RegistryAuthCredentials,
): RegistryAuthRecord {
  return inTransaction(deps, (s) => {
    const record = { ...getRegistryAuth(deps, accountId, authId), ...credentials };
    s.putRegistryAuth(record);
    return record;
  });
}

/** Refused while a template pulls its image with these credentials. */
export function deleteRegistryAuth(deps: ServiceDeps, accountId: string, authId: string): void {
  inTransaction(deps, (s) => {
    getRegistryAuth(deps, accountId, authId);
    const users = s.templateIdsUsingAuth(accountId, authId);
    if (users.length > 0) {
      throw new ServiceError(
        "IN_USE",
        `container registry auth ${authId} is used by template(s) ${users.join(", ")}`,
        { field: "containerRegistryAuthId" },
      );
    }
    s.registryAuths.delete(accountId, authId);
  });
}
