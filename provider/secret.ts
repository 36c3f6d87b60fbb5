import { join } from "node:path";
import { z } from "zod";
import { SecretDescription, SecretName, type GqlSecret as SecretRecord, SecretValue } from "../sdk/schemas";
import { type InputSpec, type Props, parseInputs } from "./check";
import { hostContext, type ProviderContext } from "./context";
import { forwardingProvider, packageSpecifier } from "./dynamic";
import { ADOPT_ID, adoptIdInput, implement, type ResourceDefinition, refuseUnchangeable } from "./implement";
import type { SecretArgs, SecretState } from "./public-types";
import { outputKeys } from "./resource";

// Arguments ---------------------------------------------------------------------------------------

/**
 * Inputs of Secret (GraphQL secretCreate / secretValueUpdate / secretDescriptionUpdate / secretDelete).
 * The service never returns a value, so refresh cannot see it drift; a new value or description
 * updates in place; a new name replaces the secret.
 */
export const SecretInputs = z.strictObject({
  name: SecretName.optional().describe(
    "Name, unique in the account; env references it as `{{ RUNPOD_SECRET_<name> }}`. Default: the resource name plus a generated suffix. Changing it replaces the secret.",
  ),
  value: SecretValue.describe(
    "The secret value. Stored only as a secret; never readable back from the service.",
  ),
  description: SecretDescription.optional().describe("What the secret is for."),
  adoptId: adoptIdInput("Id of an existing secret to take over; its value is set to this one."),
});
/** The desired configuration: the arguments and a name. */
export type SecretDesired = z.output<typeof SecretInputs> & { name: string };

// State -------------------------------------------------------------------------------------------

/** Outputs the service computes. */
export const SecretComputed = z.object({
  reference: z
    .string()
    .describe("What to put in an env value to use the secret: `{{ RUNPOD_SECRET_<name> }}`."),
  createdAt: z.string().describe("When the secret was created (ISO-8601)."),
});

export const secretSpec = {
  type: "Secret",
  schema: SecretInputs,
  computed: SecretComputed,
  secrets: ["value"],
  replaceOnChange: ["name"],
  uniqueName: true,
  createOnly: [ADOPT_ID],
} satisfies InputSpec;

// CRUD --------------------------------------------------------------------------------------------

export function secretDefinition(): ResourceDefinition<SecretDesired, SecretRecord> {
  return {
    noun: "secret",
    spec: secretSpec,
    desired: (props) => parseInputs(secretSpec, props),
    fetch: async (call, id) => (await call.api.secrets.list()).find((s) => s.id === id) ?? null,
    create: async (call, desired) =>
      call.api.secrets.create({
        name: desired.name,
        value: desired.value,
        ...(desired.description !== undefined ? { description: desired.description } : {}),
      }),
    apply: async (call, id, current, desired, previous) => {
      if (desired.name !== current.name) {
        refuseUnchangeable(call, "name", {
          subject: `secret ${id}`,
          is: `is named ${current.name}`,
          rule: "its name cannot change",
          fix: `omit name or set it to ${current.name}`,
        });
      }
      let record = current;
      // Adoption and drift cannot be seen on a write-only value: a value not known to be this one is set.
      if (previous.value !== desired.value)
        record = await call.api.secrets.updateValue({ id, value: desired.value });
      const description = desired.description ?? "";
      if ((record.description ?? "") !== description) {
        record = await call.api.secrets.updateDescription({ id, description });
      }
      return record;
    },
    remove: (call, id) => call.api.secrets.delete(id),
    findByName: async (call, name) => (await call.api.secrets.list()).find((s) => s.name === name),
    inventory: async (call) => (await call.api.secrets.list()).map(({ id, name }) => ({ id, name })),
    idOf: (record) => record.id,
    nameOf: (record) => record.name,
    outputs: secretOutputs,
  };
}

export function createSecretProvider(context: ProviderContext) {
  return implement(secretDefinition(), context);
}

/** What Pulumi's provider host loads (through provider/secret-provider.ts, see provider/dynamic.ts). */
export const secretProvider = createSecretProvider(hostContext());

// The Resource class ------------------------------------------------------------------------------

/** The provider object Pulumi serializes into the state (see provider/dynamic.ts). */
export const secretForwarder = forwardingProvider(
  packageSpecifier(join(__dirname, "secret-provider")),
  "secretProvider",
);

/** Every output: the inputs, adoptId and the computed fields. */
export const SECRET_OUTPUTS = outputKeys(secretSpec);

// Pure mappers ------------------------------------------------------------------------------------

/** The value is write-only on the service: the last applied one is kept. */
export function secretOutputs(record: SecretRecord, previous: Props): Record<string, unknown> {
  return {
    name: record.name,
    value: typeof previous.value === "string" ? previous.value : null,
    description: record.description ? record.description : null,
    reference: `{{ RUNPOD_SECRET_${record.name} }}`,
    createdAt: record.createdAt,
  };
}

export type { SecretArgs, SecretState };
