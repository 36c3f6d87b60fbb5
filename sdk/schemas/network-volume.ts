import { z } from "zod";
import { DataCenterId } from "./common";

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
export type NetworkVolume = z.infer<typeof NetworkVolume>;
export const NetworkVolumeList = z.array(NetworkVolume);

/** POST /networkvolumes; also GraphQL createNetworkVolume(input). */
export const NetworkVolumeCreateInput = z.strictObject({
  name: z.string().min(1).max(191),
  size: VolumeSize,
  dataCenterId: DataCenterId,
});
export type NetworkVolumeCreateInput = z.infer<typeof NetworkVolumeCreateInput>;

/** PATCH /networkvolumes/{id} and POST .../update: absent = unchanged; size must not shrink. */
export const NetworkVolumeUpdateInput = z.strictObject({
  name: z.string().min(1).max(191).optional(),
  size: VolumeSize.optional(),
  dataCenterId: notUpdatable(),
});
export type NetworkVolumeUpdateInput = z.infer<typeof NetworkVolumeUpdateInput>;

/** GraphQL updateNetworkVolume(input: {id, name, size}). */
export const GqlNetworkVolumeUpdateInput = z.strictObject({
  id: z.string().min(1),
  name: z.string().min(1).max(191).nullish(),
  size: VolumeSize.nullish(),
});
export type GqlNetworkVolumeUpdateInput = z.infer<typeof GqlNetworkVolumeUpdateInput>;

/** GraphQL deleteNetworkVolume(input: {id}). */
export const GqlNetworkVolumeDeleteInput = z.strictObject({ id: z.string().min(1) });
