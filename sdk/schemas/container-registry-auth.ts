import { z } from "zod";

/** The record: credentials are never returned, by REST or GraphQL. */
export const ContainerRegistryAuth = z.object({ id: z.string(), name: z.string() });
export type ContainerRegistryAuth = z.infer<typeof ContainerRegistryAuth>;
export const ContainerRegistryAuthList = z.array(ContainerRegistryAuth);

/** POST /containerregistryauth; also GraphQL saveRegistryAuth(input). The name is unique per account. */
export const ContainerRegistryAuthCreateInput = z.strictObject({
  name: z.string().min(1).max(191),
  username: z.string().min(1),
  password: z.string().min(1),
});
export type ContainerRegistryAuthCreateInput = z.infer<typeof ContainerRegistryAuthCreateInput>;

/** GraphQL updateRegistryAuth(input: {id, username, password}); REST has no update (as the real service). */
export const GqlRegistryAuthUpdateInput = z.strictObject({
  id: z.string().min(1),
  username: z.string().min(1),
  password: z.string().min(1),
});
export type GqlRegistryAuthUpdateInput = z.infer<typeof GqlRegistryAuthUpdateInput>;
