import { isIP } from "node:net";
import { join } from "node:path";
import { z } from "zod";
import {
  ComputeType,
  CpuInstanceId,
  CudaVersion,
  CudaVersionsList,
  ENDPOINT_DEFAULTS,
  EndpointType,
  EnvMap,
  FlashBootType,
  GPU_IDS_NOT_POOLS,
  GpuIdsList,
  GpuTypeId,
  type GqlEndpoint,
  GqlEndpointInput,
  LocationsList,
  ScalerType,
} from "../sdk/schemas";
import { canonicalCommaList, volumeGivenTwice } from "../sdk/schemas/defaults";
import { APPLIED } from "./bookkeeping";
import { type CheckFailure, type InputSpec, type Props, parseInputs, uniqueList } from "./check";
import type { ProviderSettings } from "./config";
import { hostContext, type ProviderContext } from "./context";
import { CREATE_MARK, fittingMark, reservedMarkFailures, withCreateMark } from "./create-mark";
import { forwardingProvider, packageSpecifier } from "./dynamic";
import { isBrokenConnection, isBusy, ProviderError, retryAfterOf, toProviderError } from "./errors";
import {
  ADOPT_ID,
  adoptIdInput,
  type Call,
  type Dependent,
  implement,
  type ResourceDefinition,
} from "./implement";
import type { EndpointArgs, EndpointState } from "./public-types";
import { outputKeys } from "./resource";
import { retryWithin } from "./retry";
import { BUSY_BOUND_MS } from "./timeouts";
import { isUnknown } from "./unknowns";

// Arguments ---------------------------------------------------------------------------------------

const wire = GqlEndpointInput.shape;

/**
 * Inputs of Endpoint, managed through GraphQL saveEndpoint, with the service's defaults. Every
 * deployment source the service knows: a template's container image (templateId), a preconfigured
 * repository release (hubReleaseId) and a cached model named by its repository URL (modelName).
 */
export const EndpointInputs = z.strictObject({
  name: wire.name
    .optional()
    .describe(
      'Endpoint name. Stored without surrounding white space and in composed Unicode (NFC; " web " is "web"). Default: the resource name plus a generated suffix.',
    ),
  templateId: wire.templateId.describe(
    "Id of the serverless template (isServerless: true) whose container image the workers run; a pod template is refused.",
  ),
  hubReleaseId: wire.hubReleaseId
    .unwrap()
    .unwrap()
    .nullable()
    .default(null)
    .describe("Deploy a preconfigured repository release."),
  modelName: wire.modelName
    .unwrap()
    .unwrap()
    .nullable()
    .default(null)
    .describe("Model repository URL (or repository name) to cache on the workers, for shorter cold starts."),
  computeType: ComputeType.default(ENDPOINT_DEFAULTS.computeType).describe(
    "GPU or CPU workers (default GPU). Changing it replaces the endpoint.",
  ),
  type: EndpointType.default(ENDPOINT_DEFAULTS.type).describe(
    "QB queue-based or LB load-balancing (default QB). Changing it replaces the endpoint.",
  ),
  gpuIds: GpuIdsList.default(ENDPOINT_DEFAULTS.gpuIds).describe(
    'GPU pools in priority order, e.g. "AMPERE_48,-NVIDIA RTX A6000" (default AMPERE_16). Reads "" when the endpoint\'s GPU types were set through REST gpuTypeIds to types no pools describe (e.g. NVIDIA B200): a refresh shows that as drift, and the next update restores this value. An update that leaves gpuIds as last applied (or under ignoreChanges) keeps those GPU types.',
  ),
  gpuCount: wire.gpuCount
    .unwrap()
    .unwrap()
    .default(ENDPOINT_DEFAULTS.gpuCount)
    .describe("GPUs per worker (default 1)."),
  instanceIds: z
    .array(CpuInstanceId)
    .default(() => [])
    .describe('CPU instance ids, e.g. "cpu3c-2-4".'),
  workersMin: wire.workersMin
    .unwrap()
    .unwrap()
    .default(ENDPOINT_DEFAULTS.workersMin)
    .describe("Workers kept running; 0 scales to zero (default 0)."),
  workersMax: wire.workersMax
    .unwrap()
    .unwrap()
    .default(ENDPOINT_DEFAULTS.workersMax)
    .describe("Most workers at once (default 3)."),
  workersStandby: wire.workersStandby
    .unwrap()
    .unwrap()
    .default(ENDPOINT_DEFAULTS.workersStandby)
    .describe(
      "Standby workers (default 1), sent to the service as is. The local service stores it; its scaler does not use it (it follows workersMin, workersMax, scalerType, scalerValue and idleTimeout).",
    ),
  idleTimeout: wire.idleTimeout
    .unwrap()
    .unwrap()
    .default(ENDPOINT_DEFAULTS.idleTimeout)
    .describe("Seconds before an idle worker stops (default 5)."),
  scalerType: ScalerType.default(ENDPOINT_DEFAULTS.scalerType).describe(
    "Autoscaler kind (default QUEUE_DELAY).",
  ),
  scalerValue: wire.scalerValue
    .unwrap()
    .unwrap()
    .default(ENDPOINT_DEFAULTS.scalerValue)
    .describe("Autoscaler target (default 4)."),
  flashBootType: FlashBootType.default(ENDPOINT_DEFAULTS.flashBootType).describe(
    "FLASHBOOT for faster cold starts, PRIORITY_FLASHBOOT to keep cached workers first in line (default OFF).",
  ),
  executionTimeoutMs: wire.executionTimeoutMs
    .unwrap()
    .unwrap()
    .default(ENDPOINT_DEFAULTS.executionTimeoutMs)
    .describe("Longest a job may run, in ms (default 600000)."),
  locations: LocationsList.default(null).describe('Regions, e.g. "US,CZ"; null for any (default).'),
  allowedCudaVersions: CudaVersionsList.nullable()
    .default(null)
    .describe('CUDA versions, e.g. "12.4,12.5"; null for any.'),
  networkVolumeId: wire.networkVolumeId
    .unwrap()
    .unwrap()
    .nullable()
    .default(null)
    .describe("Network volume mounted on the workers."),
  networkVolumeIds: z
    .array(z.string().min(1))
    .default(() => [])
    .describe(
      "Network volumes in several data centers (at most one per data center; not also the networkVolumeId): workers mount the one where they run.",
    ),
  minCudaVersion: CudaVersion.nullable()
    .default(null)
    .describe('Workers only on hosts with at least this CUDA version, e.g. "12.4"; null for any.'),
  env: EnvMap.default(() => ({})).describe(
    "Worker environment. Stored as a secret. Only these keys are managed: keys added to the endpoint elsewhere are neither reported as drift nor removed. A create of a generated name also sets RUNPODKIT_CREATE_MARK (a random value that tells the endpoint it made from another of the same name after a lost answer), kept like such a key. The program may not set that key (check refuses it), and it is left out when the env has no room for its 59 bytes under the 256 KiB limit (the env is created as written).",
  ),
  adoptId: adoptIdInput("Id of an existing endpoint to take over instead of creating one."),
});
/** The desired configuration: the arguments with defaults applied and a name. */
export type EndpointDesired = z.output<typeof EndpointInputs> & { name: string };

// State -------------------------------------------------------------------------------------------

/** Outputs the service computes. */
export const EndpointComputed = z.object({
  url: z
    .string()
    .describe(
      "Where the endpoint takes requests. Queue-based (QB): its job API, `{queueUrl}/v2/{id}` (/run, /runsync, /status). Load-balancing (LB): its workers' own HTTP servers, `https://{id}.api.runpod.ai` on the real service (the id as a subdomain of queueUrl's host; append your worker's paths). The local service serves no load-balancing traffic: with its queueUrl (an IP address, which takes no subdomain) an LB url is `http://{id}.localhost:{port}`, which nothing behind it serves (the local service answers 404).",
    ),
  createdAt: z.string().describe("When the endpoint was created (ISO-8601)."),
  version: z.int().describe("Bumped by the service when the template or env changes (a rolling release)."),
});

export const endpointSpec = {
  type: "Endpoint",
  schema: EndpointInputs,
  computed: EndpointComputed,
  secrets: ["env"],
  replaceOnChange: ["computeType", "type"],
  uniqueName: false,
  createOnly: [ADOPT_ID],
  // GPU types set through REST that no pool describes read as gpuIds "": carried over by
  // ignoreChanges after a refresh, it keeps them (see keepsRestGpuTypes).
  keptAsRead: {
    gpuIds: {
      value: GPU_IDS_NOT_POOLS,
      whenNew:
        '"" is what gpuIds reads from an endpoint whose GPU types were set through REST (a refresh stores it in the inputs, and ignoreChanges: ["gpuIds"] carries it over): it keeps those types in an update of that endpoint, but a new endpoint (a create, or a replacement) cannot be made from it. Set gpuIds in the program to the pools the new endpoint should have (not another endpoint\'s gpuIds output), and take gpuIds out of ignoreChanges for this up if "" is still carried over; set its GPU types through REST again afterwards if wanted',
    },
  },
  listsByItem: ["networkVolumeIds", "instanceIds"],
  // The spelling the service stores (model/endpoint.ts canonicalChanges): items trimmed, each once.
  canonical: (props) => ({
    ...props,
    ...(typeof props.gpuIds === "string" && !isUnknown(props.gpuIds)
      ? { gpuIds: canonicalCommaList(props.gpuIds) || props.gpuIds }
      : {}),
    locations: commaList(props.locations) ?? null,
    allowedCudaVersions: commaList(props.allowedCudaVersions) ?? null,
    ...uniqueList(props, "networkVolumeIds"),
    ...uniqueList(props, "instanceIds"),
  }),
  rules: (news) => {
    const failures: CheckFailure[] = [];
    const { workersMin, workersMax } = news;
    // Only between two valid counts: a negative workersMax is the schema's failure, not workersMin's.
    const count = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 0;
    if (count(workersMin) && count(workersMax) && workersMin > workersMax) {
      failures.push({
        property: "workersMin",
        reason: `workersMin: must not exceed workersMax (${workersMin} > ${workersMax})`,
      });
    }
    const { networkVolumeId, networkVolumeIds } = news;
    if (
      typeof networkVolumeId === "string" &&
      !isUnknown(networkVolumeId) &&
      Array.isArray(networkVolumeIds) &&
      networkVolumeIds.includes(networkVolumeId)
    ) {
      failures.push({
        property: "networkVolumeIds",
        reason: `networkVolumeIds: ${volumeGivenTwice(networkVolumeId)}`,
      });
    }
    const { computeType, instanceIds } = news;
    if (computeType !== "CPU" && Array.isArray(instanceIds) && instanceIds.length > 0) {
      failures.push({
        property: "instanceIds",
        reason:
          'instanceIds: CPU instance ids are only for CPU endpoints (set computeType: "CPU"); a GPU endpoint chooses its GPUs with gpuIds',
      });
    }
    failures.push(...reservedMarkFailures(news.env));
    return failures;
  },
} satisfies InputSpec;

// CRUD --------------------------------------------------------------------------------------------

export { CREATE_MARK } from "./create-mark";

export function endpointDefinition(): ResourceDefinition<EndpointDesired, GqlEndpoint> {
  // GPU types set through REST that a delete read before scaling to zero, by id, for its undo.
  const restTypes = new Map<string, GpuTypes>();
  return {
    noun: "endpoint",
    spec: endpointSpec,
    desired: (props) => parseInputs(endpointSpec, props),
    fetch: (call, id) => call.api.endpoints.get(id),
    create: (call, desired) => call.api.endpoints.save(toSaveInput(desired)),
    // saveEndpoint is a full replace: the whole desired configuration, plus the env keys the
    // program does not manage, so that keys set elsewhere survive an update.
    apply: async (call, id, current, desired, previous) => {
      const env = fittingMark({ ...foreignEnv(current, previous, desired), ...desired.env }, desired.env);
      if (!keepsRestGpuTypes(current, desired, previous)) {
        return call.api.endpoints.save(toSaveInput(desired, id, env));
      }
      return saveKeepingGpuTypes(call, id, desired, env);
    },
    remove: (call, id) => removeEndpoint(call, id, restTypes),
    undoRemove: (call, id, outputs) => unscaleEndpoint(call, id, outputs, restTypes),
    inventory: async (call) =>
      (await call.api.endpoints.list()).map((record) => ({
        id: record.id,
        name: record.name,
        mark: record.env.find(({ key }) => key === CREATE_MARK)?.value,
      })),
    // Endpoint names repeat, and a stack of the same names elsewhere generates the same ones.
    createMark: (desired, mark) => {
      const env = withCreateMark(desired.env, mark);
      return env && { ...desired, env };
    },
    idOf: (record) => record.id,
    nameOf: (record) => record.name,
    outputs: endpointOutputs,
    // The url comes from runpodkit:queueUrl, not the record: a new queueUrl must reach it.
    settingsOutputs: (id, outputs, settings) => ({
      url: endpointUrl(
        settings.queueUrl,
        typeof outputs.type === "string" ? outputs.type : ENDPOINT_DEFAULTS.type,
        id,
      ),
    }),
  };
}

/**
 * Whether an update must keep the endpoint's GPU types set through REST that no pool describes
 * (gpuIds ""): the program left gpuIds as it last applied it (or carries "" over, ignoreChanges
 * after a refresh). saveEndpoint cannot express them, and sending the program's pools would replace
 * them: an operator's choice lost to an update of another field, ignoreChanges or not.
 */
function keepsRestGpuTypes(current: GqlEndpoint, desired: EndpointDesired, previous: Props): boolean {
  if (current.computeType !== "GPU" || GpuIdsList.safeParse(current.gpuIds).success) return false;
  if (desired.gpuIds === GPU_IDS_NOT_POOLS) return true;
  const applied = previous[APPLIED];
  const before =
    applied !== null && typeof applied === "object" && "gpuIds" in applied ? applied.gpuIds : previous.gpuIds;
  return typeof before === "string" && canonicalCommaList(before) === canonicalCommaList(desired.gpuIds);
}

/** GPU type ids in priority order, as REST gpuTypeIds holds them. */
type GpuTypes = z.output<typeof GpuTypeId>[];

/** The endpoint's GPU types set through REST, refused before anything is saved if one is unknown here. */
async function knownGpuTypes(call: Call, id: string): Promise<GpuTypes> {
  const read = await call.api.endpoints.gpuTypes(id);
  const known = z.array(GpuTypeId).safeParse(read);
  // Checked before anything is saved: the SDK would refuse to send back a type it does not know.
  if (!known.success) {
    throw new ProviderError(
      "VALIDATION",
      `${call.operation}: gpuIds: the endpoint's GPU types were set through REST (gpuTypeIds ${JSON.stringify(read)}) and include one this runpodkit does not know, so an update could not keep them; nothing was changed. Upgrade runpodkit, or set gpuIds in the program to the pools you want (and remove gpuIds from ignoreChanges).`,
      { operation: call.operation, field: "gpuIds" },
    );
  }
  return known.data;
}

/** REST PATCH of the GPU types, a busy service waited out within the operation's bound (customTimeouts). */
async function putGpuTypesBack(call: Call, id: string, types: GpuTypes): Promise<void> {
  await retryWithin(() => call.api.endpoints.setGpuTypes(id, types), {
    operation: call.operation,
    boundMs: call.bound?.ms ?? BUSY_BOUND_MS,
    ...(call.bound === undefined ? {} : { startedAt: call.bound.startedAt }),
    retryable: (error) => isBusy(error) || isBrokenConnection(error),
    pause: call.context.pause,
    waitAtLeast: retryAfterOf,
    ...(call.bound === undefined ? {} : { hint: `Give the resource a longer ${call.bound.option}.` }),
  });
}

/** A failure's message without the operation that leads it (it is said once, by the outer message). */
function reason(call: Call, error: unknown): string {
  return toProviderError(error, call.operation, [call.settings.apiKey])
    .message.replace(`${call.operation}: `, "")
    .replace(/\.$/, "");
}

/**
 * saveEndpoint (which requires pools), then the GPU types the endpoint had put back through REST, the
 * only write of types no pool describes. Between the two the endpoint has the pools saved; a busy
 * service is waited out for the second, and if it still fails the error names the types to set back.
 * `types` when already read (a delete keeps them for its undo). `during` names the operation in the
 * error: in a delete the save is its scale to zero, not an update, and what to do is said by the undo.
 */
async function saveKeepingGpuTypes(
  call: Call,
  id: string,
  desired: EndpointDesired,
  env: Record<string, string>,
  types?: GpuTypes,
  during: "update" | "delete" = "update",
): Promise<GqlEndpoint> {
  const kept = types ?? (await knownGpuTypes(call, id));
  const gpuIds = GpuIdsList.safeParse(desired.gpuIds).success ? desired.gpuIds : ENDPOINT_DEFAULTS.gpuIds;
  const saved = await call.api.endpoints.save(toSaveInput({ ...desired, gpuIds }, id, env));
  try {
    await putGpuTypesBack(call, id, kept);
  } catch (error) {
    const putBack = `putting back the GPU types set through REST (gpuTypeIds ${JSON.stringify(kept)}; saveEndpoint can only send pools, so it sent ${gpuIds}) failed: ${reason(call, error)}`;
    throw new ProviderError(
      "SERVICE",
      during === "delete"
        ? `${call.operation}: gpuIds: the endpoint was not deleted: its scale to zero, which the delete needs first, was saved, but ${putBack}. If it still runs on ${gpuIds}, set gpuTypeIds back through REST (PATCH /endpoints/${id}).`
        : `${call.operation}: gpuIds: the update was saved, but ${putBack}. Set gpuTypeIds back through REST (PATCH /endpoints/${id}), or set gpuIds in the program to the pools you want.`,
      { operation: call.operation, field: "gpuIds", cause: error },
    );
  }
  return (await call.api.endpoints.get(id)) ?? saved;
}

/**
 * One delete attempt. The service refuses to delete an endpoint that may still run workers, so it is
 * first scaled to zero with a full saveEndpoint of its current configuration; a refusal while workers
 * stop is waited out by the caller within runpodkit:deleteTimeout (or customTimeouts.delete). GPU
 * types set through REST (gpuIds "") cannot be saved: they are put back after the save, and kept in
 * `restTypes` for the undo, since a failed put-back leaves the endpoint on the pools it saved.
 */
async function removeEndpoint(call: Call, id: string, restTypes: Map<string, GpuTypes>): Promise<void> {
  const current = await call.api.endpoints.get(id);
  if (current === null) return;
  if (current.workersMin !== 0 || current.workersMax !== 0) {
    const desired = { ...recordAsDesired(current), workersMin: 0, workersMax: 0 };
    if (GpuIdsList.safeParse(desired.gpuIds).success) {
      await call.api.endpoints.save(toSaveInput(desired, id));
    } else {
      const types = await knownGpuTypes(call, id);
      restTypes.set(id, types);
      await saveKeepingGpuTypes(call, id, desired, desired.env, types, "delete");
    }
  }
  await call.api.endpoints.delete(id);
  restTypes.delete(id);
}

/**
 * After a delete that failed: an endpoint its attempts scaled to zero gets the worker counts of the
 * outputs back, and the GPU types set through REST it had before the scale (the save in between
 * sent pools). It stays in the stack, whose outputs (and the next up's diff) say it has them.
 */
async function unscaleEndpoint(
  call: Call,
  id: string,
  outputs: Props,
  restTypes: Map<string, GpuTypes>,
): Promise<string | undefined> {
  const remembered = restTypes.get(id);
  restTypes.delete(id);
  const { workersMin, workersMax } = outputs;
  if (typeof workersMin !== "number" || typeof workersMax !== "number") return undefined;
  if (workersMin === 0 && workersMax === 0) return undefined;
  const current = await call.api.endpoints.get(id);
  if (current === null || current.workersMin !== 0 || current.workersMax !== 0) return undefined;
  const desired = { ...recordAsDesired(current), workersMin, workersMax };
  const onPools = GpuIdsList.safeParse(current.gpuIds).success;
  const counts = `workersMin ${workersMin}, workersMax ${workersMax}`;
  let types: GpuTypes | undefined;
  try {
    // The types it had: read before the scale, or (when their put-back held) read now.
    types = remembered ?? (onPools ? undefined : await knownGpuTypes(call, id));
    const gpuIds = onPools ? current.gpuIds : ENDPOINT_DEFAULTS.gpuIds;
    await call.api.endpoints.save(toSaveInput({ ...desired, gpuIds }, id));
  } catch (error) {
    const lost =
      types === undefined
        ? ""
        : `; its GPU types set through REST (gpuTypeIds ${JSON.stringify(types)}) are not back either: set them through REST (PATCH /endpoints/${id})`;
    return `the endpoint had been scaled to zero first, and putting its worker counts back failed (${toProviderError(error, call.operation, [call.settings.apiKey]).message}): it serves no jobs until destroy is run again, or pulumi refresh then up restores workersMin ${workersMin} and workersMax ${workersMax}${lost}`;
  }
  if (types === undefined) {
    // Pools now, though the outputs say its GPU types were set through REST: which ones is unknown here.
    if (outputs.gpuIds === GPU_IDS_NOT_POOLS) {
      return `the endpoint had been scaled to zero first; its worker counts were put back (${counts}), but it now runs on the pools ${current.gpuIds}, not the GPU types set through REST it had before: set them again through REST (PATCH /endpoints/${id} with gpuTypeIds)`;
    }
    return `the endpoint had been scaled to zero first; its worker counts were put back (${counts}), so it serves as before`;
  }
  try {
    // Once: the delete's bound, within which a busy service was waited out, is spent.
    await call.api.endpoints.setGpuTypes(id, types);
  } catch (error) {
    const saved = onPools ? current.gpuIds : ENDPOINT_DEFAULTS.gpuIds;
    return `the endpoint had been scaled to zero first; its worker counts were put back (${counts}), but it now runs on the pools ${saved}, not its GPU types set through REST (gpuTypeIds ${JSON.stringify(types)}), and putting those back failed (${reason(call, error)}): set them through REST (PATCH /endpoints/${id} with gpuTypeIds ${JSON.stringify(types)})`;
  }
  return `the endpoint had been scaled to zero first; its worker counts (${counts}) and its GPU types set through REST (gpuTypeIds ${JSON.stringify(types)}) were put back, so it serves as before`;
}

export function createEndpointProvider(context: ProviderContext) {
  return implement(endpointDefinition(), context);
}

/** What Pulumi's provider host loads (through provider/endpoint-provider.ts, see provider/dynamic.ts). */
export const endpointProvider = createEndpointProvider(hostContext());

// The Resource class ------------------------------------------------------------------------------

/** The provider object Pulumi serializes into the state (see provider/dynamic.ts). */
export const endpointForwarder = forwardingProvider(
  packageSpecifier(join(__dirname, "endpoint-provider")),
  "endpointProvider",
);

/** Every output: the inputs, adoptId and the computed fields. */
export const ENDPOINT_OUTPUTS = outputKeys(endpointSpec);

// Pure mappers ------------------------------------------------------------------------------------

/** Comma lists the service may echo with other spacing (or, before it dropped them, repeats); "" means none. */
function commaList(value: unknown): unknown {
  if (typeof value !== "string" || isUnknown(value)) return value;
  return canonicalCommaList(value) || null;
}

function commaListOrNull(value: string | null | undefined): string | null {
  const list = commaList(value ?? null);
  return typeof list === "string" ? list : null;
}

/** The saveEndpoint input: ALWAYS the whole configuration, since saveEndpoint is a full replace. */
export function toSaveInput(
  desired: EndpointDesired,
  id?: string,
  env: Record<string, string> = desired.env,
): z.input<typeof GqlEndpointInput> {
  return {
    ...(id ? { id } : {}),
    name: desired.name,
    templateId: desired.templateId,
    hubReleaseId: desired.hubReleaseId,
    modelName: desired.modelName,
    computeType: desired.computeType,
    type: desired.type,
    gpuIds: desired.gpuIds,
    gpuCount: desired.gpuCount,
    instanceIds: desired.instanceIds,
    workersMin: desired.workersMin,
    workersMax: desired.workersMax,
    workersStandby: desired.workersStandby,
    idleTimeout: desired.idleTimeout,
    scalerType: desired.scalerType,
    scalerValue: desired.scalerValue,
    flashBootType: desired.flashBootType,
    executionTimeoutMs: desired.executionTimeoutMs,
    locations: desired.locations,
    allowedCudaVersions: desired.allowedCudaVersions,
    networkVolumeId: desired.networkVolumeId,
    networkVolumeIds: desired.networkVolumeIds.map((networkVolumeId) => ({ networkVolumeId })),
    minCudaVersion: desired.minCudaVersion,
    env: Object.entries(env).map(([key, value]) => ({ key, value })),
  };
}

/** An endpoint's current configuration as a desired one (every env key included). */
export function recordAsDesired(record: GqlEndpoint): EndpointDesired {
  return {
    name: record.name,
    templateId: record.templateId,
    hubReleaseId: record.hubReleaseId ?? null,
    modelName: record.modelName ?? null,
    computeType: record.computeType,
    type: record.type,
    gpuIds: record.gpuIds,
    gpuCount: record.gpuCount,
    instanceIds: record.instanceIds,
    workersMin: record.workersMin,
    workersMax: record.workersMax,
    workersStandby: record.workersStandby,
    idleTimeout: record.idleTimeout,
    scalerType: record.scalerType,
    scalerValue: record.scalerValue,
    flashBootType: record.flashBootType,
    executionTimeoutMs: record.executionTimeoutMs,
    locations: commaListOrNull(record.locations),
    allowedCudaVersions: commaListOrNull(record.allowedCudaVersions),
    networkVolumeId: record.networkVolumeId ?? null,
    networkVolumeIds: (record.networkVolumeIds ?? []).flatMap((v) =>
      v.networkVolumeId ? [v.networkVolumeId] : [],
    ),
    minCudaVersion: CudaVersion.safeParse(record.minCudaVersion).data ?? null,
    env: envMap(record),
    adoptId: undefined,
  };
}

function envMap(record: GqlEndpoint): Record<string, string> {
  return Object.fromEntries(record.env.map(({ key, value }) => [key, value]));
}

/** The env as the outputs report it: without the create's mark (CREATE_MARK), unless the program manages it. */
export function withoutMark(
  env: Record<string, string>,
  managed: readonly string[] | null,
): Record<string, string> {
  if (managed?.includes(CREATE_MARK) === true) return env;
  const { [CREATE_MARK]: _mark, ...rest } = env;
  return rest;
}

/** The env keys the last applied configuration set (null when unknown: a lookup by id, or no env). */
export function managedKeys(previous: Props): string[] | null {
  const env = previous.env;
  return env !== null && typeof env === "object" && !Array.isArray(env) ? Object.keys(env) : null;
}

/** The entries of `env` under the managed keys. */
export function onlyKeys(env: Record<string, string>, keys: readonly string[]): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([key]) => keys.includes(key)));
}

/**
 * Env keys on the endpoint that the program does not manage: neither in the last applied env nor in
 * the desired one. They were added elsewhere (the service, a console user) and are kept.
 */
export function foreignEnv(
  current: GqlEndpoint,
  previous: Props,
  desired: EndpointDesired,
): Record<string, string> {
  const managed = new Set([...(managedKeys(previous) ?? []), ...Object.keys(desired.env)]);
  return Object.fromEntries(Object.entries(envMap(current)).filter(([key]) => !managed.has(key)));
}

/**
 * The whole record as outputs; `previous` (the last applied inputs or outputs) fills fields a service
 * may not report back and says which env keys are managed: only those are read back, so a key added
 * elsewhere is not drift.
 */
export function endpointOutputs(
  record: GqlEndpoint,
  previous: Props,
  settings: ProviderSettings,
): Omit<EndpointState, "adoptId"> {
  const { adoptId: _adoptId, ...current } = recordAsDesired(record);
  const managed = managedKeys(previous);
  return {
    ...current,
    // Not every service reports these back; when one does not, the last applied value stands.
    hubReleaseId:
      record.hubReleaseId === undefined ? stringOrNull(previous.hubReleaseId) : current.hubReleaseId,
    modelName: record.modelName === undefined ? stringOrNull(previous.modelName) : current.modelName,
    env: withoutMark(managed === null ? current.env : onlyKeys(current.env, managed), managed),
    url: endpointUrl(settings.queueUrl, record.type, record.id),
    createdAt: record.createdAt,
    version: record.version,
  };
}

/**
 * Where an endpoint takes requests. A queue-based one: the job API, `{queueUrl}/v2/{id}`. A
 * load-balancing one has no queue (/v2 refuses it): requests go to its workers' HTTP servers behind
 * `https://{id}.api.runpod.ai`, the id as a subdomain of the queue host. An IP address takes no
 * subdomain (the local service's queueUrl), so `localhost` stands in for it: `*.localhost` is
 * loopback (RFC 6761), and the local service, which serves no LB traffic, answers there with 404.
 */
export function endpointUrl(queueUrl: string, type: string, id: string): string {
  if (type !== "LB") return `${queueUrl}/v2/${id}`;
  const url = new URL(queueUrl);
  const host = isIP(url.hostname.replace(/^\[|\]$/g, "")) !== 0 ? "localhost" : url.hostname;
  url.hostname = `${id}.${host}`;
  return url.href.replace(/\/$/, "");
}

/** Endpoints that use a template or a volume; one scaled to zero is on its way out (delete scales it first). */
export async function endpointsUsing(
  call: Call,
  uses: (endpoint: GqlEndpoint) => boolean,
): Promise<Dependent[]> {
  const endpoints = await call.api.endpoints.list();
  return endpoints
    .filter(uses)
    .map((e) => ({ noun: "endpoint", id: e.id, name: e.name, leaving: e.workersMax === 0 }));
}

function stringOrNull(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

export type { EndpointArgs, EndpointState };
