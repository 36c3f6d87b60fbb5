import { z } from "zod";
import type * as api from "../public-types";

/** GraphQL updateUserSettings(input): the account's SSH public keys, one per line. */
export const GqlUserSettingsInput = z.strictObject({
  pubKey: z.string().max(20_000).nullish(),
});
export type GqlUserSettingsInput = api.GqlUserSettingsInput;

/** GraphQL User fields of `myself` beside its lists. */
export const GqlUser = z.object({
  id: z.string(),
  pubKey: z.string().nullish(),
});
export type GqlUser = z.infer<typeof GqlUser>;
