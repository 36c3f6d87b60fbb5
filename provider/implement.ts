import { randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import type * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { sameName } from "../sdk/schemas/common";
import {
  ACCOUNT,
  ADOPTED_NAME,
  APPLIED,
  AUTO_NAMED,
  CARRIED_KEYS,
  CUSTOM_TIMEOUTS,
  LOGICAL_NAME,
  PARENT,
  REPLACE_ON_CHANGES,
  WRITTEN_BY,
} from "./bookkeeping";
import {
  type CheckFailure,
  canonicalProps,
  checkInputs,
  type InputSpec,
  inputFields,
  nameBasis,
  normalizeInputs,
  type Props,
} from "./check";
import { CONFIG_KEYS, configureFromHost, type ProviderSettings } from "./config";
import type { ManagementApi, ProviderContext } from "./context";
import { diffFields, replacesOnChanges } from "./diff";
import { packageVersion } from "./dynamic";
import {
  codeOf,
  isBrokenConnection,
  isBusy,
  isDeleteRefusal,
  isNameTaken,
  mayHaveActed,
  ProviderError,
  retryAfterOf,
  toProviderError,
} from "./errors";
import { isGeneratedName, nextGenerations } from "./naming";
import { retryWithin } from "./retry";
import { BUSY_BOUND_MS, deleteBoundMs, operationBoundMs } from "./timeouts";
import { containsUnknown } from "./unknowns";
import { refuseNewerState } from "./versions";

/** The input naming an existing resource to take over instead of creating one. */
export const ADOPT_ID = "adoptId";

/** The schema of the adoptId input (every resource has one; `description` says what adopting does). */
export function adoptIdInput(description: string) {
  return z.string().min(1).nullish().describe(description);
}

/** What a call of one resource's definition receives. */
export interface Call {
  api: ManagementApi;
  settings: ProviderSettings;
  context: ProviderContext;
  /** e.g. "create network volume my-volume", for errors. */
  operation: string;
  /**
   * The operation's bound (the resource's customTimeouts.<operation>, else its default), by
   * context.pause: a wait inside a definition's calls shares it instead of starting its own.
   */
  bound?: OperationBound;
}

/** An operation's bound: when it began, how long, and the option that sets it (for the error's hint). */
export interface OperationBound {
  startedAt: number;
  ms: number;
  option: string;
}

/** A resource that keeps another from being deleted (an endpoint using a template, ...). */
export interface Dependent {
  noun: string;
  id: string;
  name: string;
  /** On its way out (an endpoint scaled to zero, as its own delete does first): worth waiting for. */
  leaving: boolean;
}

/**
 * One resource, as the generic provider below needs it: the inputs, and the service calls. `D` is the
 * typed desired state (the schema's output), `R` the service's record; `outputs` maps a record to the
 * resource's outputs.
 */
export interface ResourceDefinition<D extends { name: string }, R> {
  /** e.g. "network volume", for messages. */
  noun: string;
  spec: InputSpec;
  /** The inputs check accepted, parsed by the resource's schema. */
  desired(props: Props): D;
  /** The record, or null when the service has no such resource. */
  fetch(call: Call, id: string): Promise<R | null>;
  create(call: Call, desired: D): Promise<R>;
  /**
   * Applies the desired inputs to an existing record (update, and adoption after create verified it).
   * `previous` is the old outputs ({} on adoption).
   */
  apply(call: Call, id: string, current: R, desired: D, previous: Props): Promise<R>;
  /** One attempt at deleting; refusals are waited out by the caller. */
  remove(call: Call, id: string, outputs: Props): Promise<void>;
  /**
   * Puts back what the attempts of a delete that failed changed (an endpoint scaled to zero gets its
   * worker counts back), so that a resource left in the stack still serves. Returns what it did, for
   * the error (also when putting back failed); undefined when nothing needed putting back, or it
   * cannot be told.
   */
  undoRemove?(call: Call, id: string, outputs: Props): Promise<string | undefined>;
  /** Who uses the resource, asked when a delete is refused as "in use". */
  dependents?(call: Call, id: string): Promise<Dependent[]>;
  /** Renames in place: lets a same-name replacement move the old one aside instead of deleting it first. */
  rename?(call: Call, id: string, name: string): Promise<void>;
  /** The record holding a (unique) name, for the message when it is taken. */
  findByName?(call: Call, name: string): Promise<R | undefined>;
  /**
   * Every such resource of the account, by id and name: listed after a create whose answer was lost
   * (a 5xx, a timeout), so that the one it may have made all the same is found by name and nothing is
   * created twice.
   */
  inventory?(call: Call): Promise<Listed[]>;
  /**
   * A create of a generated name carries a fresh mark (createMark), and the inventory reports each
   * record's (Listed.mark). A lost create then takes over only the record with its mark: a stack of
   * the same project and stack names elsewhere (another backend) generates the same names, and its
   * resource is not this one (for a unique name, the holder that refused this create). Undefined
   * when the mark does not fit (an env at its size limit): the create goes without one.
   */
  createMark?(desired: D, mark: string): D | undefined;
  idOf(record: R): string;
  nameOf(record: R): string;
  /**
   * The WHOLE record as outputs: every input field the service reports and the computed fields.
   * `previous` supplies only what the service never returns (a password) or which keys are managed.
   */
  outputs(record: R, previous: Props, settings: ProviderSettings): Props;
  /**
   * The outputs the provider's settings derive rather than the record (an endpoint's url, from
   * runpodkit:queueUrl), for the resource `id` with these outputs. diff compares them with the
   * outputs in state, so a changed setting is an update that rewrites them (no service change).
   */
  settingsOutputs?(id: string, outputs: Props, settings: ProviderSettings): Props;
}

/**
 * The steps of a create after the service made the resource `made.id`. If one fails, the resource is
 * removed again: Pulumi learns no id from a failed create, so it would stay outside the stack (a pod
 * billed by the hour) and the next up would make another. The error keeps the failure's code and
 * message and names the property whose step failed and the fix.
 */
export async function undoCreateOnFailure<T>(
  call: Call,
  made: { noun: string; id: string; remove: () => Promise<void> },
  step: { property: string; fix: string },
  body: () => Promise<T>,
): Promise<T> {
  try {
    return await body();
  } catch (error) {
    const failure = toProviderError(error, call.operation, [call.settings.apiKey]);
    const cause = failure.message.startsWith(`${call.operation}: `)
      ? failure.message.slice(call.operation.length + 2)
      : failure.message;
    let outcome = `the ${made.noun} was deleted again, so nothing is left behind`;
    try {
      await made.remove();
    } catch (undoError) {
      const undo = toProviderError(undoError, call.operation, [call.settings.apiKey]).message;
      outcome = `deleting it again failed too (${undo}), so ${made.noun} ${made.id} is left outside the stack: delete it, or take it over with adoptId: "${made.id}"`;
    }
    throw new ProviderError(
      failure.code,
      `${call.operation}: ${step.property}: the ${made.noun} was created (id ${made.id}) but this step failed: ${cause}; ${outcome}. ${step.fix}`,
      {
        operation: call.operation,
        field: step.property,
        ...(failure.serviceCode === undefined ? {} : { serviceCode: failure.serviceCode }),
        cause: error,
      },
    );
  }
}

/**
 * Refuses to adopt (or update) a resource whose `property` differs from the program's when the service
 * cannot change it in place: success would be reported while the service keeps its value, and the next
 * up would replace the resource. `is` says what the resource is, `rule` why it cannot change, `fix`
 * what to set.
 */
export function refuseUnchangeable(
  call: Call,
  property: string,
  said: { subject: string; is: string; rule: string; fix: string },
): never {
  throw new ProviderError(
    "VALIDATION",
    `${call.operation}: ${said.subject} ${said.is}; ${said.rule} (${said.fix})`,
    { operation: call.operation, field: property },
  );
}

/** The name a same-name replacement moves the old resource to while the new one takes its name. */
export function asideName(name: string, id: string): string {
  const tail = `-replaced-${id}`;
  // Whole characters (code points, as the 191 bound counts them): a cut surrogate pair is unprintable.
  const kept = Array.from(name).slice(0, Math.max(1, 191 - Array.from(tail).length));
  return `${kept.join("")}${tail}`;
}

/**
 * The dynamic provider of one resource: Pulumi's check/diff/create/read/update/delete mapped onto a
 * ResourceDefinition. Errors carry the operation and never a credential.
 */
export function implement<D extends { name: string }, R>(
  definition: ResourceDefinition<D, R>,
  context: ProviderContext,
) {
  const { spec, noun } = definition;
  const diffSpec = {
    fields: inputFields(spec).filter((field) => !(spec.createOnly ?? []).includes(field)),
    replaceOnChange: spec.replaceOnChange,
  };
  /**
   * Same-name replacements announced by diff in this provider process: name -> id of the resource
   * being replaced. Pulumi's engine calls diff and then, for the replacement, create in the same
   * provider host during one deployment; create uses this to tell the resource it replaces (which it
   * may rename aside) from an unrelated one that happens to hold the name (which it never touches).
   */
  const replacing = new Map<string, string>();
  /**
   * Ids diff announced a replacement of in this process: a resource found by name after a lost create
   * answer is never one of them (a replacement may share its predecessor's name).
   */
  const replaced = new Set<string>();
  /**
   * adoptIds a create in this process must not adopt: those a resource already in the stack is
   * registered with (check had its old inputs), and ids deleted here. Pulumi checks a replacement
   * with no old inputs, so its create cannot be told from the first one by its inputs; adopting the
   * id again would take over the very resource being replaced (deleted at the end of the update) or
   * look for one deleted first (deleteBeforeReplace). Such a create makes a new resource instead.
   */
  const usedUp = new Set<string>();
  /**
   * Ids a create adopted in this process. A delete of one in the same update is the replaced half of a
   * replacement whose create took the same resource over again (`pulumi up --replace`, where Pulumi
   * asks no check with old inputs and no diff): the stack now holds that id, so it is not deleted.
   */
  const adoptedHere = new Set<string>();

  async function run<T>(operation: string, body: (call: Call) => Promise<T>): Promise<T> {
    let settings: ProviderSettings | undefined;
    try {
      settings = context.settings();
      return await body({ api: context.api(settings), settings, context, operation });
    } catch (error) {
      throw toProviderError(error, operation, settings ? [settings.apiKey] : []);
    }
  }

  /**
   * Outputs: every input field (null when absent), the record's view of them, bookkeeping; after a
   * create or update (`applied`), the inputs it applied.
   */
  function assemble(record: R, carried: Props, settings: ProviderSettings, applied?: Props): Props {
    const out: Props = {};
    for (const field of inputFields(spec)) out[field] = carried[field] ?? null;
    Object.assign(out, definition.outputs(record, carried, settings));
    out[ADOPT_ID] = carried[ADOPT_ID] ?? null;
    for (const key of CARRIED_KEYS) if (carried[key] !== undefined) out[key] = carried[key];
    out[AUTO_NAMED] = carried[AUTO_NAMED] === true;
    out[WRITTEN_BY] = packageVersion();
    if (typeof carried[ACCOUNT] === "string") out[ACCOUNT] = carried[ACCOUNT];
    if (typeof carried[ADOPTED_NAME] === "string") out[ADOPTED_NAME] = carried[ADOPTED_NAME];
    if (applied !== undefined) out[APPLIED] = appliedOf(applied);
    return plainProps(out);
  }

  /** The compared input fields of inputs, defaults filled: what APPLIED records. */
  function appliedOf(inputs: Props): Props {
    const normalized = normalizeInputs(spec, inputs);
    return Object.fromEntries(diffSpec.fields.map((field) => [field, normalized[field] ?? null]));
  }

  /**
   * What the program last asked for: the applied inputs recorded by the last create or update, or
   * (after a refresh, or state written before they were recorded) the input part of the outputs.
   */
  function lastApplied(olds: Props): Props {
    const applied = olds[APPLIED];
    const base = normalizeInputs(spec, olds);
    if (applied === null || typeof applied !== "object" || Array.isArray(applied)) return base;
    // In today's spelling (InputSpec.canonical): an input applied by an older version, spelled as
    // that version kept it ("US,US"), is the same configuration, not a change.
    const merged = { ...base, ...(applied as Props) };
    return canonicalProps(spec, merged);
  }

  /**
   * The inputs an update applies: the fields the program changed since it last applied them, and
   * for every other field the resource's live value. saveEndpoint is a full replace, and a field
   * under ignoreChanges arrives as its old value: sending it would undo a change made elsewhere (a
   * workersMax raised by an operator) whenever another field changes. A map (env) is taken key by
   * key the same way: a key under a nested ignoreChanges (`env.TOKEN`) arrives as its old value, and
   * keeps the value set elsewhere when the program changes another key. A live value the inputs'
   * schema refuses (gpuIds "" of GPU types set through REST) is not sent back; the program's stands.
   */
  function withLiveUnchanged(olds: Props, desired: Props, current: R, settings: ProviderSettings): Props {
    const before = lastApplied(olds);
    const wanted = normalizeInputs(spec, desired);
    const live = normalizeInputs(spec, definition.outputs(current, olds, settings));
    const out: Props = { ...desired };
    for (const field of diffSpec.fields) {
      const byItem = spec.listsByItem?.includes(field) === true;
      const value = unchangedLive(before[field], wanted[field], live[field], byItem);
      if (value === undefined || isDeepStrictEqual(value ?? null, wanted[field] ?? null)) continue;
      if (spec.schema.shape[field]?.safeParse(value).success) out[field] = value;
    }
    return out;
  }

  /**
   * The fields (map keys: `env.KEY`) an update overwrites after they were changed outside Pulumi: the
   * program changed them since its last apply, and the service holds a third value. A field the
   * program left keeps its live value (withLiveUnchanged), so it is never among them. From the
   * record update reads anyway: no call of its own. Secret fields are named without values.
   */
  function overwrittenElsewhere(
    olds: Props,
    desired: Props,
    current: R,
    settings: ProviderSettings,
  ): string[] {
    const before = lastApplied(olds);
    const wanted = normalizeInputs(spec, desired);
    const live = normalizeInputs(spec, definition.outputs(current, olds, settings));
    const secret = (field: string) => spec.secrets?.includes(field) === true;
    const said = (value: unknown) => JSON.stringify(value ?? null);
    const out: string[] = [];
    for (const field of diffSpec.fields) {
      const [b, w, l] = [before[field] ?? null, wanted[field] ?? null, live[field] ?? null];
      if (isDeepStrictEqual(b, w)) continue;
      if (isEntries(b) && isEntries(w) && isEntries(l)) {
        for (const key of new Set([...Object.keys(b), ...Object.keys(w)])) {
          const [kb, kw, kl] = [b[key] ?? null, w[key] ?? null, l[key] ?? null];
          if (isDeepStrictEqual(kb, kw) || isDeepStrictEqual(kl, kb) || isDeepStrictEqual(kl, kw)) continue;
          out.push(
            secret(field) ? `${field}.${key}` : `${field}.${key} (${said(kl)} there, now ${said(kw)})`,
          );
        }
        continue;
      }
      if (isDeepStrictEqual(l, b) || isDeepStrictEqual(l, w)) continue;
      out.push(secret(field) ? field : `${field} (${said(l)} there, now ${said(w)})`);
    }
    return out;
  }

  /**
   * Refuses to go on when the resource was created in another account than the key's: that key sees
   * none of it, so "not found" would be taken for "deleted" (a refresh drops it from the stack, a
   * destroy reports it gone and leaves it running, the next up makes a second one).
   */
  async function refuseOtherAccount(call: Call, id: string, props: Props): Promise<void> {
    const owner = props[ACCOUNT];
    if (!hasOwner(props)) return; // state written before owners were kept
    const current = await call.api.accountId();
    if (current === owner) return;
    const { key, env } = CONFIG_KEYS.apiKey;
    throw new ProviderError(
      "CONFIG",
      `${call.operation}: ${noun} ${String(props.name ?? id)} (id ${id}) was created in account ${owner}, but the API key is one of account ${current}, which cannot see it, so nothing was changed. Set ${key} (else the environment variable ${env}) to a key of account ${owner}. Only if that account's resources are gone for good, drop them from the stack with pulumi state delete.`,
      { operation: call.operation, field: key },
    );
  }

  /**
   * The key's account, to record as the resource's owner; undefined when the service would not say
   * (a key allowed less than `myself`, a service without it): the create or update goes on, and that
   * resource is then not guarded by refuseOtherAccount.
   */
  async function accountIfKnown(call: Call & { bound: OperationBound }): Promise<string | undefined> {
    try {
      // A busy service is waited out within the operation's bound, as the operation is: every create
      // of one up shares this one call, so a 429 on it would leave them all without an owner.
      return await whileBusy(call, () => call.api.accountId());
    } catch (error) {
      // Still busy at the bound: the operation would be too, so it ends here, before anything is made.
      if (error instanceof ProviderError && error.code === "TIMEOUT") throw error;
      return undefined;
    }
  }

  const label = (props: Props, id?: string) => `${noun} ${String(props.name ?? id ?? "")}`.trim();

  /**
   * A warning's subject: the operation and the resource as the program declared it. The CLI shows a
   * provider's warning under the stack, not the resource (a dynamic provider is not told its URN), so
   * two warnings of one up are told apart by this alone: the logical name, and the component it is
   * in (children of two components may share a logical name; their generated names differ only in the
   * digest).
   */
  function warningSubject(call: Call, props: Props): string {
    const logical = props[LOGICAL_NAME];
    if (typeof logical !== "string" || logical === "") return call.operation;
    const parent = props[PARENT];
    const within = typeof parent === "string" && parent !== "" ? ` in ${parent}` : "";
    return `${call.operation} (resource ${spec.type} "${logical}"${within})`;
  }

  /**
   * The new inputs as diff and update should see them. A generated name is ours to choose: when create
   * had to take a later generation (the first was taken), the outputs hold that one while the inputs
   * still propose the first; both are this resource's, so the name in the outputs stands. A resource
   * adopted without a name keeps the name it had (a rename made elsewhere since is put back to it).
   */
  function effective(olds: Props, news: Props): Props {
    if (news[AUTO_NAMED] !== true || olds[AUTO_NAMED] !== true) return news;
    const adopted = adoptedName(spec, olds);
    if (adopted !== undefined) return adopted === news.name ? news : { ...news, name: adopted };
    if (olds.name === news.name) return news;
    const basis = nameBasis(spec, normalizeInputs(spec, news));
    return isGeneratedName(olds.name, news, basis) ? { ...news, name: olds.name } : news;
  }

  /**
   * Whether an output the settings derive no longer matches them (a new runpodkit:queueUrl moves an
   * endpoint's url): without an update the outputs, and stack outputs made of them, keep the old one
   * until a refresh. An update with no field changed rewrites the outputs without changing the service.
   */
  function settingsMoved(id: string, olds: Props): boolean {
    if (definition.settingsOutputs === undefined) return false;
    let settings: ProviderSettings;
    try {
      settings = context.settings();
    } catch {
      return false; // a config check reports
    }
    return Object.entries(definition.settingsOutputs(id, olds, settings)).some(
      ([key, value]) => olds[key] !== undefined && olds[key] !== null && !isDeepStrictEqual(olds[key], value),
    );
  }

  /** A delete refused because others use the resource: wait only if they are on their way out. */
  async function refuseIfStaying(call: Call, id: string, props: Props, refusal: unknown): Promise<never> {
    const staying = (await definition.dependents?.(call, id))?.filter((d) => !d.leaving) ?? [];
    if (staying.length === 0) throw refusal;
    const users = staying.map((d) => `${d.noun} ${d.name} (id ${d.id})`).join(", ");
    // A unique name the service cannot rename: runpodkit itself asks to delete first when a
    // replacement keeps the name, so only another name lets the replacement come first.
    const replacement =
      spec.uniqueName && definition.rename === undefined
        ? `If this delete is the first half of a replacement under the same name (${noun} names are unique in the account and cannot be moved aside, so the old one must go first, whether deleteBeforeReplace is yours or runpodkit's), give the replacement another name (or omit name, and runpodkit generates one): it is then created first and its users move over without downtime.`
        : `If this delete is the first half of a replacement forced with deleteBeforeReplace, remove that option: runpodkit then creates the replacement first${spec.uniqueName ? ` (a ${noun} with an explicit name is renamed aside meanwhile)` : ""} and moves its users over without downtime.`;
    throw new ProviderError(
      "IN_USE",
      `${call.operation}: ${noun} ${String(props.name ?? id)} (id ${id}) is still used by ${users}, so the service refuses to delete it, and nothing in this deployment is removing them. Repoint or delete them first. ${replacement}`,
      { operation: call.operation, field: "id", cause: refusal },
    );
  }

  /**
   * The failure of a delete, after undoRemove put back what its attempts changed: the resource stays
   * in the stack, and without this it would stay changed where the next up sees no difference.
   */
  async function undoneRemove(call: Call, id: string, props: Props, failure: unknown): Promise<unknown> {
    if (definition.undoRemove === undefined) return failure;
    // Whether anything was changed is unknown when the service cannot be read: the failure stands as is.
    const outcome = await definition.undoRemove(call, id, props).catch(() => undefined);
    if (outcome === undefined) return failure;
    const cause = toProviderError(failure, call.operation, [call.settings.apiKey]);
    return new ProviderError(cause.code, `${cause.message} (${outcome})`, {
      operation: cause.operation,
      ...(cause.field === undefined ? {} : { field: cause.field }),
      ...(cause.serviceCode === undefined ? {} : { serviceCode: cause.serviceCode }),
      cause: failure,
    });
  }

  async function nameTaken(call: Call, name: string, refusal: unknown): Promise<ProviderError> {
    const holder = await definition.findByName?.(call, name).catch(() => undefined);
    const holderId = holder === undefined ? undefined : definition.idOf(holder);
    const which = holderId === undefined ? "" : ` (id ${holderId})`;
    // A resource renamed in the program (or moved into or out of a component) without aliases is
    // a new URN to Pulumi: created first, its old self deleted last. Its explicit name is then held
    // by that old self, the likeliest holder in a stack, and aliases is the fix Pulumi itself offers.
    return new ProviderError(
      "NAME_TAKEN",
      `${call.operation}: a ${noun} named "${name}" already exists${which}, and ${noun} names are unique in the account. If it is this stack's own ${noun} under another resource name (you renamed the resource in the program, or moved it into or out of a component), tell Pulumi it is the same resource: add aliases: [{ name: "<its old resource name>" }] (or { parent: <its old parent> }, or { noParent: true }) to this resource's options, and it is updated in place instead of created again. Otherwise omit name to let runpodkit generate a unique one, choose another name, or take the existing one over with adoptId${holderId === undefined ? "" : `: "${holderId}"`}. If it is the ${noun} this resource replaces in a forced replacement (pulumi up --replace), set deleteBeforeReplace: true or omit name.`,
      { operation: call.operation, field: "name", cause: refusal },
    );
  }

  /**
   * Every generated name of a resource the program did not name is taken. The advice for a name the
   * program chose (omit name, aliases) does not apply: these names come from the project, stack and
   * resource name, so their holders are most likely what earlier stacks of the same names left.
   */
  async function generatedNamesTaken(call: Call, names: string[], refusal: unknown): Promise<ProviderError> {
    const listed = await definition.inventory?.(call).catch(() => undefined);
    // In generation order, as the creates tried them.
    const holders = names.flatMap((name) => (listed ?? []).filter((r) => sameName(r.name, name)));
    const which = holders.length > 0 ? ` (${holders.map((r) => `"${r.name}" id ${r.id}`).join(", ")})` : "";
    const example = holders[0]?.id ?? "<its id>";
    return new ProviderError(
      "NAME_TAKEN",
      `${call.operation}: every name runpodkit generates for this ${noun} ("${names[0]}" and its ${names.length - 1} further generations) is taken in the account${which}, and ${noun} names are unique in the account. The names come from the project, stack and resource name, so the holders are most likely ${noun}s left by earlier stacks of this project and stack name whose state went without a destroy (pulumi stack rm --force, a lost state), or by a stack of the same names in another backend. Delete those you no longer need (each frees a name), take one over with adoptId: "${example}", or give this resource a name.`,
      { operation: call.operation, field: "name", cause: refusal },
    );
  }

  /**
   * Creates the resource; a unique name held by the resource being replaced is moved aside first.
   * `sent.name` is the name of the last create sent (a generated name may take a later generation).
   */
  async function createFresh(call: Call, inputs: Props, sent: { name?: string }): Promise<R> {
    const desired = definition.desired(inputs);
    sent.name = desired.name;
    if (!spec.uniqueName) return definition.create(call, marked(inputs, desired, sent));
    if (inputs[AUTO_NAMED] === true) {
      // A generated name can be taken by this resource's own predecessor (a forced replacement keeps
      // the replace key) or an orphan: the next generation is as much this resource's name.
      const names = [
        desired.name,
        ...nextGenerations(inputs, nameBasis(spec, normalizeInputs(spec, inputs))),
      ];
      let refusal: unknown;
      for (const name of names) {
        try {
          sent.name = name;
          // Marked too: the holder of a unique generated name may be another stack's (see madeAnyway).
          return await definition.create(call, marked(inputs, { ...desired, name }, sent));
        } catch (error) {
          if (!isNameTaken(error)) throw error;
          refusal = error;
        }
      }
      throw await generatedNamesTaken(call, names, refusal);
    }
    // Kept until a create succeeds: an attempt retried while the service is busy moves it aside again.
    const predecessor = replacing.get(desired.name);
    let movedAside: string | undefined;
    if (predecessor !== undefined && definition.rename) {
      const holder = await definition.fetch(call, predecessor);
      if (holder !== null && sameName(definition.nameOf(holder), desired.name)) {
        await definition.rename(call, predecessor, asideName(desired.name, predecessor));
        movedAside = predecessor;
      }
    }
    try {
      const created = await definition.create(call, desired);
      replacing.delete(desired.name);
      return created;
    } catch (error) {
      if (movedAside !== undefined) {
        // Put the old one back under its name; the engine keeps it in state and retries later.
        await definition.rename?.(call, movedAside, desired.name).catch(() => undefined);
      }
      if (isNameTaken(error)) throw await nameTaken(call, desired.name, error);
      throw error;
    }
  }

  /**
   * `desired` with the create's mark, for a generated name of a kind that can carry one (see
   * createMark): one mark per create, the same when it is sent again or under a later generation.
   */
  function marked(inputs: Props, desired: D, sent: LostCreate): D {
    if (inputs[AUTO_NAMED] !== true || definition.createMark === undefined) return desired;
    const mark = sent.mark ?? randomUUID();
    const withMark = definition.createMark(desired, mark);
    if (withMark === undefined) return desired;
    sent.mark = mark;
    return withMark;
  }

  /**
   * Runs `body` again while the service is busy (429, 5xx) or a connection to it broke, within the
   * operation's bound. Every body is safe to run again: a create looks for what a lost one made first.
   */
  function whileBusy<T>(call: Call & { bound: OperationBound }, body: () => Promise<T>): Promise<T> {
    return retryWithin(body, {
      operation: call.operation,
      boundMs: call.bound.ms,
      startedAt: call.bound.startedAt,
      retryable: (error) => isBusy(error) || isBrokenConnection(error),
      pause: context.pause,
      waitAtLeast: retryAfterOf,
      hint: `The service stayed busy: run it again later, or give the resource a longer ${call.bound.option}.`,
    });
  }

  /** `call` with the bound of `operation` starting now: customTimeouts.<operation> of `props`, else 20 minutes. */
  function bounded(
    call: Call,
    props: Props,
    operation: "create" | "update",
  ): Call & { bound: OperationBound } {
    const ms = operationBoundMs(props, operation, BUSY_BOUND_MS);
    return { ...call, bound: { startedAt: context.pause.now(), ms, option: `customTimeouts.${operation}` } };
  }

  /**
   * createFresh, again while the service is busy. A create whose answer was lost may have been carried
   * out all the same, so before it is sent again the resource is looked for by the name it was sent
   * with: neither the retry nor the next up makes a second one. Looked for only after such a failure,
   * so a create that is answered costs no extra call.
   */
  async function createWhileBusy(call: Call & { bound: OperationBound }, inputs: Props): Promise<R> {
    const sent: LostCreate = {};
    const deadline = call.bound.startedAt + call.bound.ms;
    return whileBusy(call, async () => {
      // Found after a lost answer, then the take-over was busy: taken over again, never created anew.
      if (sent.found !== undefined && sent.name !== undefined) {
        const made = await takeOver(call, inputs, sent.name, sent.found);
        if (made !== undefined) return made;
        sent.found = undefined;
      }
      try {
        return await createFresh(call, inputs, sent);
      } catch (error) {
        if (!mayHaveActed(error) || sent.name === undefined || definition.inventory === undefined)
          throw error;
        const made = await madeAnyway(call, inputs, sent, sent.name, error, deadline);
        if (made === undefined) throw error;
        return made;
      }
    });
  }

  /**
   * Every resource of the kind, asked after a create whose answer was lost. A lookup that fails as
   * the create did (busy, a broken connection: the network or service still recovering) is asked
   * again until `deadline` (the create's bound): giving up would leave the answer unknown, and the
   * next up would make a second resource beside the one the service may have made.
   */
  async function lookUpAfterLostCreate(
    call: Call,
    name: string,
    failure: unknown,
    deadline: number,
  ): Promise<Listed[]> {
    try {
      return await retryWithin(async () => (await definition.inventory?.(call)) ?? [], {
        operation: call.operation,
        boundMs: Math.max(0, deadline - context.pause.now()),
        // Refused connections too: the network may still be coming back, and giving up is costly.
        retryable: (error) => isBusy(error) || codeOf(error) === "CONNECTION",
        pause: context.pause,
        waitAtLeast: retryAfterOf,
      });
    } catch (lookupError) {
      const cause = toProviderError(failure, call.operation, [call.settings.apiKey]);
      const lookup = toProviderError(lookupError, call.operation, [call.settings.apiKey]).message;
      throw new ProviderError(
        "SERVICE",
        `${cause.message}; the service may have created the ${noun} all the same, and looking for it by its name failed too (${lookup}). Before the next up, list your ${noun}s: if one named "${name}" exists, take it over with adoptId (adoptId: "<its id>") or delete it, or the next up makes a second one.`,
        // No serviceCode: final, the create's bound is spent.
        { operation: call.operation, field: "name", cause: failure },
      );
    }
  }

  /**
   * The resource a create made though its answer was lost, taken over with the program's inputs, or
   * undefined when none by its name exists (the create was not carried out: it may be sent again).
   * One of the name is this create's when no other could hold it: the create's mark (see
   * createMark), or a unique name the program chose (a holder would have refused the create, and the
   * program claims that name). Otherwise (a name the program chose on a kind whose names repeat, a
   * generated name with no mark, or several) nothing is taken over and the create is not sent again:
   * another stack of the same project and stack names (another backend) generates the same names,
   * and a unique one it holds refuses this create with an answer that may be the one lost.
   */
  async function madeAnyway(
    call: Call,
    inputs: Props,
    sent: LostCreate,
    name: string,
    failure: unknown,
    deadline: number,
  ): Promise<R | undefined> {
    const now = await lookUpAfterLostCreate(call, name, failure, deadline);
    // One name in either spelling: a service of an older version may have stored it as sent.
    const byName = now.filter((r) => sameName(r.name, name) && !replaced.has(r.id));
    // A marked create: only a record with its mark is its own; none means it was not carried out.
    const named = (sent.mark === undefined ? byName : byName.filter((r) => r.mark === sent.mark)).map(
      (r) => r.id,
    );
    const [id] = named;
    if (id === undefined) return undefined;
    // A unique name the program chose is its own claim. A generated one is not: a create refused
    // because another stack of the same names holds it (refused as NAME_TAKEN, that answer lost)
    // finds that stack's resource here, which only a mark tells from this create's.
    const onlyOurs = sent.mark !== undefined || (spec.uniqueName && inputs[AUTO_NAMED] !== true);
    if (!onlyOurs || named.length > 1) {
      const cause = toProviderError(failure, call.operation, [call.settings.apiKey]);
      const which = `${named.length === 1 ? `one ${noun}` : `${named.length} ${noun}s`} named "${name}" exist${named.length === 1 ? "s" : ""} now (id ${named.join(", ")})`;
      if (inputs[AUTO_NAMED] === true && sent.mark === undefined) {
        throw new ProviderError(
          "SERVICE",
          `${cause.message}; the service may have created the ${noun} all the same: ${which}. Its name is generated, and a stack of the same project and stack names elsewhere (another backend on this account) generates the same one; ${definition.createMark === undefined ? `a ${noun} carries no mark of the create that made it` : `this create carried no mark (the ${noun}'s env had no room for one)`}, so whether ${named.length === 1 ? "it is" : "one is"} this create's cannot be told, and nothing is taken over nor created again. If ${named.length === 1 ? `it is this stack's (its configuration and creation time match this up), take it over with adoptId (adoptId: "${id}")` : `one is this stack's (its configuration and creation time match this up), take that one over with adoptId set to its id (one of ${named.join(", ")})`} and run up again; if not, run up again to create one.`,
          { operation: call.operation, field: "name", cause: failure },
        );
      }
      throw new ProviderError(
        "SERVICE",
        `${cause.message}; the service may have created the ${noun} all the same: ${which}, and whether it is the one this create made cannot be told. It is not created again, so that no second one is made: take the one it made over with adoptId (e.g. adoptId: "${id}") and run up again, and delete any other.`,
        // No serviceCode: this is final, never a busy service's failure to wait out.
        { operation: call.operation, field: "name", cause: failure },
      );
    }
    sent.found = id;
    return takeOver(call, inputs, name, id);
  }

  /**
   * The kind's resources in the account, listed once per provider process (one deployment) by the
   * first create of a generated name that warnOfNamesakes looks at; undefined when the list failed.
   * A failed list is not kept: the creates that shared it go on unwarned, and the next one asks again.
   */
  let namesakes: Promise<Listed[] | undefined> | undefined;

  /**
   * Warns when a resource of the generated name this create is about to send already exists (Endpoint,
   * Pod, NetworkVolume: names that repeat, so the service accepts a second). The likeliest holder is
   * what an up killed during this very create left (Pulumi's provider learns nothing of that create:
   * the next up sends it again), billed outside any stack. It is not taken over nor refused: the
   * same name is also generated by a stack of the same names in another backend, and by the
   * resource a forced replacement (up --replace, which asks no diff) is about to delete. The list is
   * kept for the process, so a deployment pays one read per kind, not one per create; no warning
   * channel (a test context) means nobody to tell, and no call.
   */
  async function warnOfNamesakes(call: Call, inputs: Props): Promise<void> {
    const warn = context.warn;
    if (warn === undefined || spec.uniqueName || inputs[AUTO_NAMED] !== true) return;
    if (definition.inventory === undefined) return;
    // Advice only: a failed list leaves the create as it was.
    namesakes ??= definition.inventory(call).catch(() => {
      namesakes = undefined;
      return undefined;
    });
    const name = definition.desired(inputs).name;
    // Not the resources this process saw replaced (diff) or deleted: those are the stack's own.
    const found = ((await namesakes) ?? []).filter(
      (r) => sameName(r.name, name) && !replaced.has(r.id) && !usedUp.has(r.id),
    );
    const [first] = found;
    if (first === undefined) return;
    const ids = found.map((r) => r.id).join(", ");
    const which =
      found.length === 1
        ? `${/^[aeiou]/.test(noun) ? "an" : "a"} ${noun} named "${name}" already exists in the account (id ${ids})`
        : `${found.length} ${noun}s named "${name}" already exist in the account (ids ${ids})`;
    const one = found.length === 1;
    await warn(
      `${warningSubject(call, inputs)}: ${which}, and this create makes another. The name is generated from the project, stack and resource name, so ${one ? "it is" : "they are"} most likely left by an earlier up of this stack killed while creating this resource (when the pulumi CLI was killed, Pulumi also warns of a pending create of it), in no stack and billed while ${one ? "it runs" : "they run"}; else ${one ? "it belongs" : "they belong"} to a stack of the same project and stack names in another backend, or ${one ? "it is" : "one is"} the ${noun} an up --replace of this resource is about to delete. Delete a leftover (through the console or the API). To take a leftover over instead of creating another, set adoptId: "${first.id}" on this resource before the up that creates it.`,
    );
  }

  /** The resource `id` a lost create made, with the program's inputs applied; undefined if gone. */
  async function takeOver(call: Call, inputs: Props, name: string, id: string): Promise<R | undefined> {
    const existing = await definition.fetch(call, id);
    if (existing === null) return undefined;
    return definition.apply(call, id, existing, definition.desired({ ...inputs, name }), {});
  }

  const provider = {
    configure: async (req: pulumi.dynamic.ConfigureRequest) => configureFromHost(req.config),

    check: async (olds: Props, news: Props) => {
      const adoptId = news[ADOPT_ID];
      if (Object.keys(olds).length > 0 && typeof adoptId === "string" && adoptId !== "") usedUp.add(adoptId);
      const result = checkInputs(spec, olds, news);
      const config = configFailure(context);
      return config ? { ...result, failures: [...result.failures, config] } : result;
    },

    diff: async (id: string, olds: Props, news: Props) => {
      refuseNewerState(olds, `diff ${label(olds, id)}`);
      const previous = lastApplied(olds);
      const desired = normalizeInputs(spec, effective(olds, news));
      const found = diffFields(previous, desired, diffSpec);
      // replaceOnChanges: Pulumi's engine cannot apply it to a dynamic resource (REPLACE_ON_CHANGES).
      const forced = replacesOnChanges(news[REPLACE_ON_CHANGES], previous, desired, found.changed);
      const result = {
        ...found,
        replaces: diffSpec.fields.filter((f) => found.replaces.includes(f) || forced.includes(f)),
      };
      // A replacement under the same unique name: the new one cannot be created while the old one
      // holds the name. Moved aside when the service can rename it, otherwise deleted first.
      let deleteBeforeReplace = false;
      const sameName =
        news[AUTO_NAMED] !== true && !containsUnknown(desired.name) && desired.name === previous.name;
      if (result.replaces.length > 0) replaced.add(id);
      if (result.replaces.length > 0 && spec.uniqueName && sameName) {
        if (definition.rename) replacing.set(String(desired.name), id);
        else deleteBeforeReplace = true;
      }
      // delete reads customTimeouts from the outputs: a new value alone is an update (no service call)
      // that records it, or a destroy right after would wait by the old bound.
      const timeouts = !isDeepStrictEqual(olds[CUSTOM_TIMEOUTS] ?? null, news[CUSTOM_TIMEOUTS] ?? null);
      const changes = result.changes || timeouts || settingsMoved(id, olds);
      return { changes, replaces: result.replaces, deleteBeforeReplace };
    },

    create: async (inputs: Props) =>
      run(`create ${label(inputs)}`, async (call) => {
        // One bound for the whole create: the account's busy waits count against customTimeouts.create.
        const timed = bounded(call, inputs, "create");
        // Asked before anything is made: a failure after the create would leave it outside the stack.
        const account = await accountIfKnown(timed);
        const adoptId = inputs[ADOPT_ID];
        let record: R;
        let carried = inputs;
        if (typeof adoptId === "string" && adoptId !== "" && usedUp.has(adoptId)) {
          // A replacement of a resource adopted earlier: a new one. Its outputs keep the program's
          // adoptId, so that a later replacement's delete-first still marks the id used up.
          record = await createWhileBusy(timed, inputs);
        } else if (typeof adoptId === "string" && adoptId !== "") {
          const existing = await definition.fetch(call, adoptId);
          if (existing === null) {
            throw new ProviderError(
              "NOT_FOUND",
              `${call.operation}: adoptId ${adoptId} names no ${noun} of this account. If this resource took it over in an earlier update and it has been deleted or replaced since, remove adoptId from the program: it acts only when the resource is created.`,
              { operation: call.operation, field: ADOPT_ID },
            );
          }
          // Adopting without an explicit name keeps the existing name rather than renaming it.
          if (inputs[AUTO_NAMED] === true) {
            const name = definition.nameOf(existing);
            carried = { ...inputs, name, [ADOPTED_NAME]: name };
          }
          record = await whileBusy(timed, () =>
            definition.apply(timed, adoptId, existing, definition.desired(carried), {}),
          );
          adoptedHere.add(definition.idOf(record));
        } else {
          await warnOfNamesakes(call, inputs);
          record = await createWhileBusy(timed, inputs);
        }
        // A generated name may have come out a later generation (the first was taken): that one was applied.
        const applied =
          carried[AUTO_NAMED] === true ? { ...carried, name: definition.nameOf(record) } : carried;
        const outs = assemble(record, { ...carried, [ACCOUNT]: account }, call.settings, applied);
        return { id: definition.idOf(record), outs };
      }),

    read: async (id: string, props: Props = {}) =>
      run(`read ${noun} ${id}`, async (call) => {
        refuseNewerState(props, call.operation);
        // A read changes nothing, so a busy service is waited out as an update's is (a refresh,
        // `up --refresh` in a pipeline, would otherwise fail on a rate window the writes wait out).
        const timed = bounded(call, props, "update");
        const record = await whileBusy(timed, async () => {
          const found = await definition.fetch(timed, id);
          if (found === null) await refuseOtherAccount(call, id, props);
          return found;
        });
        if (record === null) return { id: "", props: {} };
        // Found with this key, so it is this account's: state written before owners were kept gains
        // one here. Otherwise a stack that only refreshes (no update) would never be guarded.
        const owner = hasOwner(props) ? props[ACCOUNT] : await accountIfKnown(timed);
        const outs = assemble(
          record,
          { ...props, [ACCOUNT]: owner, [ADOPTED_NAME]: adoptedName(spec, props) },
          call.settings,
        );
        // What was applied becomes what the service has: drift then shows in the next diff, and a
        // resource without drift reads back exactly as up left it (a refresh reports no change).
        if (props[APPLIED] !== undefined && props[APPLIED] !== null) outs[APPLIED] = appliedOf(outs);
        const inputs: Props = normalizeInputs(spec, outs);
        for (const key of [ADOPT_ID, ...CARRIED_KEYS]) {
          if (outs[key] !== null && outs[key] !== undefined) inputs[key] = outs[key];
        }
        // A generated name is the program's input, not the service's: a rename made elsewhere stays
        // visible as drift (outputs) and the next up puts the generated name back.
        if (props[AUTO_NAMED] === true && typeof props.name === "string") inputs.name = props.name;
        return { id, props: outs, inputs: plainProps(inputs) };
      }),

    update: async (id: string, olds: Props, news: Props) =>
      run(`update ${label(news, id)}`, async (call) => {
        refuseNewerState(olds, call.operation);
        // An update sends the whole wanted state (or a patch of it), so sending it again is safe.
        // The apply's own waits (an Endpoint's REST GPU types put back) and the account's share this bound.
        const timed = bounded(call, news, "update");
        const account = await accountIfKnown(timed);
        const desired = effective(olds, news);
        const record = await whileBusy(timed, async () => {
          const current = await definition.fetch(timed, id);
          if (current === null) {
            await refuseOtherAccount(call, id, olds);
            throw new ProviderError(
              "NOT_FOUND",
              `${call.operation}: ${noun} ${id} no longer exists (deleted outside Pulumi); run pulumi refresh (or pulumi up --refresh), which drops it from the stack, and the next up creates it again`,
              { operation: call.operation },
            );
          }
          // Only bookkeeping changed (customTimeouts): the outputs are rewritten, the service is left alone.
          const changed = diffFields(lastApplied(olds), normalizeInputs(spec, desired), diffSpec).changes;
          if (!changed) return current;
          const target = withLiveUnchanged(olds, desired, current, call.settings);
          const overwritten = overwrittenElsewhere(olds, desired, current, call.settings);
          const record = await definition.apply(timed, id, current, definition.desired(target), olds);
          // Said once the update holds (not before each busy retry's attempt).
          if (overwritten.length > 0) {
            await context.warn?.(
              `${warningSubject(call, news)}: overwrote what was changed outside Pulumi since the last up or refresh: ${overwritten.join(", ")}. The service keeps no versions, so the program's value wins; run pulumi refresh (or up --refresh) first to see such changes in the preview.`,
            );
          }
          return record;
        });
        // Found with this key, so it is this account's (state written before owners were kept gains it).
        const carried = { ...desired, [ACCOUNT]: account, [ADOPTED_NAME]: adoptedName(spec, olds) };
        return { outs: assemble(record, carried, call.settings, desired) };
      }),

    delete: async (id: string, props: Props) =>
      run(`delete ${label(props, id)}`, async (call) => {
        refuseNewerState(props, call.operation);
        // Taken over again by its replacement in this update: the stack holds it now.
        if (adoptedHere.has(id)) return;
        let owned = false;
        // An attempt's own waits (an Endpoint's REST GPU types put back after its scale-to-zero)
        // share the delete's bound.
        const bound: OperationBound = {
          startedAt: context.pause.now(),
          ms: deleteBoundMs(props, call.settings.deleteTimeoutMs),
          option: "customTimeouts.delete (else runpodkit:deleteTimeout)",
        };
        const attempt = async () => {
          // Asked within the retries: a busy service's answer to it is waited out like the delete's.
          if (!owned) await refuseOtherAccount(call, id, props);
          owned = true;
          try {
            await definition.remove({ ...call, bound }, id, props);
          } catch (error) {
            if (isDeleteRefusal(error)) await refuseIfStaying(call, id, props, error);
            throw error;
          }
        };
        try {
          await retryWithin(attempt, {
            operation: call.operation,
            boundMs: bound.ms,
            startedAt: bound.startedAt,
            // A delete is safe to send again: one already carried out answers NOT_FOUND, its goal.
            retryable: (error) => isDeleteRefusal(error) || isBusy(error) || isBrokenConnection(error),
            pause: context.pause,
            waitAtLeast: retryAfterOf,
            hint: "Run destroy again later, or give the resource a longer customTimeouts.delete (else runpodkit:deleteTimeout).",
          });
        } catch (error) {
          // Already gone: the goal of delete is met.
          if (codeOf(error) !== "NOT_FOUND") throw await undoneRemove(call, id, props, error);
        }
        // A create after it (deleteBeforeReplace) neither looks for it nor adopts what it was adopted from.
        usedUp.add(id);
        if (typeof props[ADOPT_ID] === "string" && props[ADOPT_ID] !== "") usedUp.add(props[ADOPT_ID]);
      }),
  };
  return provider satisfies pulumi.dynamic.ResourceProvider;
}

/** A create's progress: the name it last sent, and the resource found under it after a lost answer. */
interface LostCreate {
  name?: string;
  found?: string;
  /** The mark the create carried (see ResourceDefinition.createMark), when it carried one. */
  mark?: string;
}

/** One resource of the account as the inventory lists it; `mark` as createMark set it. */
export interface Listed {
  id: string;
  name: string;
  mark?: string | undefined;
}

/**
 * The name a resource adopted without a name keeps (see ADOPTED_NAME), or undefined. Outputs written
 * before it was recorded: an unnamed resource with adoptId set in the outputs and a name other than
 * the one check generates for it holds the adopted name (a replacement of an adopted resource, made
 * new with adoptId still set, has a generated name and adopted nothing).
 */
function adoptedName(spec: InputSpec, olds: Props): string | undefined {
  const recorded = olds[ADOPTED_NAME];
  if (typeof recorded === "string" && recorded !== "") return recorded;
  const adopted = typeof olds[ADOPT_ID] === "string" && olds[ADOPT_ID] !== "";
  if (!adopted || olds[AUTO_NAMED] !== true || typeof olds.name !== "string" || olds.name === "") {
    return undefined;
  }
  return isGeneratedName(olds.name, olds, nameBasis(spec, normalizeInputs(spec, olds)))
    ? undefined
    : olds.name;
}

type Entries = Record<string, unknown>;
const isEntries = (value: unknown): value is Entries =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * What an update sends for one field the program last applied as `before` and now wants as `wanted`,
 * when the service has `live`: the live value if the program left the field as it was; for a map the
 * program changed, its new keys and values with every key it left as it was at its live value (for
 * a list taken `byItem`, the same by position); else undefined (the program's value stands).
 */
function unchangedLive(before: unknown, wanted: unknown, live: unknown, byItem = false): unknown {
  if (isDeepStrictEqual(before ?? null, wanted ?? null)) return live;
  if (byItem && Array.isArray(before) && Array.isArray(wanted) && Array.isArray(live)) {
    // Item by item, as a map key by key: an item the program left as it was keeps its live value.
    return wanted.map((item, i) =>
      i < before.length && i < live.length && isDeepStrictEqual(before[i], item) ? live[i] : item,
    );
  }
  if (!isEntries(before) || !isEntries(wanted) || !isEntries(live)) return undefined;
  const merged: Entries = { ...wanted };
  for (const [key, value] of Object.entries(wanted)) {
    if (key in live && isDeepStrictEqual(before[key], value)) merged[key] = live[key];
  }
  return merged;
}

/** Whether the outputs record the account the resource was created in (state written before owners were kept does not). */
function hasOwner(props: Props): props is Props & { [ACCOUNT]: string } {
  return typeof props[ACCOUNT] === "string" && props[ACCOUNT] !== "";
}

/**
 * A missing API key or a bad URL in the provider's config, as a check failure: preview (which calls
 * only check and diff) then reports it, instead of the first create or update of `up`.
 */
function configFailure(context: ProviderContext): CheckFailure | undefined {
  try {
    context.settings();
    return undefined;
  } catch (error) {
    if (!(error instanceof ProviderError) || error.code !== "CONFIG") throw error;
    return { property: error.field ?? "runpodkit", reason: error.message };
  }
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

/** plainJson of each value of a record. */
export function plainProps(props: Props): Props {
  const out: Props = {};
  for (const [key, value] of Object.entries(props)) out[key] = plainJson(value);
  return out;
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
