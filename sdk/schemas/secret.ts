import { z } from "zod";
import type * as api from "../public-types";

/*
 * Secrets: account-scoped values that template and endpoint env reference as
 * `{{ RUNPOD_SECRET_<name> }}`, substituted when a worker or pod starts. The value is write-only:
 * no reply carries it.
 */

/** Name rules of the real service: a letter or `_` first, then letters, digits and `_.-/`; 1-191. */
export const SECRET_NAME_PATTERN = /^[a-zA-Z_][a-zA-Z0-9_.\-/]*$/;

export const SecretName = z
  .string()
  .min(1)
  .max(191)
  .regex(SECRET_NAME_PATTERN, "must start with a letter or _ and hold only letters, digits and _.-/")
  .refine(
    (name) => !name.toUpperCase().startsWith("RUNPOD"),
    "must not start with the reserved prefix RUNPOD",
  );

const utf8Bytes = (value: string) => new TextEncoder().encode(value).length;
/** Under 16 MiB of UTF-8. */
export const SecretValue = z
  .string()
  .min(1)
  .refine((value) => utf8Bytes(value) < 16 * 1024 * 1024, "must be smaller than 16 MiB");
/** At most 65,535 bytes of UTF-8. */
export const SecretDescription = z
  .string()
  .refine((value) => utf8Bytes(value) <= 65_535, "must be at most 65535 bytes");

/** GraphQL secretCreate(input). */
export const GqlSecretCreateInput = z.strictObject({
  name: SecretName,
  value: SecretValue,
  description: SecretDescription.nullish(),
});
export type GqlSecretCreateInput = api.GqlSecretCreateInput;

/** GraphQL secretValueUpdate(input): rotates the value (workers started after it get the new one). */
export const GqlSecretValueUpdateInput = z.strictObject({ id: z.string().min(1), value: SecretValue });
export type GqlSecretValueUpdateInput = api.GqlSecretValueUpdateInput;

/** GraphQL secretDescriptionUpdate(input). */
export const GqlSecretDescriptionUpdateInput = z.strictObject({
  id: z.string().min(1),
  description: SecretDescription,
});
export type GqlSecretDescriptionUpdateInput = api.GqlSecretDescriptionUpdateInput;

/** GraphQL Secret: never a value. */
export const GqlSecret = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullish(),
  /** ISO-8601 */
  createdAt: z.string(),
  updatedAt: z.string().nullish(),
});
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type GqlSecret = api.GqlSecret;
