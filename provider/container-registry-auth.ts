import { join } from "node:path";
import { z } from "zod";
import {
  ContainerRegistryAuthCreateInput,
  type ContainerRegistryAuth as RegistryAuthRecord,
} from "../sdk/schemas";
import { sameName } from "../sdk/schemas/common";
import { type InputSpec, type Props, parseInputs } from "./check";
import { hostContext, type ProviderContext } from "./context";
import { forwardingProvider, packageSpecifier } from "./dynamic";
import {
  ADOPT_ID,
  adoptIdInput,
  type Call,
  type Dependent,
  implement,
  orNull,
  type ResourceDefinition,
  refuseUnchangeable,
} from "./implement";
import type { ContainerRegistryAuthArgs, ContainerRegistryAuthState } from "./public-types";
import { outputKeys } from "./resource";

// Arguments ---------------------------------------------------------------------------------------

const fields = ContainerRegistryAuthCreateInput.shape;

/**
 * Inputs of ContainerRegistryAuth (REST /containerregistryauth). The service never returns the
 * credentials, so refresh cannot see them drift; changing them updates in place through GraphQL
 * updateRegistryAuth (REST has no update) instead of replacing the resource, so templates that use
 * it keep working. The name cannot change in place: a new name replaces it (the new one is created
 * first and the templates move over before the old one is deleted).
 */
export const ContainerRegistryAuthInputs = z.strictObject({
  name: fields.name
    .optional()
    .describe(
      'Name, unique in the account (in either spelling). Stored without surrounding white space and in composed Unicode (NFC; " web " is "web"). Default: the resource name plus a generated suffix. Changing it replaces the resource.',
    ),
  username: fields.username.describe("Registry user name."),
  password: fields.password.describe("Registry password or token. Stored only as a secret."),
  adoptId: adoptIdInput(
    "Id of existing registry credentials to take over; their username and password are set to these.",
  ),
});
/** The desired configuration: the arguments and a name. */
export type ContainerRegistryAuthDesired = z.output<typeof ContainerRegistryAuthInputs> & { name: string };

// State -------------------------------------------------------------------------------------------

export const containerRegistryAuthSpec = {
  type: "ContainerRegistryAuth",
  schema: ContainerRegistryAuthInputs,
  secrets: ["password"],
  replaceOnChange: ["name"],
  uniqueName: true,
  createOnly: [ADOPT_ID],
} satisfies InputSpec;

// CRUD --------------------------------------------------------------------------------------------

export function containerRegistryAuthDefinition(): ResourceDefinition<
  ContainerRegistryAuthDesired,
  RegistryAuthRecord
> {
  return {
    noun: "container registry auth",
    spec: containerRegistryAuthSpec,
    desired: (props) => parseInputs(containerRegistryAuthSpec, props),
    fetch: (call, id) => orNull(() => call.api.registryAuths.get(id)),
    create: (call, desired) => call.api.registryAuths.create(toCreateInput(desired)),
    apply: async (call, id, current, desired) => {
      if (!sameName(desired.name, current.name)) {
        refuseUnchangeable(call, "name", {
          subject: `registry auth ${id}`,
          is: `is named ${current.name}`,
          rule: "its name cannot change",
          fix: `omit name or set it to ${current.name}`,
        });
      }
      await call.api.registryAuths.updateCredentials({
        id,
        username: desired.username,
        password: desired.password,
      });
      return current;
    },
    remove: (call, id) => call.api.registryAuths.delete(id),
    dependents: registryAuthUsers,
    findByName: async (call, name) =>
      (await call.api.registryAuths.list()).find((a) => sameName(a.name, name)),
    inventory: async (call) => (await call.api.registryAuths.list()).map(({ id, name }) => ({ id, name })),
    idOf: (record) => record.id,
    nameOf: (record) => record.name,
    outputs: registryAuthOutputs,
  };
}

/** Templates that pull their image with the credentials (nothing marks a template as leaving). */
async function registryAuthUsers(call: Call, id: string): Promise<Dependent[]> {
  const templates = await call.api.templates.list();
  return templates
    .filter((t) => t.containerRegistryAuthId === id)
    .map((t) => ({ noun: "template", id: t.id, name: t.name, leaving: false }));
}

export function createContainerRegistryAuthProvider(context: ProviderContext) {
  return implement(containerRegistryAuthDefinition(), context);
}

/** What Pulumi's provider host loads (through provider/container-registry-auth-provider.ts). */
export const containerRegistryAuthProvider = createContainerRegistryAuthProvider(hostContext());

// The Resource class ------------------------------------------------------------------------------

/** The provider object Pulumi serializes into the state (see provider/dynamic.ts). */
export const containerRegistryAuthForwarder = forwardingProvider(
  packageSpecifier(join(__dirname, "container-registry-auth-provider")),
  "containerRegistryAuthProvider",
);

/** Every output: the inputs and adoptId. */
export const CONTAINER_REGISTRY_AUTH_OUTPUTS = outputKeys(containerRegistryAuthSpec);

// Pure mappers ------------------------------------------------------------------------------------

export function toCreateInput(desired: ContainerRegistryAuthDesired): ContainerRegistryAuthCreateInput {
  return { name: desired.name, username: desired.username, password: desired.password };
}

/** username and password are write-only on the service: the last applied values are kept. */
export function registryAuthOutputs(
  record: RegistryAuthRecord,
  previous: Props,
): { name: string; username: string | null; password: string | null } {
  return {
    name: record.name,
    username: typeof previous.username === "string" ? previous.username : null,
    password: typeof previous.password === "string" ? previous.password : null,
  };
}

export type { ContainerRegistryAuthArgs, ContainerRegistryAuthState };
