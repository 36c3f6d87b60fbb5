import type * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { checkInputs, type InputSpec, inputFields, normalizeInputs, type Props } from "./check";
import { configureFromHost, type ProviderSettings } from "./config";
import type { ManagementApi, ProviderContext } from "./context";
import { diffFields } from "./diff";
import { codeOf, isDeleteRefusal, ProviderError, toProviderError } from "./errors";
import { AUTO_NAMED, LOGICAL_NAME } from "./naming";
import { retryWithin } from "./retry";

/** The input naming an existing resource to take over instead of creating one. */
export const ADOPT_ID = "adoptId";

/** The schema of the adoptId input (every resource has one; `description` says what adopting does). */
export function adoptIdInput(description: string) {
  return z.string().min(1).optional().describe(description);
}

/** What a call of one resource's definition receives. */
export interface Call {
  api: ManagementApi;
  settings: ProviderSettings;
  context: ProviderContext;
  /** e.g. "create network volume my-volume", for errors. */
  operation: string;
}

/**
 * One resource, as the generic provider below needs it: the inputs, what cannot change in place, and
 * the service calls. Records are the service's; `outputs` maps one to the resource's outputs.
 */
export interface ResourceDefinition<R> {
  /** e.g. "network volume", for messages. */
  noun: string;
  spec: InputSpec;
  replaceOnChange: readonly string[];
  uniqueName: boolean;
  /** The record, or null when the service has no such resource. */
  fetch(call: Call, id: string): Promise<R | null>;
  create(call: Call, inputs: Props): Promise<R>;
  /** Applies the desired inputs to an existing record (update, and adoption after create verified it). */
  apply(call: Call, id: string, current: R, inputs: Props): Promise<R>;
  remove(call: Call, id: string, outputs: Props): Promise<void>;
  idOf(record: R): string;
  nameOf(record: R): string;
  /**
   * The WHOLE record as outputs: every input field the service reports and the computed fields.
   * `previous` supplies only what the service never returns (a password).
   */
  outputs(record: R, previous: Props, settings: ProviderSettings): Props;
}

/**
 * The dynamic provider of one resource: Pulumi's check/diff/create/read/update/delete mapped onto a
 * ResourceDefinition. Errors carry the operation and never a credential.
 */
export function implement<R>(definition: ResourceDefinition<R>, context: ProviderContext) {
  const { spec } = definition;
  const diffSpec = {
    fields: inputFields(spec).filter((field) => !(spec.createOnly ?? []).includes(field)),
    replaceOnChange: definition.replaceOnChange,
    uniqueName: definition.uniqueName,
  };

  async function run<T>(operation: string, body: (call: Call) => Promise<T>): Promise<T> {
    let settings: ProviderSettings | undefined;
    try {
      settings = context.settings();
      return await body({ api: context.api(settings), settings, context, operation });
    } catch (error) {
      throw toProviderError(error, operation, settings ? [settings.apiKey] : []);
    }
  }

  /** Outputs: every input field (null when absent), the record's view of them, bookkeeping. */
  function assemble(record: R, carried: Props, settings: ProviderSettings): Props {
    const out: Props = {};
    for (const field of inputFields(spec)) out[field] = carried[field] ?? null;
    Object.assign(out, definition.outputs(record, carried, settings));
    out[ADOPT_ID] = carried[ADOPT_ID] ?? null;
    if (carried[LOGICAL_NAME] !== undefined) out[LOGICAL_NAME] = carried[LOGICAL_NAME];
    out[AUTO_NAMED] = carried[AUTO_NAMED] === true;
    return plainJson(out) as Props;
  }

  const label = (props: Props, id?: string) => `${definition.noun} ${String(props.name ?? id ?? "")}`.trim();

  const provider = {
    configure: async (req: pulumi.dynamic.ConfigureRequest) => configureFromHost(req.config),

    check: async (olds: Props, news: Props) => checkInputs(spec, olds, news, context.suffix),

    diff: async (_id: string, olds: Props, news: Props) => {
      const desired = { ...normalizeInputs(spec, news), [AUTO_NAMED]: news[AUTO_NAMED] };
      const result = diffFields(normalizeInputs(spec, olds), desired, diffSpec);
      return {
        changes: result.changes,
        replaces: result.replaces,
        deleteBeforeReplace: result.deleteBeforeReplace,
      };
    },

    create: async (inputs: Props) =>
      run(`create ${label(inputs)}`, async (call) => {
        const adoptId = inputs[ADOPT_ID];
        let record: R;
        let carried = inputs;
        if (typeof adoptId === "string" && adoptId !== "") {
          const existing = await definition.fetch(call, adoptId);
          if (existing === null) {
            throw new ProviderError(
              "NOT_FOUND",
              `${call.operation}: adoptId ${adoptId} names no ${definition.noun} of this account`,
              {
                operation: call.operation,
                field: ADOPT_ID,
              },
            );
          }
          // Adopting without an explicit name keeps the existing name rather than renaming it.
          if (inputs[AUTO_NAMED] === true) carried = { ...inputs, name: definition.nameOf(existing) };
          record = await definition.apply(call, adoptId, existing, carried);
        } else {
          record = await definition.create(call, inputs);
        }
        return { id: definition.idOf(record), outs: assemble(record, carried, call.settings) };
      }),

    read: async (id: string, props: Props = {}) =>
      run(`read ${definition.noun} ${id}`, async (call) => {
        const record = await definition.fetch(call, id);
        if (record === null) return { id: "", props: {} };
        const outs = assemble(record, props, call.settings);
        const inputs: Props = normalizeInputs(spec, outs);
        for (const key of [ADOPT_ID, LOGICAL_NAME, AUTO_NAMED]) {
          if (outs[key] !== null) inputs[key] = outs[key];
        }
        // A generated name is the program's input, not the service's: a rename made elsewhere stays
        // visible as drift (outputs) and the next up puts the generated name back.
        if (props[AUTO_NAMED] === true && typeof props.name === "string") inputs.name = props.name;
        return { id, props: outs, inputs: plainJson(inputs) as Props };
      }),

    update: async (id: string, _olds: Props, news: Props) =>
      run(`update ${label(news, id)}`, async (call) => {
        const current = await definition.fetch(call, id);
        if (current === null) {
          throw new ProviderError(
            "NOT_FOUND",
            `${call.operation}: ${definition.noun} ${id} no longer exists; run pulumi refresh`,
            {
              operation: call.operation,
            },
          );
        }
        const record = await definition.apply(call, id, current, news);
        return { outs: assemble(record, news, call.settings) };
      }),

    delete: async (id: string, props: Props) =>
      run(`delete ${label(props, id)}`, async (call) => {
        try {
          await definition.remove(call, id, props);
        } catch (error) {
          if (codeOf(error) === "NOT_FOUND") return; // already gone: the goal of delete is met
          throw error;
        }
      }),
  };
  return provider satisfies pulumi.dynamic.ResourceProvider;
}

/** Plain JSON for protobuf: undefined becomes null at any depth, Dates become ISO strings. */
export function plainJson(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(plainJson);
  if (typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = plainJson(item);
    return out;
  }
  if (typeof value === "bigint") return Number(value);
  if (typeof value === "function") return null;
  return value;
}

/**
 * Runs a delete, waiting out the service's refusals while something still uses the resource (often a
 * resource deleted in the same run) until runpodkit:deleteTimeout runs out.
 */
export function deleteWithin<T>(call: Call, attempt: () => Promise<T>): Promise<T> {
  return retryWithin(attempt, {
    operation: call.operation,
    boundMs: call.settings.deleteTimeoutMs,
    retryable: isDeleteRefusal,
    pause: call.context.pause,
  });
}

/** Runs `call` and turns a NOT_FOUND into null (a fetch that may find nothing). */
export async function orNull<T>(call: () => Promise<T>): Promise<T | null> {
  try {
    return await call();
  } catch (error) {
    if (codeOf(error) === "NOT_FOUND") return null;
    throw error;
  }
}
