import { join } from "node:path";
import { z } from "zod";
import { PodCreateInput, type Pod as PodRecord, type PodUpdateInput } from "../sdk/schemas";
import { type CheckFailure, type InputSpec, type Props, parseInputs, uniqueList } from "./check";
import { hostContext, type ProviderContext } from "./context";
import { CREATE_MARK, fittingMark, reservedMarkFailures, withCreateMark } from "./create-mark";
import { forwardingProvider, packageSpecifier } from "./dynamic";
import { managedKeys, onlyKeys } from "./endpoint";
import { ProviderError } from "./errors";
import {
  ADOPT_ID,
  adoptIdInput,
  implement,
  orNull,
  type ResourceDefinition,
  undoCreateOnFailure,
} from "./implement";
import type { PodArgs, PodState } from "./public-types";
import { outputKeys } from "./resource";
import { isUnknown } from "./unknowns";

// Arguments ---------------------------------------------------------------------------------------

const fields = PodCreateInput.shape;

/** Inputs of Pod (REST /pods): a rented GPU or CPU machine. */
export const PodInputs = z.strictObject({
  name: fields.name.describe(
    'Pod name. Stored without surrounding white space and in composed Unicode (NFC; " web " is "web"). Default: the resource name plus a generated suffix.',
  ),
  imageName: z.string().min(1).describe("Container image the pod runs, e.g. `runpod/pytorch:2.4`."),
  computeType: fields.computeType
    .unwrap()
    .default("GPU")
    .describe("GPU or CPU pod (default GPU). Changing it replaces the pod."),
  gpuTypeIds: fields.gpuTypeIds.describe(
    "GPU types to rent, in order of preference (GPU pods; see getGpuTypes). Changing them replaces the pod.",
  ),
  gpuCount: fields.gpuCount
    .unwrap()
    .default(1)
    .describe("GPUs per pod (GPU pods, default 1). Changing it replaces the pod."),
  cpuFlavorIds: fields.cpuFlavorIds.describe(
    "CPU flavors, in order of preference (CPU pods; see getCpuFlavors). Changing them replaces the pod.",
  ),
  vcpuCount: fields.vcpuCount.describe("vCPUs (CPU pods). Changing it replaces the pod."),
  cloudType: fields.cloudType.describe("SECURE or COMMUNITY (default SECURE). Changing it replaces the pod."),
  dataCenterIds: fields.dataCenterIds.describe(
    "Data centers the pod may be placed in (see getDataCenters). Changing them replaces the pod.",
  ),
  interruptible: fields.interruptible
    .unwrap()
    .default(false)
    .describe("Rent at the interruptible (spot) price (default false). Changing it replaces the pod."),
  containerDiskInGb: z.int().min(1).optional().describe("Container disk in GB. A change resets the pod."),
  volumeInGb: z.int().min(0).optional().describe("Pod volume in GB. It can only grow."),
  volumeMountPath: fields.volumeMountPath.describe(
    'The absolute path where the volume is mounted, written plainly (no "." or ".." parts, no "//"; default /workspace).',
  ),
  networkVolumeId: fields.networkVolumeId.describe(
    "Network volume to attach; its data center places the pod. Changing it replaces the pod.",
  ),
  templateId: fields.templateId.describe("Template the pod starts from. Changing it replaces the pod."),
  containerRegistryAuthId: fields.containerRegistryAuthId.describe(
    "Registry credentials for a private image.",
  ),
  dockerEntrypoint: fields.dockerEntrypoint.describe(
    "Overrides the image's entrypoint. A change resets the pod.",
  ),
  dockerStartCmd: fields.dockerStartCmd.describe("Overrides the image's command. A change resets the pod."),
  env: fields.env.describe(
    "Environment of the container; values may reference secrets as `{{ RUNPOD_SECRET_name }}`. Stored as a secret. A change resets the pod. Only these keys are managed: keys the pod gets elsewhere (its template, a console user) are neither reported as drift nor removed. A create of a generated name also sets RUNPODKIT_CREATE_MARK (a random value that tells the pod it made from another of the same name after a lost answer), kept like such a key. The program may not set that key (check refuses it), and it is left out when the env has no room for its 59 bytes under the 256 KiB limit (the env is created as written).",
  ),
  ports: fields.ports.describe('Exposed ports, e.g. ["8888/http", "22/tcp"]. A change resets the pod.'),
  locked: fields.locked.describe("Refuse stop and reset while true."),
  desiredStatus: z
    .enum(["RUNNING", "EXITED"])
    .default("RUNNING")
    .describe("RUNNING (default) or EXITED: the provider starts or stops the pod to match."),
  adoptId: adoptIdInput("Id of an existing pod to take over instead of renting one."),
});
/** The desired configuration: the arguments with defaults applied and a name. */
export type PodDesired = z.output<typeof PodInputs> & { name: string };

// State -------------------------------------------------------------------------------------------

/** Outputs the service computes. */
export const PodComputed = z.object({
  costPerHr: z.number().describe("What the pod costs per hour while it runs (USD)."),
  dataCenterId: z.string().nullable().describe("The data center the pod was placed in."),
  gpuTypeId: z.string().nullable().describe("The GPU type the pod got (GPU pods)."),
  cpuFlavorId: z.string().nullable().describe("The CPU flavor the pod got (CPU pods)."),
});

const REPLACING = [
  "computeType",
  "gpuTypeIds",
  "gpuCount",
  "cpuFlavorIds",
  "vcpuCount",
  "cloudType",
  "dataCenterIds",
  "interruptible",
  "networkVolumeId",
  "templateId",
];

export const podSpec = {
  type: "Pod",
  schema: PodInputs,
  computed: PodComputed,
  secrets: ["env"],
  replaceOnChange: REPLACING,
  uniqueName: false,
  createOnly: [ADOPT_ID],
  // A port given twice is one (the service keeps each once).
  canonical: (props) => ({ ...props, ...uniqueList(props, "ports") }),
  rules: (news, olds) => {
    const failures: CheckFailure[] = [];
    const gpu = news.computeType !== "CPU";
    if (gpu && news.cpuFlavorIds !== undefined && news.cpuFlavorIds !== null) {
      failures.push({
        property: "cpuFlavorIds",
        reason: 'cpuFlavorIds: only for CPU pods (set computeType: "CPU")',
      });
    }
    if (!gpu && news.gpuTypeIds !== undefined && news.gpuTypeIds !== null) {
      failures.push({
        property: "gpuTypeIds",
        reason: 'gpuTypeIds: only for GPU pods (remove it or set computeType: "GPU")',
      });
    }
    const before = olds?.volumeInGb;
    const after = news.volumeInGb;
    if (typeof before === "number" && typeof after === "number" && !isUnknown(after) && after < before) {
      failures.push({
        property: "volumeInGb",
        reason: `volumeInGb: a pod volume can only grow (from ${before} GB, not to ${after} GB)`,
      });
    }
    failures.push(...reservedMarkFailures(news.env));
    return failures;
  },
} satisfies InputSpec;

// CRUD --------------------------------------------------------------------------------------------

export function podDefinition(): ResourceDefinition<PodDesired, PodRecord> {
  return {
    noun: "pod",
    spec: podSpec,
    desired: (props) => parseInputs(podSpec, props),
    fetch: (call, id) =>
      orNull(async () => {
        const pod = await call.api.pods.get(id);
        // A serverless worker is a pod too, but not one a Pod resource manages.
        if (pod.endpointId) {
          throw new ProviderError(
            "VALIDATION",
            `${call.operation}: ${id} is a serverless worker of endpoint ${pod.endpointId}, not a rented pod; manage the Endpoint instead`,
            { operation: call.operation, field: "id" },
          );
        }
        return pod;
      }),
    create: async (call, desired) => {
      if (desired.desiredStatus !== "EXITED") return call.api.pods.create(toCreateInput(desired));
      // The service rents a pod RUNNING and a locked pod refuses to stop: rent it unlocked, stop it,
      // then lock it. A failed step terminates the pod, which would otherwise run billed outside the stack.
      const created = await call.api.pods.create(toCreateInput({ ...desired, locked: undefined }));
      const made = { noun: "pod", id: created.id, remove: () => call.api.pods.terminate(created.id) };
      const stopped = await undoCreateOnFailure(
        call,
        made,
        {
          property: "desiredStatus",
          fix: 'Fix the cause and run up again, or set desiredStatus: "RUNNING".',
        },
        () => call.api.pods.stop(created.id),
      );
      if (!desired.locked) return stopped;
      return undoCreateOnFailure(
        call,
        made,
        { property: "locked", fix: "Fix the cause and run up again, or leave locked unset." },
        () => call.api.pods.update(created.id, { locked: true }),
      );
    },
    apply: async (call, id, current, desired, previous) => {
      let pod = current;
      // A locked pod refuses to stop: one to be stopped and locked is stopped before it is locked.
      if (desired.desiredStatus === "EXITED" && pod.desiredStatus === "RUNNING" && !pod.locked)
        pod = await call.api.pods.stop(id);
      const patch = toPatch(pod, desired, previous);
      if (Object.keys(patch).length > 0) pod = await call.api.pods.update(id, patch);
      if (desired.desiredStatus === "RUNNING" && pod.desiredStatus === "EXITED")
        pod = await call.api.pods.start(id);
      if (desired.desiredStatus === "EXITED" && pod.desiredStatus === "RUNNING")
        pod = await call.api.pods.stop(id);
      return pod;
    },
    remove: (call, id) => call.api.pods.terminate(id),
    // Rented pods only: a serverless worker is a pod too, but never one a Pod resource made.
    inventory: async (call) =>
      (await call.api.pods.list())
        .filter((p) => !p.endpointId)
        .map(({ id, name, env }) => ({ id, name, mark: env?.[CREATE_MARK] })),
    // Pod names repeat, and a stack of the same names elsewhere generates the same ones. The mark is
    // a key the program does not manage: outputs leave it out and updates keep it (foreignPodEnv).
    createMark: (desired, mark) => {
      const env = withCreateMark(desired.env ?? {}, mark);
      return env && { ...desired, env };
    },
    idOf: (record) => record.id,
    nameOf: (record) => record.name,
    outputs: podOutputs,
  };
}

export function createPodProvider(context: ProviderContext) {
  return implement(podDefinition(), context);
}

/** What Pulumi's provider host loads (through provider/pod-provider.ts, see provider/dynamic.ts). */
export const podProvider = createPodProvider(hostContext());

// The Resource class ------------------------------------------------------------------------------

/** The provider object Pulumi serializes into the state (see provider/dynamic.ts). */
export const podForwarder = forwardingProvider(
  packageSpecifier(join(__dirname, "pod-provider")),
  "podProvider",
);

/** Every output: the inputs, adoptId and the computed fields. */
export const POD_OUTPUTS = outputKeys(podSpec);

// Pure mappers ------------------------------------------------------------------------------------

export function toCreateInput(desired: PodDesired): PodCreateInput {
  const gpu = desired.computeType === "GPU";
  const input: PodCreateInput = {
    name: desired.name,
    imageName: desired.imageName,
    computeType: desired.computeType,
    ...(gpu ? { gpuCount: desired.gpuCount } : {}),
  };
  const optional = {
    gpuTypeIds: gpu ? desired.gpuTypeIds : undefined,
    cpuFlavorIds: gpu ? undefined : desired.cpuFlavorIds,
    vcpuCount: gpu ? undefined : desired.vcpuCount,
    cloudType: desired.cloudType,
    dataCenterIds: desired.dataCenterIds,
    interruptible: desired.interruptible,
    containerDiskInGb: desired.containerDiskInGb,
    volumeInGb: desired.volumeInGb,
    volumeMountPath: desired.volumeMountPath,
    networkVolumeId: desired.networkVolumeId,
    templateId: desired.templateId,
    containerRegistryAuthId: desired.containerRegistryAuthId,
    dockerEntrypoint: desired.dockerEntrypoint,
    dockerStartCmd: desired.dockerStartCmd,
    env: desired.env,
    ports: desired.ports,
    locked: desired.locked,
  };
  for (const [key, value] of Object.entries(optional)) {
    if (value !== undefined && value !== null) Object.assign(input, { [key]: value });
  }
  return input;
}

/**
 * Only what differs, so an unchanged pod is not reset by an update that changes nothing. `previous`
 * (the last outputs) says which env keys the program managed: the service replaces a pod's env
 * whole, so the keys it did not set (its template's, ones added elsewhere) are sent back with it.
 */
export function toPatch(current: PodRecord, desired: PodDesired, previous: Props = {}): PodUpdateInput {
  const patch: PodUpdateInput = {};
  const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  if (desired.name !== current.name) patch.name = desired.name;
  if (desired.imageName !== current.image) patch.imageName = desired.imageName;
  const optional: [keyof PodUpdateInput, unknown, unknown][] = [
    ["containerDiskInGb", desired.containerDiskInGb, current.containerDiskInGb],
    ["volumeInGb", desired.volumeInGb, current.volumeInGb],
    ["volumeMountPath", desired.volumeMountPath, current.volumeMountPath],
    ["dockerEntrypoint", desired.dockerEntrypoint, current.dockerEntrypoint],
    ["dockerStartCmd", desired.dockerStartCmd, current.dockerStartCmd],
    [
      "env",
      desired.env &&
        fittingMark({ ...foreignPodEnv(current, previous, desired.env), ...desired.env }, desired.env),
      current.env,
    ],
    ["ports", desired.ports, current.ports],
    ["locked", desired.locked, current.locked],
  ];
  for (const [key, want, have] of optional) {
    if (want !== undefined && want !== null && !same(want, have)) Object.assign(patch, { [key]: want });
  }
  const auth = desired.containerRegistryAuthId ?? null;
  if (auth !== (current.containerRegistryAuthId ?? null)) patch.containerRegistryAuthId = auth;
  return patch;
}

/** The pod's env keys the program never set (from its template, or added elsewhere): kept on update. */
function foreignPodEnv(
  current: PodRecord,
  previous: Props,
  env: Record<string, string>,
): Record<string, string> {
  const managed = new Set([...(managedKeys(previous) ?? []), ...Object.keys(env)]);
  return Object.fromEntries(Object.entries(current.env ?? {}).filter(([key]) => !managed.has(key)));
}

/**
 * Fields the service fills from the template or the compute type when the program leaves them out:
 * only a program that sets one manages it (reads it back, sees drift); otherwise it stays null.
 */
const SERVICE_CHOSEN = [
  "containerDiskInGb",
  "volumeInGb",
  "volumeMountPath",
  "dockerEntrypoint",
  "dockerStartCmd",
  "ports",
  "locked",
] as const;

export function podOutputs(record: PodRecord, previous: Record<string, unknown>): Record<string, unknown> {
  const out = podRecordOutputs(record);
  for (const field of SERVICE_CHOSEN) {
    if (previous[field] === undefined || previous[field] === null) out[field] = null;
  }
  // The service gives a pod its template's env plus the program's ({} when neither has any): only the
  // keys the program sets are managed, and a program without env manages none (null, as its input).
  const managed = managedKeys(previous);
  out.env = managed === null ? null : onlyKeys(record.env ?? {}, managed);
  return out;
}

function podRecordOutputs(record: PodRecord): Record<string, unknown> {
  return {
    name: record.name,
    imageName: record.image,
    computeType: record.cpuFlavorId ? "CPU" : "GPU",
    containerDiskInGb: record.containerDiskInGb ?? null,
    volumeInGb: record.volumeInGb ?? null,
    volumeMountPath: record.volumeMountPath ?? null,
    networkVolumeId: record.networkVolumeId ?? null,
    templateId: record.templateId ?? null,
    containerRegistryAuthId: record.containerRegistryAuthId ?? null,
    dockerEntrypoint: record.dockerEntrypoint ?? null,
    dockerStartCmd: record.dockerStartCmd ?? null,
    env: record.env ?? null,
    ports: record.ports ?? null,
    locked: record.locked ?? null,
    interruptible: record.interruptible ?? false,
    desiredStatus: record.desiredStatus === "EXITED" ? "EXITED" : "RUNNING",
    costPerHr: record.costPerHr ?? 0,
    dataCenterId: record.machine?.dataCenterId ?? null,
    gpuTypeId: record.machine?.gpuTypeId ?? record.gpu?.id ?? null,
    cpuFlavorId: record.cpuFlavorId ?? null,
  };
}

export type { PodArgs, PodState };
