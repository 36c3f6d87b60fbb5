import { z } from "zod";
import { ENDPOINT_DEFAULTS, type GqlEndpoint, GqlEndpointInput } from "../sdk/schemas";
import type { CheckFailure, InputSpec, Props } from "./check";
import type { ProviderSettings } from "./config";
import { hostContext, type ProviderContext } from "./context";
import {
  ADOPT_ID,
  adoptIdInput,
  type Call,
  deleteWithin,
  implement,
  type ResourceDefinition,
} from "./implement";
import { isUnknown, pathHitsUnknown } from "./unknowns";

const fields = GqlEndpointInput.shape;

/**
 * Inputs of Endpoint, managed through GraphQL saveEndpoint. Every deployment source the service
 * knows: a template's container image (templateId), a preconfigured repository release
 * (hubReleaseId) and a cached model named by its repository URL (modelName).
 */
export const EndpointInputs = z.strictObject({
  name: fields.name.optional().describe("Endpoint name. Default: the resource name plus a random suffix."),
  templateId: fields.templateId.describe("Id of the template whose container image the workers run."),
  hubReleaseId: z
    .string()
    .min(1)
    .nullable()
    .optional()
    .describe("Deploy a preconfigured repository release."),
  modelName: z
    .string()
    .min(1)
    .nullable()
    .optional()
    .describe("Model repository URL (or repository name) to cache on the workers, for shorter cold starts."),
  computeType: z
    .enum(["GPU", "CPU"])
    .optional()
    .describe("GPU or CPU workers (default GPU). Changing it replaces the endpoint."),
  type: z
    .enum(["QB", "LB"])
    .optional()
    .describe("QB queue-based or LB load-balancing (default QB). Changing it replaces the endpoint."),
  gpuIds: z
    .string()
    .optional()
    .describe('GPU pools in priority order, e.g. "AMPERE_48,-NVIDIA RTX A6000" (default AMPERE_16).'),
  gpuCount: z.int().min(1).max(8).optional().describe("GPUs per worker (default 1)."),
  instanceIds: z.array(z.string().min(1)).optional().describe('CPU instance ids, e.g. "cpu3c-2-4".'),
  workersMin: z.int().min(0).optional().describe("Workers kept running; 0 scales to zero (default 0)."),
  workersMax: z.int().min(0).optional().describe("Most workers at once (default 3)."),
  workersStandby: z.int().min(0).optional().describe("Standby workers (default 1)."),
  idleTimeout: z
    .int()
    .min(1)
    .max(3600)
    .optional()
    .describe("Seconds before an idle worker stops (default 5)."),
  scalerType: z
    .enum(["QUEUE_DELAY", "REQUEST_COUNT"])
    .optional()
    .describe("Autoscaler kind (default QUEUE_DELAY)."),
  scalerValue: z.int().min(1).optional().describe("Autoscaler target (default 4)."),
  flashBootType: z
    .enum(["OFF", "FLASHBOOT"])
    .optional()
    .describe("FLASHBOOT for faster cold starts (default OFF)."),
  executionTimeoutMs: z
    .int()
    .min(5_000)
    .max(7 * 24 * 3600 * 1000)
    .optional()
    .describe("Longest a job may run, in ms (default 600000)."),
  locations: z.string().nullable().optional().describe('Regions, e.g. "US,CZ"; null for any (default).'),
  allowedCudaVersions: z
    .string()
    .nullable()
    .optional()
    .describe('CUDA versions, e.g. "12.4,12.5"; null for any.'),
  networkVolumeId: z.string().min(1).nullable().optional().describe("Network volume mounted on the workers."),
  env: z.record(z.string().min(1), z.string()).optional().describe("Worker environment. Stored as a secret."),
  adoptId: adoptIdInput("Id of an existing endpoint to take over instead of creating one."),
});
export type EndpointInputs = z.input<typeof EndpointInputs>;

/** Comma lists the service may echo with other spacing; "" means none. */
function commaList(value: unknown): unknown {
  if (typeof value !== "string" || isUnknown(value)) return value;
  const items = value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  return items.length === 0 ? null : items.join(",");
}

/** Outputs the service computes. */
export const EndpointComputed = z.object({
  url: z.string().describe("The endpoint's job API address, `{queueUrl}/v2/{id}`."),
  createdAt: z.string().describe("When the endpoint was created (ISO-8601)."),
  version: z.int().describe("Bumped by the service when the template or env changes (a rolling release)."),
});

export const endpointSpec: InputSpec = {
  type: "Endpoint",
  schema: EndpointInputs,
  computed: EndpointComputed,
  secrets: ["env"],
  defaults: {
    ...ENDPOINT_DEFAULTS,
    hubReleaseId: null,
    modelName: null,
    instanceIds: [],
    locations: null,
    allowedCudaVersions: null,
    networkVolumeId: null,
    env: {},
  },
  createOnly: [ADOPT_ID],
  canonical: (props) => ({
    ...props,
    locations: commaList(props.locations) ?? null,
    allowedCudaVersions: commaList(props.allowedCudaVersions) ?? null,
  }),
  // What saveEndpoint would refuse, found with the SDK's own wire schema, plus the domain's rules.
  rules: (news) => {
    const wire = toSaveInput(news);
    const failures: CheckFailure[] = [];
    const result = GqlEndpointInput.safeParse(wire);
    if (!result.success) {
      for (const issue of result.error.issues) {
        if (pathHitsUnknown(wire, issue.path)) continue;
        const property = String(issue.path[0] ?? "(inputs)");
        failures.push({ property, reason: `${property}: ${issue.message}` });
      }
    }
    const { workersMin, workersMax } = news;
    if (typeof workersMin === "number" && typeof workersMax === "number" && workersMin > workersMax) {
      failures.push({
        property: "workersMin",
        reason: `workersMin: must not exceed workersMax (${workersMin} > ${workersMax})`,
      });
    }
    return failures;
  },
};

/** The saveEndpoint input: ALWAYS the whole configuration, since saveEndpoint is a full replace. */
export function toSaveInput(inputs: Props, id?: string): z.input<typeof GqlEndpointInput> {
  const env = inputs.env;
  const envList =
    env !== null && typeof env === "object"
      ? Object.entries(env as Record<string, string>).map(([key, value]) => ({ key, value }))
      : env;
  return {
    ...(id ? { id } : {}),
    name: String(inputs.name),
    templateId: String(inputs.templateId),
    hubReleaseId: (inputs.hubReleaseId as string | null) ?? null,
    modelName: (inputs.modelName as string | null) ?? null,
    computeType: inputs.computeType as "GPU" | "CPU",
    type: inputs.type as "QB" | "LB",
    gpuIds: String(inputs.gpuIds),
    gpuCount: inputs.gpuCount as number,
    instanceIds: (inputs.instanceIds as string[]) ?? [],
    workersMin: inputs.workersMin as number,
    workersMax: inputs.workersMax as number,
    workersStandby: inputs.workersStandby as number,
    idleTimeout: inputs.idleTimeout as number,
    scalerType: inputs.scalerType as "QUEUE_DELAY" | "REQUEST_COUNT",
    scalerValue: inputs.scalerValue as number,
    flashBootType: inputs.flashBootType as "OFF" | "FLASHBOOT",
    executionTimeoutMs: inputs.executionTimeoutMs as number,
    locations: (inputs.locations as string | null) ?? null,
    allowedCudaVersions: (inputs.allowedCudaVersions as string | null) ?? null,
    networkVolumeId: (inputs.networkVolumeId as string | null) ?? null,
    env: envList as { key: string; value: string }[],
  };
}

/** The whole record as outputs; `previous` only fills fields a service may not report back. */
export function endpointOutputs(record: GqlEndpoint, previous: Props, settings: ProviderSettings): Props {
  return {
    name: record.name,
    templateId: record.templateId,
    // Not every service reports these back; when one does not, the last applied value stands.
    hubReleaseId: record.hubReleaseId === undefined ? (previous.hubReleaseId ?? null) : record.hubReleaseId,
    modelName: record.modelName === undefined ? (previous.modelName ?? null) : record.modelName,
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
    locations: commaList(record.locations) ?? null,
    allowedCudaVersions: commaList(record.allowedCudaVersions) ?? null,
    networkVolumeId: record.networkVolumeId ?? null,
    env: Object.fromEntries(record.env.map(({ key, value }) => [key, value])),
    url: `${settings.queueUrl}/v2/${record.id}`,
    createdAt: record.createdAt,
    version: record.version,
  };
}

/**
 * Delete: the service refuses to delete an endpoint that may still run workers, so first scale it to
 * zero with a full saveEndpoint of its current configuration, then retry deleteEndpoint with backoff
 * until it is accepted or the configured bound (runpodkit:deleteTimeout) runs out.
 */
async function removeEndpoint(call: Call, id: string, previous: Props): Promise<void> {
  const current = await call.api.endpoints.get(id);
  if (current === null) return;
  if (current.workersMin !== 0 || current.workersMax !== 0) {
    const config = endpointOutputs(current, previous, call.settings);
    await call.api.endpoints.save(toSaveInput({ ...config, workersMin: 0, workersMax: 0 }, id));
  }
  await deleteWithin(call, () => call.api.endpoints.delete(id));
}

export function endpointDefinition(): ResourceDefinition<GqlEndpoint> {
  return {
    noun: "endpoint",
    spec: endpointSpec,
    replaceOnChange: ["computeType", "type"],
    uniqueName: false,
    fetch: (call, id) => call.api.endpoints.get(id),
    create: (call, inputs) => call.api.endpoints.save(toSaveInput(inputs)),
    apply: (call, id, _current, inputs) => call.api.endpoints.save(toSaveInput(inputs, id)),
    remove: removeEndpoint,
    idOf: (record) => record.id,
    nameOf: (record) => record.name,
    outputs: endpointOutputs,
  };
}

export function createEndpointProvider(context: ProviderContext) {
  return implement(endpointDefinition(), context);
}

/** What Pulumi's provider host loads (see provider/dynamic.ts). */
export const endpointProvider = createEndpointProvider(hostContext());
