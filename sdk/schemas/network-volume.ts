import { z } from "zod";
import type * as api from "../public-types";
import { DataCenterId, ResourceName } from "./common";
import * as defaults from "./defaults";

/** Size in GB: 0..4000. On update it may only grow. */
export const VolumeSize = z.int().min(0).max(4000);

const notUpdatable = () =>
  z.never({ error: "is not updatable; create a new network volume instead" }).optional();

/** REST and GraphQL record. */
export const NetworkVolume = z.object({
  id: z.string(),
  name: z.string(),
  size: z.number().int(),
  dataCenterId: z.string(),
});
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type NetworkVolume = api.NetworkVolume;
export const NetworkVolumeList = z.array(NetworkVolume);

/** The storage behind a volume (GraphQL `storageType`). */
export const StorageType = z.enum(["CEPH_FS", "DDN", "MOOSE_FS", "ONE_FS", "PURE", "VAST"]);
export type StorageType = z.infer<typeof StorageType>;

/**
 * The storage type the local service gives a volume created with `isNextGenStorage: true`, and any
 * other. runpodkit's provider reads these two back as next-gen and standard storage; any other type
 * says nothing about it (the last known `isNextGenStorage` stands), so a type this package does not
 * know never shows as a change of storage, and never as a replacement.
 */
export const NEXT_GEN_STORAGE_TYPE: StorageType = defaults.NEXT_GEN_STORAGE_TYPE;
export const STANDARD_STORAGE_TYPE: StorageType = defaults.STANDARD_STORAGE_TYPE;

/** Whether a storage type is next-gen storage; null when the service did not say or the type is not one of the two. */
export function isNextGenStorageType(storageType: string | null | undefined): boolean | null {
  if (storageType === NEXT_GEN_STORAGE_TYPE) return true;
  if (storageType === STANDARD_STORAGE_TYPE) return false;
  return null;
}

/**
 * GraphQL NetworkVolume: the REST record plus `storageType`, which only GraphQL shows (nullish: a
 * service may leave it out; a type this package does not know reads as null rather than failing the
 * read, and the provider then keeps the last known `isNextGenStorage`).
 */
export const GqlNetworkVolume = NetworkVolume.extend({ storageType: StorageType.nullish().catch(null) });
// The generated plain type (equal to the schema's, by a type test): it holds where zod cannot be reached.
export type GqlNetworkVolume = api.GqlNetworkVolume;

/** POST /networkvolumes (GraphQL createNetworkVolume also takes isNextGenStorage, see below). */
export const NetworkVolumeCreateInput = z.strictObject({
  name: ResourceName,
  size: VolumeSize,
  dataCenterId: DataCenterId,
});
export type NetworkVolumeCreateInput = api.NetworkVolumeCreateInput;

/**
 * GraphQL createNetworkVolume(input): the REST fields plus `isNextGenStorage`, which REST does not
 * take. The storage cannot be changed after creation (no update carries it).
 */
export const GqlNetworkVolumeCreateInput = NetworkVolumeCreateInput.extend({
  isNextGenStorage: z.boolean().nullish(),
});
export type GqlNetworkVolumeCreateInput = api.GqlNetworkVolumeCreateInput;

/** PATCH /networkvolumes/{id} and POST .../update: absent = unchanged; size must not shrink. */
export const NetworkVolumeUpdateInput = z.strictObject({
  name: ResourceName.optional(),
  size: VolumeSize.optional(),
  dataCenterId: notUpdatable(),
});
export type NetworkVolumeUpdateInput = api.NetworkVolumeUpdateInput;

/** GraphQL updateNetworkVolume(input: {id, name, size}). */
export const GqlNetworkVolumeUpdateInput = z.strictObject({
  id: z.string().min(1),
  name: ResourceName.nullish(),
  size: VolumeSize.nullish(),
});
export type GqlNetworkVolumeUpdateInput = api.GqlNetworkVolumeUpdateInput;

/** GraphQL deleteNetworkVolume(input: {id}). */
export const GqlNetworkVolumeDeleteInput = z.strictObject({ id: z.string().min(1) });
