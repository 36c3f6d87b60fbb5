import type { ServiceDeps } from "../deps";
import { ServiceError } from "../domain/errors";

/**
 * The one place a credential becomes an account. Accepts a raw key or an `Authorization` value with
 * or without `Bearer `. The key never appears in the error.
 */
export function accountOf(deps: ServiceDeps, credential: string | undefined | null): string {
  const accountId = deps.accounts.resolve(credential);
  if (!accountId) {
    throw new ServiceError(
      "UNAUTHORIZED",
      credential ? "Unauthorized: the API key is not valid" : "Unauthorized: an API key is required",
    );
  }
  return accountId;
}

/** REST v1: `Authorization: Bearer <key>`. */
export function restAccountOf(deps: ServiceDeps, authorization: string | undefined): string {
  return accountOf(deps, authorization);
}

/** GraphQL: `?api_key=` (the spec), or a Bearer header as the real service also accepts. */
export function graphqlAccountOf(
  deps: ServiceDeps,
  apiKeyParam: string | undefined,
  authorization: string | undefined,
): string {
  return accountOf(deps, apiKeyParam ?? authorization);
}
