import { z } from "zod";
import type * as api from "../public-types";
import { ResourceName } from "./common";

/** The record: credentials are never returned, by REST or GraphQL. */
export const ContainerRegistryAuth = z.object({ id: z.string(), name: z.string() });
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type ContainerRegistryAuth = api.ContainerRegistryAuth;
export const ContainerRegistryAuthList = z.array(ContainerRegistryAuth);

/** Bounds well above real credentials (a cloud service-account key used as a password is ~2-3 KB). */
export const REGISTRY_USERNAME_MAX_LENGTH = 1024;
export const REGISTRY_PASSWORD_MAX_LENGTH = 16_384;

/** POST /containerregistryauth; also GraphQL saveRegistryAuth(input). The name is unique per account. */
export const ContainerRegistryAuthCreateInput = z.strictObject({
  name: ResourceName,
  username: z.string().min(1).max(REGISTRY_USERNAME_MAX_LENGTH),
  password: z.string().min(1).max(REGISTRY_PASSWORD_MAX_LENGTH),
});
export type ContainerRegistryAuthCreateInput = api.ContainerRegistryAuthCreateInput;

/** GraphQL updateRegistryAuth(input: {id, username, password}); REST has no update (as the real service). */
export const GqlRegistryAuthUpdateInput = z.strictObject({
  id: z.string().min(1),
  username: z.string().min(1).max(REGISTRY_USERNAME_MAX_LENGTH),
  password: z.string().min(1).max(REGISTRY_PASSWORD_MAX_LENGTH),
});
export type GqlRegistryAuthUpdateInput = api.GqlRegistryAuthUpdateInput;
