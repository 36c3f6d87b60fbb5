import { z } from "zod";
import { type NetworkVolume, NetworkVolumeCreateInput, type NetworkVolumeUpdateInput } from "../sdk/schemas";
import type { CheckFailure, InputSpec } from "./check";
import { hostContext, type ProviderContext } from "./context";
import { ProviderError } from "./errors";
import {
  ADOPT_ID,
  adoptIdInput,
  deleteWithin,
  implement,
  orNull,
  type ResourceDefinition,
} from "./implement";
import { isUnknown } from "./unknowns";

const fields = NetworkVolumeCreateInput.shape;

/** Inputs of NetworkVolume (REST /networkvolumes). */
export const NetworkVolumeInputs = z.strictObject({
  name: fields.name
    .optional()
    .describe("Name of the volume. Default: the resource name plus a random suffix."),
  size: fields.size.describe("Size in GB (0 to 4000). It can only grow: a smaller size is refused."),
  dataCenterId: fields.dataCenterId.describe(
    "Data center holding the volume. Changing it replaces the volume.",
  ),
  adoptId: adoptIdInput(
    "Id of an existing volume to take over instead of creating one (`pulumi import` does not work for dynamic resources).",
  ),
});
export type NetworkVolumeInputs = z.input<typeof NetworkVolumeInputs>;

export const networkVolumeSpec: InputSpec = {
  type: "NetworkVolume",
  schema: NetworkVolumeInputs,
  defaults: {},
  createOnly: [ADOPT_ID],
  rules: (news, olds) => {
    const failures: CheckFailure[] = [];
    const before = olds?.size;
    const after = news.size;
    if (typeof before === "number" && typeof after === "number" && !isUnknown(after) && after < before) {
      failures.push({
        property: "size",
        reason: `size: a network volume can only grow (from ${before} GB, not to ${after} GB)`,
      });
    }
    return failures;
  },
};

export function networkVolumeDefinition(): ResourceDefinition<NetworkVolume> {
  return {
    noun: "network volume",
    spec: networkVolumeSpec,
    replaceOnChange: ["dataCenterId"],
    uniqueName: false,
    fetch: (call, id) => orNull(() => call.api.networkVolumes.get(id)),
    create: (call, inputs) =>
      call.api.networkVolumes.create({
        name: String(inputs.name),
        size: Number(inputs.size),
        dataCenterId: inputs.dataCenterId as NetworkVolumeCreateInput["dataCenterId"],
      }),
    apply: async (call, id, current, inputs) => {
      if (inputs.dataCenterId !== current.dataCenterId) {
        throw new ProviderError(
          "VALIDATION",
          `${call.operation}: volume ${id} is in ${current.dataCenterId}; a volume cannot move (set dataCenterId to ${current.dataCenterId})`,
          { operation: call.operation, field: "dataCenterId" },
        );
      }
      // PATCH is partial: send only what differs, so an unchanged size is not refused as "not larger".
      const patch: NetworkVolumeUpdateInput = {};
      if (inputs.name !== current.name) patch.name = String(inputs.name);
      if (inputs.size !== current.size) patch.size = Number(inputs.size);
      if (Object.keys(patch).length === 0) return current;
      return call.api.networkVolumes.update(id, patch);
    },
    // Attached to an endpoint or pod: wait for it to be detached (e.g. by a delete in the same run).
    remove: (call, id) => deleteWithin(call, () => call.api.networkVolumes.delete(id)),
    idOf: (record) => record.id,
    nameOf: (record) => record.name,
    outputs: (record) => ({ name: record.name, size: record.size, dataCenterId: record.dataCenterId }),
  };
}

export function createNetworkVolumeProvider(context: ProviderContext) {
  return implement(networkVolumeDefinition(), context);
}

/** What Pulumi's provider host loads (see provider/dynamic.ts). */
export const networkVolumeProvider = createNetworkVolumeProvider(hostContext());
