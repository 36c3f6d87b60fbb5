import { join } from "node:path";
import { z } from "zod";
import {
  type GqlNetworkVolume,
  isNextGenStorageType,
  NetworkVolumeCreateInput,
  type NetworkVolume as NetworkVolumeRest,
  type NetworkVolumeUpdateInput,
} from "../sdk/schemas";
import { type CheckFailure, type InputSpec, type Props, parseInputs } from "./check";
import { hostContext, type ProviderContext } from "./context";
import { forwardingProvider, packageSpecifier } from "./dynamic";
import { endpointsUsing } from "./endpoint";
import {
  ADOPT_ID,
  adoptIdInput,
  type Call,
  implement,
  orNull,
  type ResourceDefinition,
  refuseUnchangeable,
  undoCreateOnFailure,
} from "./implement";
import type { NetworkVolumeArgs, NetworkVolumeState } from "./public-types";
import { outputKeys } from "./resource";
import { isUnknown } from "./unknowns";

// Arguments ---------------------------------------------------------------------------------------

const fields = NetworkVolumeCreateInput.shape;

/** Inputs of NetworkVolume (REST /networkvolumes). */
export const NetworkVolumeInputs = z.strictObject({
  name: fields.name
    .optional()
    .describe(
      'Name of the volume. Stored without surrounding white space and in composed Unicode (NFC; " web " is "web"). Default: the resource name plus a generated suffix.',
    ),
  size: fields.size.describe("Size in GB (0 to 4000). It can only grow: a smaller size is refused."),
  dataCenterId: fields.dataCenterId.describe(
    "Data center holding the volume. Changing it replaces the volume.",
  ),
  isNextGenStorage: z
    .boolean()
    .default(false)
    .describe(
      "Whether the volume is on next-gen storage (default false). The service cannot convert a volume's storage, so changing it replaces the volume. Created through GraphQL, the only create that takes it; read back from storageType.",
    ),
  adoptId: adoptIdInput(
    "Id of an existing volume to take over instead of creating one (`pulumi import` does not work for dynamic resources).",
  ),
});
/** The desired configuration: the arguments and a name. */
export type NetworkVolumeDesired = z.output<typeof NetworkVolumeInputs> & { name: string };

// State -------------------------------------------------------------------------------------------

/** Outputs the service computes. */
export const NetworkVolumeComputed = z.object({
  storageType: z
    .string()
    .nullable()
    .describe(
      "The storage behind the volume, e.g. VAST or MOOSE_FS (GraphQL `storageType`; null if not reported).",
    ),
});

/** A volume as the provider sees it: the REST record plus storageType from GraphQL (null: unknown). */
export type NetworkVolumeRecord = NetworkVolumeRest & { storageType: string | null };

export const networkVolumeSpec = {
  type: "NetworkVolume",
  schema: NetworkVolumeInputs,
  computed: NetworkVolumeComputed,
  replaceOnChange: ["dataCenterId", "isNextGenStorage"],
  uniqueName: false,
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
} satisfies InputSpec;

// CRUD --------------------------------------------------------------------------------------------

export function networkVolumeDefinition(): ResourceDefinition<NetworkVolumeDesired, NetworkVolumeRecord> {
  return {
    noun: "network volume",
    spec: networkVolumeSpec,
    desired: (props) => parseInputs(networkVolumeSpec, props),
    fetch: async (call, id) => {
      const record = await orNull(() => call.api.networkVolumes.get(id));
      return record && { ...record, storageType: await storageTypeOf(call, id) };
    },
    create: async (call, desired) => {
      // Only GraphQL's create takes isNextGenStorage; standard volumes keep the REST path.
      if (desired.isNextGenStorage) {
        const created = await call.api.networkVolumes.createGraphql({
          ...toCreateInput(desired),
          isNextGenStorage: true,
        });
        return { ...created, storageType: created.storageType ?? null };
      }
      const record = await call.api.networkVolumes.create(toCreateInput(desired));
      const made = {
        noun: "network volume",
        id: record.id,
        remove: () => call.api.networkVolumes.delete(record.id),
      };
      const step = {
        property: "isNextGenStorage",
        fix: "Its storage type is read over GraphQL (runpodkit:graphqlUrl); check that it answers, then run up again.",
      };
      return undoCreateOnFailure(call, made, step, async () => ({
        ...record,
        storageType: await storageTypeOf(call, record.id),
      }));
    },
    apply: async (call, id, current, desired) => {
      if (desired.dataCenterId !== current.dataCenterId) {
        refuseUnchangeable(call, "dataCenterId", {
          subject: `volume ${id}`,
          is: `is in ${current.dataCenterId}`,
          rule: "a volume cannot move",
          fix: `set dataCenterId to ${current.dataCenterId}`,
        });
      }
      // Reached only on adoption (a change of it replaces): the storage of a volume cannot change.
      const nextGen = isNextGenStorageType(current.storageType);
      if (nextGen !== null && nextGen !== desired.isNextGenStorage) {
        refuseUnchangeable(call, "isNextGenStorage", {
          subject: `volume ${id}`,
          is: `is on ${current.storageType} storage`,
          rule: "its storage cannot be converted",
          fix: `set isNextGenStorage to ${nextGen}`,
        });
      }
      const patch = toPatch(current, desired);
      if (Object.keys(patch).length === 0) return current;
      return { ...(await call.api.networkVolumes.update(id, patch)), storageType: current.storageType };
    },
    remove: (call, id) => call.api.networkVolumes.delete(id),
    dependents: (call, id) =>
      endpointsUsing(
        call,
        (e) => e.networkVolumeId === id || (e.networkVolumeIds ?? []).some((v) => v.networkVolumeId === id),
      ),
    inventory: async (call) =>
      (await call.api.networkVolumes.listGraphql()).map(({ id, name }) => ({ id, name })),
    idOf: (record) => record.id,
    nameOf: (record) => record.name,
    outputs: volumeOutputs,
  };
}

export function createNetworkVolumeProvider(context: ProviderContext) {
  return implement(networkVolumeDefinition(), context);
}

/** What Pulumi's provider host loads (through provider/network-volume-provider.ts, see provider/dynamic.ts). */
export const networkVolumeProvider = createNetworkVolumeProvider(hostContext());

// The Resource class ------------------------------------------------------------------------------

/** The provider object Pulumi serializes into the state (see provider/dynamic.ts). */
export const networkVolumeForwarder = forwardingProvider(
  packageSpecifier(join(__dirname, "network-volume-provider")),
  "networkVolumeProvider",
);

/** Every output: the inputs and adoptId. */
export const NETWORK_VOLUME_OUTPUTS = outputKeys(networkVolumeSpec);

// Pure mappers ------------------------------------------------------------------------------------

export function toCreateInput(desired: NetworkVolumeDesired): NetworkVolumeCreateInput {
  return { name: desired.name, size: desired.size, dataCenterId: desired.dataCenterId };
}

/** PATCH is partial: only what differs, so an unchanged size is not refused as "not larger". */
export function toPatch(
  current: NetworkVolumeRecord,
  desired: NetworkVolumeDesired,
): NetworkVolumeUpdateInput {
  const patch: NetworkVolumeUpdateInput = {};
  if (desired.name !== current.name) patch.name = desired.name;
  if (desired.size !== current.size) patch.size = desired.size;
  return patch;
}

export function volumeOutputs(
  record: NetworkVolumeRecord,
  previous: Props = {},
): Omit<NetworkVolumeState, "adoptId" | "dataCenterId"> & {
  dataCenterId: string;
} {
  // Not reported: the last known value stands.
  const reported = isNextGenStorageType(record.storageType);
  const known = typeof previous.isNextGenStorage === "boolean" ? previous.isNextGenStorage : false;
  return {
    name: record.name,
    size: record.size,
    dataCenterId: record.dataCenterId,
    isNextGenStorage: reported ?? known,
    storageType: record.storageType,
  };
}

/** storageType from GraphQL (REST does not show it); null when GraphQL does not list the volume. */
async function storageTypeOf(call: Call, id: string): Promise<string | null> {
  const volumes: GqlNetworkVolume[] = await call.api.networkVolumes.listGraphql();
  return volumes.find((v) => v.id === id)?.storageType ?? null;
}

export type { NetworkVolumeArgs, NetworkVolumeState };
