import { join } from "node:path";
import { z } from "zod";
import {
  DockerArgsError,
  formatDockerArgs,
  type GqlPodTemplate,
  type GqlTemplateInput,
  parseDockerArgs,
  START_SCRIPT_MAX_LENGTH,
  StartScript,
  TEMPLATE_DEFAULTS,
  TemplateCreateInput,
  type Template as TemplateRest,
  type TemplateUpdateInput,
} from "../sdk/schemas";
import { sameName } from "../sdk/schemas/common";
import { type CheckFailure, type InputSpec, type Props, parseInputs, uniqueList } from "./check";
import { hostContext, type ProviderContext } from "./context";
import { CREATE_MARK, fittingMark, reservedMarkFailures, withCreateMark } from "./create-mark";
import { forwardingProvider, packageSpecifier } from "./dynamic";
import { endpointsUsing, managedKeys, withoutMark } from "./endpoint";
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
import type { TemplateArgs, TemplateState } from "./public-types";
import { outputKeys } from "./resource";
import { containsUnknown, isUnknown, UNKNOWN } from "./unknowns";

// Arguments ---------------------------------------------------------------------------------------

const fields = TemplateCreateInput.shape;

/** Inputs of Template (REST /templates), with the service's defaults. */
export const TemplateInputs = z.strictObject({
  name: fields.name
    .optional()
    .describe(
      'Template name, unique in the account, stored without surrounding white space and in composed Unicode (NFC; " web " is "web"). Default: the resource name plus a generated suffix. A replacement keeps an explicit name: the old template is renamed aside until its endpoints use the new one.',
    ),
  imageName: fields.imageName.describe("Container image, e.g. `ghcr.io/acme/worker:1.2`."),
  category: fields.category
    .unwrap()
    .default(TEMPLATE_DEFAULTS.category)
    .describe("NVIDIA, AMD or CPU (default NVIDIA). Changing it replaces the template."),
  isServerless: fields.isServerless
    .unwrap()
    .default(TEMPLATE_DEFAULTS.isServerless)
    .describe(
      "Whether endpoints use it (default false; an Endpoint needs true, pods take either). Changing it replaces the template.",
    ),
  containerDiskInGb: fields.containerDiskInGb
    .unwrap()
    .default(TEMPLATE_DEFAULTS.containerDiskInGb)
    .describe("Container disk in GB (default 50)."),
  volumeInGb: fields.volumeInGb
    .unwrap()
    .default(TEMPLATE_DEFAULTS.volumeInGb)
    .describe("Pod volume in GB (default 20)."),
  volumeMountPath: fields.volumeMountPath
    .unwrap()
    .default(TEMPLATE_DEFAULTS.volumeMountPath)
    .describe(
      'The absolute path where the volume is mounted, written plainly (no "." or ".." parts, no "//"; default /workspace).',
    ),
  dockerEntrypoint: fields.dockerEntrypoint
    .unwrap()
    .default(() => [])
    .describe("Entrypoint override (default none)."),
  dockerStartCmd: fields.dockerStartCmd
    .unwrap()
    .default(() => [])
    .describe(
      "Start command override as an argv array (default none). The same command as dockerArgs: set either; the other follows.",
    ),
  dockerArgs: z
    .string()
    .superRefine(refuseUnparsable)
    .nullable()
    .default(null)
    .describe(
      "Start command override as one string, read with POSIX shell quoting into dockerStartCmd (`bash -c 'a && b'` is three arguments). Nothing in it may need a shell (an operator, a variable or a glob outside quotes is refused). Set either this or dockerStartCmd; the outputs always show both.",
    ),
  env: fields.env
    .unwrap()
    .default(() => ({}))
    .describe(
      "Environment variables of the container. Stored as a secret in the state. A create of a generated name also sets RUNPODKIT_CREATE_MARK (a random value that tells the template it made from another stack's of the same name after a lost answer; workers and pods of the template see it as one more variable): kept on update, never reported in the outputs. The program may not set that key (check refuses it), and it is left out when the env has no room for its 59 bytes under the 256 KiB limit (the env is created as written).",
    ),
  ports: fields.ports
    .unwrap()
    .default(() => [...TEMPLATE_DEFAULTS.ports])
    .describe('Exposed ports such as "8888/http" (default 8888/http and 22/tcp).'),
  readme: fields.readme.unwrap().default(TEMPLATE_DEFAULTS.readme).describe("Readme text (default empty)."),
  isPublic: fields.isPublic
    .unwrap()
    .default(TEMPLATE_DEFAULTS.isPublic)
    .describe("Whether the template is public (default false)."),
  containerRegistryAuthId: fields.containerRegistryAuthId
    .unwrap()
    .nullable()
    .default(null)
    .describe("Id of the registry credentials used to pull a private image (default none)."),
  startSsh: z
    .boolean()
    .default(false)
    .describe("Whether pods of the template start an SSH server (default false). Set through GraphQL."),
  startJupyter: z
    .boolean()
    .default(false)
    .describe("Whether pods of the template start Jupyter (default false). Set through GraphQL."),
  startScript: StartScript.default("").describe(
    `A script pods of the template run at start (default none; at most ${START_SCRIPT_MAX_LENGTH} characters). Set through GraphQL.`,
  ),
  adoptId: adoptIdInput("Id of an existing template to take over instead of creating one."),
});
/** The desired configuration: the arguments with defaults applied and a name. */
export type TemplateDesired = z.output<typeof TemplateInputs> & { name: string };

// State -------------------------------------------------------------------------------------------

export const templateSpec = {
  type: "Template",
  schema: TemplateInputs,
  secrets: ["env"],
  replaceOnChange: ["category", "isServerless"],
  uniqueName: true,
  createOnly: [ADOPT_ID],
  // A port given twice is one (the service keeps each once).
  canonical: (props) => startCommandBothWays({ ...props, ...uniqueList(props, "ports") }),
  spellings: [["dockerArgs", "dockerStartCmd"]],
  rules: (news) => {
    const failures: CheckFailure[] = reservedMarkFailures(news.env);
    const { dockerArgs, dockerStartCmd } = news;
    if (typeof dockerArgs !== "string" || containsUnknown(dockerStartCmd) || !isArgv(dockerStartCmd)) {
      return failures;
    }
    const argv = argvOf(dockerArgs);
    if (argv && dockerStartCmd.length > 0 && !sameArgv(argv, dockerStartCmd)) {
      failures.push({
        property: "dockerArgs",
        reason: `dockerArgs: reads as ${JSON.stringify(argv)} but dockerStartCmd is ${JSON.stringify(dockerStartCmd)}; set one of them`,
      });
    }
    return failures;
  },
} satisfies InputSpec;

/** The start fields only GraphQL reads and writes, with the values of a template that never set them. */
const START_DEFAULTS = { startSsh: false, startJupyter: false, startScript: "" } as const;
type StartFields = { startSsh: boolean; startJupyter: boolean; startScript: string };

/** A template as the provider sees it: the REST record plus the start fields from GraphQL (null: unknown). */
export type TemplateRecord = TemplateRest & { [K in keyof StartFields]: StartFields[K] | null };

// CRUD --------------------------------------------------------------------------------------------

export function templateDefinition(): ResourceDefinition<TemplateDesired, TemplateRecord> {
  return {
    noun: "template",
    spec: templateSpec,
    desired: (props) => parseInputs(templateSpec, startCommandBothWays(props)),
    fetch: fetchTemplate,
    create: createTemplate,
    // The whole desired configuration every time, so drift in any field is put right; what neither
    // REST nor GraphQL can change (reached on adoption: a change of them replaces) is refused.
    apply: (call, id, current, desired) => {
      for (const property of ["category", "isServerless"] as const) {
        if (current[property] === desired[property]) continue;
        refuseUnchangeable(call, property, {
          subject: `template ${id}`,
          is: `has ${property} ${JSON.stringify(current[property])}`,
          rule: `the service cannot change a template's ${property}`,
          fix: `set ${property} to ${JSON.stringify(current[property])}, or create a new template instead of adopting this one`,
        });
      }
      return applyTemplate(call, id, current, keepingMark(current, desired));
    },
    remove: (call, id) => call.api.templates.delete(id),
    dependents: (call, id) => endpointsUsing(call, (e) => e.templateId === id),
    // PATCH may rename: a same-name replacement moves the old template aside instead of deleting it
    // first, so its endpoints keep running until they are repointed to the new one.
    rename: async (call, id, name) => {
      await call.api.templates.update(id, { name });
    },
    findByName: async (call, name) => {
      const found = (await call.api.templates.list()).find((t) => sameName(t.name, name));
      return found && { ...found, startSsh: null, startJupyter: null, startScript: null };
    },
    inventory: async (call) =>
      (await call.api.templates.list()).map(({ id, name, env }) => ({ id, name, mark: env[CREATE_MARK] })),
    // Template names are unique, but a generated one is also generated by a stack of the same names
    // elsewhere: a create refused because that stack holds it (that answer lost) must not take its
    // template over. The mark reaches workers and pods as one more env key; nothing reads it there.
    createMark: (desired, mark) => {
      const env = withCreateMark(desired.env, mark);
      return env && { ...desired, env };
    },
    idOf: (record) => record.id,
    nameOf: (record) => record.name,
    outputs: templateOutputs,
  };
}

export function createTemplateProvider(context: ProviderContext) {
  return implement(templateDefinition(), context);
}

/** What Pulumi's provider host loads (through provider/template-provider.ts, see provider/dynamic.ts). */
export const templateProvider = createTemplateProvider(hostContext());

// The Resource class ------------------------------------------------------------------------------

/** The provider object Pulumi serializes into the state (see provider/dynamic.ts). */
export const templateForwarder = forwardingProvider(
  packageSpecifier(join(__dirname, "template-provider")),
  "templateProvider",
);

/** Every output: the inputs and adoptId. */
export const TEMPLATE_OUTPUTS = outputKeys(templateSpec);

// Pure mappers ------------------------------------------------------------------------------------

/** The fields PATCH may change: everything but category and isServerless (those replace). */
export function toUpdateInput(desired: TemplateDesired): TemplateUpdateInput {
  return {
    name: desired.name,
    imageName: desired.imageName,
    containerDiskInGb: desired.containerDiskInGb,
    volumeInGb: desired.volumeInGb,
    volumeMountPath: desired.volumeMountPath,
    dockerEntrypoint: desired.dockerEntrypoint,
    dockerStartCmd: desired.dockerStartCmd,
    env: desired.env,
    ports: desired.ports,
    readme: desired.readme,
    isPublic: desired.isPublic,
    containerRegistryAuthId: desired.containerRegistryAuthId,
  };
}

export function toCreateInput(desired: TemplateDesired): TemplateCreateInput {
  const { containerRegistryAuthId, ...rest } = toUpdateInput(desired);
  return {
    ...rest,
    name: desired.name,
    imageName: desired.imageName,
    category: desired.category,
    isServerless: desired.isServerless,
    ...(containerRegistryAuthId ? { containerRegistryAuthId } : {}),
  };
}

export function templateOutputs(
  record: TemplateRecord,
  previous: Props = {},
): Omit<TemplateState, "adoptId" | "category"> & {
  category: string;
} {
  return {
    name: record.name,
    imageName: record.imageName,
    category: record.category,
    isServerless: record.isServerless,
    containerDiskInGb: record.containerDiskInGb,
    volumeInGb: record.volumeInGb,
    volumeMountPath: record.volumeMountPath,
    dockerEntrypoint: record.dockerEntrypoint,
    dockerStartCmd: record.dockerStartCmd,
    dockerArgs: formatted(record.dockerStartCmd),
    // The create's mark is runpodkit's, not the program's: never shown, so never drift.
    env: withoutMark(record.env, managedKeys(previous)),
    ports: record.ports,
    readme: record.readme,
    isPublic: record.isPublic,
    containerRegistryAuthId: record.containerRegistryAuthId ?? null,
    // null: the service did not report them (then the last known value stands).
    startSsh: record.startSsh ?? asBoolean(previous.startSsh, START_DEFAULTS.startSsh),
    startJupyter: record.startJupyter ?? asBoolean(previous.startJupyter, START_DEFAULTS.startJupyter),
    startScript:
      record.startScript ??
      (typeof previous.startScript === "string" ? previous.startScript : START_DEFAULTS.startScript),
  };
}

const asBoolean = (value: unknown, fallback: boolean) => (typeof value === "boolean" ? value : fallback);

/** toCreateInput's GraphQL twin: saveTemplate with `id` replaces everything GraphQL can express. */
export function toSaveTemplateInput(id: string, desired: TemplateDesired): GqlTemplateInput {
  return {
    id,
    name: desired.name,
    imageName: desired.imageName,
    category: desired.category,
    isServerless: desired.isServerless,
    containerDiskInGb: desired.containerDiskInGb,
    volumeInGb: desired.volumeInGb,
    volumeMountPath: desired.volumeMountPath,
    dockerArgs: formatDockerArgs(desired.dockerStartCmd),
    env: Object.entries(desired.env).map(([key, value]) => ({ key, value })),
    ports: desired.ports.join(","),
    readme: desired.readme,
    isPublic: desired.isPublic,
    containerRegistryAuthId: desired.containerRegistryAuthId,
    startSsh: desired.startSsh,
    startJupyter: desired.startJupyter,
    startScript: desired.startScript,
  };
}

// Calls -------------------------------------------------------------------------------------------

/** The REST record and, from GraphQL, the start fields (null when GraphQL does not list the template). */
async function fetchTemplate(call: Call, id: string): Promise<TemplateRecord | null> {
  const record = await orNull(() => call.api.templates.get(id));
  if (record === null) return null;
  const view = (await call.api.templates.listGraphql()).find((t) => t.id === id);
  return { ...record, ...startOf(view) };
}

/**
 * REST create; then, when a start field is not its default, the same as an update. If that second
 * step fails, the new template is deleted again (Pulumi would not know its id): undoCreateOnFailure.
 */
async function createTemplate(call: Call, desired: TemplateDesired): Promise<TemplateRecord> {
  const record: TemplateRecord = {
    ...(await call.api.templates.create(toCreateInput(desired))),
    ...START_DEFAULTS,
  };
  if (!startDiffers(record, desired)) return record;
  const made = { noun: "template", id: record.id, remove: () => call.api.templates.delete(record.id) };
  const step = {
    property: (["startSsh", "startJupyter", "startScript"] as const)
      .filter((field) => record[field] !== desired[field])
      .join(", "),
    fix: "They are set over GraphQL saveTemplate (runpodkit:graphqlUrl); fix the cause and run up again, or leave them at their defaults.",
  };
  return undoCreateOnFailure(call, made, step, () => applyTemplate(call, record.id, record, desired));
}

/** GraphQL saveTemplate when a start field differs (or is unknown), then the REST update of everything. */
async function applyTemplate(
  call: Call,
  id: string,
  current: TemplateRecord,
  desired: TemplateDesired,
): Promise<TemplateRecord> {
  let start = startOf(current);
  if (startDiffers(current, desired)) {
    const saved = await call.api.templates.save(toSaveTemplateInput(id, desired));
    start = {
      startSsh: saved.startSsh ?? desired.startSsh,
      startJupyter: saved.startJupyter ?? desired.startJupyter,
      startScript: saved.startScript ?? desired.startScript,
    };
  }
  const record = await call.api.templates.update(id, toUpdateInput(desired));
  return { ...record, ...start };
}

/**
 * `desired` with the create's mark the template carries: the whole env is written on every update,
 * and the mark is not the program's to remove (it stays as it does on an endpoint or a pod).
 */
function keepingMark(current: TemplateRecord, desired: TemplateDesired): TemplateDesired {
  const mark = current.env[CREATE_MARK];
  if (mark === undefined || CREATE_MARK in desired.env) return desired;
  return { ...desired, env: fittingMark({ [CREATE_MARK]: mark, ...desired.env }, desired.env) };
}

function startOf(view: Partial<Pick<GqlPodTemplate, keyof StartFields>> | undefined) {
  return {
    startSsh: view?.startSsh ?? null,
    startJupyter: view?.startJupyter ?? null,
    startScript: view?.startScript ?? null,
  };
}

function startDiffers(current: TemplateRecord, desired: TemplateDesired): boolean {
  return (
    current.startSsh !== desired.startSsh ||
    current.startJupyter !== desired.startJupyter ||
    current.startScript !== desired.startScript
  );
}

// The two spellings of the start command ---------------------------------------------------------

/** zod refinement: dockerArgs must read as an argv; the message names the field (check prefixes it). */
function refuseUnparsable(value: string, ctx: z.RefinementCtx): void {
  try {
    parseDockerArgs(value);
  } catch (error) {
    if (!(error instanceof DockerArgsError)) throw error;
    ctx.addIssue({ code: "custom", message: error.message.replace(/^dockerArgs: /, "") });
  }
}

/**
 * check's and diff's one spelling (InputSpec.canonical): dockerArgs given -> dockerStartCmd is its
 * argv and dockerArgs its quoted form; otherwise dockerArgs is dockerStartCmd formatted. A value that
 * does not parse, or two that disagree, are left as they are for the schema and the rules to report.
 */
function startCommandBothWays(props: Props): Props {
  const { dockerArgs, dockerStartCmd } = props;
  // Still unknown during preview: the side left out follows it, so it is unknown too (a saved plan
  // then accepts the value up derives, instead of the default).
  if (containsUnknown(dockerStartCmd)) return dockerArgs == null ? { ...props, dockerArgs: UNKNOWN } : props;
  if (isUnknown(dockerArgs)) {
    return isArgv(dockerStartCmd) && dockerStartCmd.length === 0
      ? { ...props, dockerStartCmd: UNKNOWN }
      : props;
  }
  if (typeof dockerArgs === "string") {
    const argv = argvOf(dockerArgs);
    if (argv === undefined) return props;
    const cmd = isArgv(dockerStartCmd) ? dockerStartCmd : [];
    if (cmd.length > 0 && !sameArgv(argv, cmd)) return props;
    return { ...props, dockerStartCmd: argv, dockerArgs: formatted(argv) ?? dockerArgs };
  }
  if (isArgv(dockerStartCmd)) return { ...props, dockerArgs: formatted(dockerStartCmd) };
  return props;
}

function argvOf(dockerArgs: string): string[] | undefined {
  try {
    return parseDockerArgs(dockerArgs);
  } catch (error) {
    if (error instanceof DockerArgsError) return undefined;
    throw error;
  }
}

/** The argv as one string; null for the rare argument no quoting can express. */
function formatted(argv: readonly string[]): string | null {
  try {
    return formatDockerArgs(argv);
  } catch (error) {
    if (error instanceof DockerArgsError) return null;
    throw error;
  }
}

const isArgv = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === "string");

const sameArgv = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((item, i) => item === b[i]);

export type { TemplateArgs, TemplateState };
