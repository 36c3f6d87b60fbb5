import { z } from "zod";
import { type ContainerRegistryAuth, ContainerRegistryAuthCreateInput } from "../sdk/schemas";
import type { InputSpec } from "./check";
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

const fields = ContainerRegistryAuthCreateInput.shape;

/**
 * Inputs of ContainerRegistryAuth (REST /containerregistryauth). The service never returns the
 * credentials, so refresh cannot see them drift; changing them updates in place through GraphQL
 * updateRegistryAuth (REST has no update) instead of replacing the resource, so templates that use
 * it keep working. The name cannot change: a new name replaces it.
 */
export const ContainerRegistryAuthInputs = z.strictObject({
  name: fields.name
    .optional()
    .describe(
      "Name, unique in the account. Default: the resource name plus a random suffix. Changing it replaces the resource.",
    ),
  username: fields.username.describe("Registry user name."),
  password: fields.password.describe("Registry password or token. Stored only as a secret."),
  adoptId: adoptIdInput(
    "Id of existing registry credentials to take over; their username and password are set to these.",
  ),
});
export type ContainerRegistryAuthInputs = z.input<typeof ContainerRegistryAuthInputs>;

export const containerRegistryAuthSpec: InputSpec = {
  type: "ContainerRegistryAuth",
  schema: ContainerRegistryAuthInputs,
  secrets: ["password"],
  defaults: {},
  createOnly: [ADOPT_ID],
};

export function containerRegistryAuthDefinition(): ResourceDefinition<ContainerRegistryAuth> {
  return {
    noun: "container registry auth",
    spec: containerRegistryAuthSpec,
    replaceOnChange: ["name"],
    uniqueName: true,
    fetch: (call, id) => orNull(() => call.api.registryAuths.get(id)),
    create: (call, inputs) =>
      call.api.registryAuths.create({
        name: String(inputs.name),
        username: String(inputs.username),
        password: String(inputs.password),
      }),
    apply: async (call, id, current, inputs) => {
      if (inputs.name !== current.name) {
        throw new ProviderError(
          "VALIDATION",
          `${call.operation}: registry auth ${id} is named ${current.name}; its name cannot change (omit name or set it to ${current.name})`,
          { operation: call.operation, field: "name" },
        );
      }
      await call.api.registryAuths.updateCredentials({
        id,
        username: String(inputs.username),
        password: String(inputs.password),
      });
      return current;
    },
    remove: (call, id) => deleteWithin(call, () => call.api.registryAuths.delete(id)),
    idOf: (record) => record.id,
    nameOf: (record) => record.name,
    // username and password are write-only on the service: the last applied values are kept.
    outputs: (record, previous) => ({
      name: record.name,
      username: previous.username ?? null,
      password: previous.password ?? null,
    }),
  };
}

export function createContainerRegistryAuthProvider(context: ProviderContext) {
  return implement(containerRegistryAuthDefinition(), context);
}

/** What Pulumi's provider host loads (see provider/dynamic.ts). */
export const containerRegistryAuthProvider = createContainerRegistryAuthProvider(hostContext());
