import type { z } from "zod";
import {
  GqlCpuFlavorInput,
  GqlGpuAvailabilityInput,
  GqlGpuLowestPriceInput,
  GqlGpuTypeFilter,
} from "../../../sdk/schemas/catalogue";
import { givenRef } from "../../../sdk/schemas/common";
import {
  ContainerRegistryAuthCreateInput,
  GqlRegistryAuthUpdateInput,
} from "../../../sdk/schemas/container-registry-auth";
import { GqlEndpointInput, GqlUpdateEndpointTemplateInput } from "../../../sdk/schemas/endpoint";
import {
  GqlNetworkVolumeCreateInput,
  GqlNetworkVolumeDeleteInput,
  GqlNetworkVolumeUpdateInput,
} from "../../../sdk/schemas/network-volume";
import {
  GqlDeployCpuPodInput,
  GqlPodEditJobInput,
  GqlPodFilter,
  GqlPodFindAndDeployOnDemandInput,
  GqlPodIdInput,
  GqlPodResumeInput,
} from "../../../sdk/schemas/pod";
import {
  GqlSecretCreateInput,
  GqlSecretDescriptionUpdateInput,
  GqlSecretValueUpdateInput,
} from "../../../sdk/schemas/secret";
import {
  GqlTemplateInput,
  isPortSpec,
  type KeyValue,
  PORT_FORM,
  splitCommaList,
} from "../../../sdk/schemas/template";
import { GqlUserSettingsInput } from "../../../sdk/schemas/user";
import { parseManagementInput } from "../../edge/parse";
import { asField, invalid, ServiceError } from "../../errors";
import type { Management } from "../index";
import {
  cpuFlavors,
  dataCenters,
  type GpuTypeView,
  gpuAvailability,
  gpuTypes,
  lowestPrice,
} from "../model/catalogue";
import { publicRegistryAuth } from "../model/container-registry-auth";
import type { EndpointChanges } from "../model/endpoint";
import type { PodCreate } from "../model/pod";
import type { EndpointRecord } from "../model/records";
import type { TemplateChanges } from "../model/template";
import { envList, gqlPod, gqlPodEntry, gqlRentedPod, gqlSecret, gqlTemplate } from "./shape";

export interface GraphqlContext {
  management: Management;
  accountId: string;
}

type Args = Record<string, unknown>;

const envMap = (env: readonly (KeyValue | null)[] | null | undefined) =>
  env
    ? Object.fromEntries(env.flatMap((entry) => (entry ? [[entry.key, entry.value] as const] : [])))
    : undefined;
/** GraphQL null means "not given": with full-replace semantics it resets the field to its default. */
const given = <T>(value: T | null | undefined): T | undefined => (value === null ? undefined : value);

function endpointChanges(input: GqlEndpointInput): EndpointChanges {
  return {
    name: input.name,
    templateId: input.templateId,
    gpuIds: input.gpuIds,
    idleTimeout: given(input.idleTimeout),
    locations: input.locations?.trim() ? input.locations : undefined,
    flashBootType: given(input.flashBootType),
    scalerType: given(input.scalerType),
    scalerValue: given(input.scalerValue),
    workersMin: given(input.workersMin),
    workersMax: given(input.workersMax),
    workersStandby: given(input.workersStandby),
    networkVolumeId: givenRef(input.networkVolumeId),
    hubReleaseId: given(input.hubReleaseId),
    modelName: given(input.modelName),
    type: given(input.type),
    gpuCount: given(input.gpuCount),
    executionTimeoutMs: given(input.executionTimeoutMs),
    env: envMap(input.env),
    allowedCudaVersions: input.allowedCudaVersions ? splitCommaList(input.allowedCudaVersions) : undefined,
    instanceIds: given(input.instanceIds),
    computeType: given(input.computeType),
    // Both kept when not sent at all (older clients never send them); null clears them.
    networkVolumeIds:
      input.networkVolumeIds === null ? [] : input.networkVolumeIds?.map((v) => v.networkVolumeId),
    minCudaVersion: input.minCudaVersion === undefined ? undefined : (input.minCudaVersion ?? null),
  };
}

function templateChanges(input: GqlTemplateInput): TemplateChanges {
  return {
    name: input.name,
    imageName: input.imageName,
    category: given(input.category),
    isServerless: given(input.isServerless),
    containerDiskInGb: given(input.containerDiskInGb),
    volumeInGb: given(input.volumeInGb),
    volumeMountPath: given(input.volumeMountPath),
    // The start command as one string, kept as written; the model derives REST's argv from it.
    dockerArgs: given(input.dockerArgs),
    env: envMap(input.env),
    // "" is no ports (the Python library sends it when none are given); null or absent: the default.
    ports: typeof input.ports === "string" ? splitCommaList(input.ports) : undefined,
    readme: given(input.readme),
    isPublic: given(input.isPublic),
    containerRegistryAuthId: givenRef(input.containerRegistryAuthId),
    startSsh: given(input.startSsh),
    startJupyter: given(input.startJupyter),
    startScript: given(input.startScript),
  };
}

/** A pod's comma list of ports, each "<port>/<http|tcp>"; "" is none, null or absent not given. */
function portList(ports: string | null | undefined): string[] | undefined {
  if (typeof ports !== "string") return undefined;
  const list = splitCommaList(ports);
  for (const port of list) {
    if (!isPortSpec(port)) throw invalid("ports", `bad port "${port}"; expected ${PORT_FORM}`);
  }
  return list;
}

/** What deployCpuPod and podFindAndDeployOnDemand share; "" is "not given" for strings, as the real service. */
function deployChanges(
  input: GqlDeployCpuPodInput | GqlPodFindAndDeployOnDemandInput,
): Omit<PodCreate, "computeType"> {
  const dataCenterId = givenRef(input.dataCenterId);
  return {
    name: input.name || undefined,
    cloudType: given(input.cloudType) ?? "ALL",
    dataCenterIds: dataCenterId ? [dataCenterId] : undefined,
    countryCodes: input.countryCode ? [input.countryCode] : undefined,
    imageName: input.imageName || undefined,
    dockerArgs: input.dockerArgs || undefined,
    env: envMap(input.env),
    ports: portList(input.ports),
    containerDiskInGb: given(input.containerDiskInGb),
    volumeMountPath: input.volumeMountPath || undefined,
    templateId: givenRef(input.templateId),
    networkVolumeId: givenRef(input.networkVolumeId),
    containerRegistryAuthId: givenRef(input.containerRegistryAuthId),
    supportPublicIp: given(input.supportPublicIp),
    startSsh: given(input.startSsh),
    startJupyter: given(input.startJupyter),
  };
}

/** null for a pod the account does not have (other accounts' ids read as missing). */
function orNull<T>(read: () => T): T | null {
  try {
    return read();
  } catch (error) {
    if (error instanceof ServiceError && error.code === "NOT_FOUND") return null;
    throw error;
  }
}

const parse = <S extends z.ZodType>(schema: S, value: unknown) =>
  parseManagementInput(schema, value, "input");

/** Resolvers: parse (zod), call one domain function, shape the reply. */
export const resolvers = {
  Query: {
    myself: () => ({}),
    pod: (_: unknown, args: Args, c: GraphqlContext) => {
      const { podId } = parse(GqlPodFilter, args.input);
      return orNull(() => gqlPodEntry(c.management.pods.get(c.accountId, podId), c.management.pods.now()));
    },
    gpuTypes: (_: unknown, args: Args) => gpuTypes(args.input ? parse(GqlGpuTypeFilter, args.input) : {}),
    cpuFlavors: (_: unknown, args: Args) =>
      cpuFlavors(args.input ? parse(GqlCpuFlavorInput, args.input) : {}),
    dataCenters: () => dataCenters(),
  },
  GpuType: {
    /** Without input: the price of one GPU. */
    lowestPrice: (t: GpuTypeView, args: Args) =>
      lowestPrice(t.id, args.input ? parse(GqlGpuLowestPriceInput, args.input) : { gpuCount: 1 }),
  },
  DataCenter: {
    gpuAvailability: (_: unknown, args: Args) =>
      gpuAvailability(args.input ? parse(GqlGpuAvailabilityInput, args.input) : {}),
  },
  User: {
    id: (_: unknown, __: Args, c: GraphqlContext) => c.accountId,
    pubKey: (_: unknown, __: Args, c: GraphqlContext) => c.management.users.get(c.accountId).pubKey,
    secrets: (_: unknown, __: Args, c: GraphqlContext) =>
      c.management.secrets.list(c.accountId).map(gqlSecret),
    pods: (_: unknown, __: Args, c: GraphqlContext) => {
      const now = c.management.pods.now();
      return c.management.pods.list(c.accountId).map((entry) => gqlPodEntry(entry, now));
    },
    endpoints: (_: unknown, __: Args, c: GraphqlContext) => c.management.endpoints.list(c.accountId),
    /** null when the account has no such endpoint (ids of other accounts read as missing). */
    endpoint: (_: unknown, args: Args, c: GraphqlContext) => {
      try {
        return c.management.endpoints.get(c.accountId, String(args.id));
      } catch (error) {
        if (error instanceof ServiceError && error.code === "NOT_FOUND") return null;
        throw error;
      }
    },
    serverlessDiscount: () => null,
    podTemplates: (_: unknown, __: Args, c: GraphqlContext) =>
      c.management.templates.list(c.accountId).map(gqlTemplate),
    networkVolumes: (_: unknown, __: Args, c: GraphqlContext) =>
      c.management.networkVolumes.list(c.accountId),
    containerRegistryCreds: (_: unknown, __: Args, c: GraphqlContext) =>
      c.management.registryAuths.list(c.accountId).map(publicRegistryAuth),
  },
  Endpoint: {
    userId: (e: EndpointRecord) => e.accountId,
    env: (e: EndpointRecord) => envList(e.env),
    allowedCudaVersions: (e: EndpointRecord) => e.allowedCudaVersions.join(","),
    createdAt: (e: EndpointRecord) => new Date(e.createdAt).toISOString(),
    template: (e: EndpointRecord, _: Args, c: GraphqlContext) =>
      gqlTemplate(c.management.templates.get(c.accountId, e.templateId)),
    pods: (e: EndpointRecord, _: Args, c: GraphqlContext) =>
      c.management.pods.workers(c.accountId, { endpointId: e.id }).map(gqlPod),
    aiKey: () => null,
    networkVolume: (e: EndpointRecord, _: Args, c: GraphqlContext) =>
      e.networkVolumeId ? (c.management.networkVolumes.find(c.accountId, e.networkVolumeId) ?? null) : null,
    networkVolumeIds: (e: EndpointRecord, _: Args, c: GraphqlContext) =>
      e.networkVolumeIds.map((id) => ({
        networkVolumeId: id,
        dataCenterId: c.management.networkVolumes.find(c.accountId, id)?.dataCenterId ?? null,
      })),
  },
  Mutation: {
    secretCreate: (_: unknown, args: Args, c: GraphqlContext) =>
      gqlSecret(c.management.secrets.create(c.accountId, parse(GqlSecretCreateInput, args.input))),
    secretValueUpdate: (_: unknown, args: Args, c: GraphqlContext) => {
      const { id, value } = parse(GqlSecretValueUpdateInput, args.input);
      return gqlSecret(c.management.secrets.updateValue(c.accountId, id, value));
    },
    secretDescriptionUpdate: (_: unknown, args: Args, c: GraphqlContext) => {
      const { id, description } = parse(GqlSecretDescriptionUpdateInput, args.input);
      return gqlSecret(c.management.secrets.updateDescription(c.accountId, id, description));
    },
    secretDelete: (_: unknown, args: Args, c: GraphqlContext) => {
      c.management.secrets.delete(c.accountId, String(args.id));
      return null;
    },
    podFindAndDeployOnDemand: (_: unknown, args: Args, c: GraphqlContext) => {
      const input = parse(GqlPodFindAndDeployOnDemandInput, args.input ?? {});
      const common = deployChanges(input);
      const pods = c.management.pods;
      if (input.computeType === "CPU") {
        const instanceId = input.instanceIds?.find((id) => id) ?? undefined;
        return gqlRentedPod(
          pods.create(c.accountId, { ...common, computeType: "CPU", instanceId }),
          pods.now(),
        );
      }
      const list = (input.gpuTypeIdList ?? []).filter((id): id is string => Boolean(id));
      const pod = pods.create(c.accountId, {
        ...common,
        computeType: "GPU",
        gpuTypeIds: input.gpuTypeId ? [input.gpuTypeId] : list,
        gpuCount: given(input.gpuCount),
        minVcpuCount: given(input.minVcpuCount),
        minMemoryInGb: given(input.minMemoryInGb),
        volumeInGb: given(input.volumeInGb),
      });
      return gqlRentedPod(pod, pods.now());
    },
    deployCpuPod: (_: unknown, args: Args, c: GraphqlContext) => {
      const input = parse(GqlDeployCpuPodInput, args.input);
      const pods = c.management.pods;
      const pod = pods.create(c.accountId, {
        ...deployChanges(input),
        computeType: "CPU",
        instanceId: input.instanceId || undefined,
      });
      return gqlRentedPod(pod, pods.now());
    },
    podEditJob: (_: unknown, args: Args, c: GraphqlContext) => {
      const input = parse(GqlPodEditJobInput, args.input);
      const pods = c.management.pods;
      const pod = asField("podId", () =>
        pods.update(c.accountId, input.podId, {
          imageName: input.imageName,
          dockerArgs: given(input.dockerArgs),
          env: envMap(input.env),
          ports: portList(input.ports),
          containerDiskInGb: input.containerDiskInGb,
          volumeInGb: given(input.volumeInGb),
          volumeMountPath: input.volumeMountPath || undefined,
          containerRegistryAuthId: givenRef(input.containerRegistryAuthId),
        }),
      );
      return gqlRentedPod(pod, pods.now());
    },
    podStop: (_: unknown, args: Args, c: GraphqlContext) => {
      const pods = c.management.pods;
      return gqlRentedPod(
        asField("podId", () => pods.stop(c.accountId, parse(GqlPodIdInput, args.input).podId)),
        pods.now(),
      );
    },
    podResume: (_: unknown, args: Args, c: GraphqlContext) => {
      const { podId, gpuCount } = parse(GqlPodResumeInput, args.input);
      const pods = c.management.pods;
      return gqlRentedPod(
        asField("podId", () => pods.start(c.accountId, podId, gpuCount)),
        pods.now(),
      );
    },
    podRestart: (_: unknown, args: Args, c: GraphqlContext) => {
      const pods = c.management.pods;
      return gqlRentedPod(
        asField("podId", () => pods.restart(c.accountId, parse(GqlPodIdInput, args.input).podId)),
        pods.now(),
      );
    },
    podReset: (_: unknown, args: Args, c: GraphqlContext) => {
      const pods = c.management.pods;
      return gqlRentedPod(
        asField("podId", () => pods.reset(c.accountId, parse(GqlPodIdInput, args.input).podId)),
        pods.now(),
      );
    },
    podTerminate: (_: unknown, args: Args, c: GraphqlContext) => {
      asField("podId", () =>
        c.management.pods.terminate(c.accountId, parse(GqlPodIdInput, args.input).podId),
      );
      return null;
    },
    updateEndpointTemplate: (_: unknown, args: Args, c: GraphqlContext) => {
      const input = parse(GqlUpdateEndpointTemplateInput, args.input);
      return asField("endpointId", () =>
        c.management.endpoints.update(c.accountId, input.endpointId, { templateId: input.templateId }),
      );
    },
    updateUserSettings: (_: unknown, args: Args, c: GraphqlContext) => {
      const input = parse(GqlUserSettingsInput, args.input);
      c.management.users.update(c.accountId, { pubKey: given(input.pubKey) });
      return {};
    },
    saveEndpoint: (_: unknown, args: Args, c: GraphqlContext) => {
      const input = parse(GqlEndpointInput, args.input);
      const changes = endpointChanges(input);
      return input.id
        ? c.management.endpoints.replace(c.accountId, input.id, changes)
        : c.management.endpoints.create(c.accountId, changes);
    },
    deleteEndpoint: (_: unknown, args: Args, c: GraphqlContext) => {
      c.management.endpoints.delete(c.accountId, String(args.id));
      return null;
    },
    saveTemplate: (_: unknown, args: Args, c: GraphqlContext) => {
      const input = parse(GqlTemplateInput, args.input);
      const changes = templateChanges(input);
      const record = input.id
        ? c.management.templates.replace(c.accountId, input.id, changes)
        : c.management.templates.create(c.accountId, changes);
      return gqlTemplate(record);
    },
    deleteTemplate: (_: unknown, args: Args, c: GraphqlContext) => {
      c.management.templates.deleteByName(c.accountId, String(args.templateName));
      return null;
    },
    createNetworkVolume: (_: unknown, args: Args, c: GraphqlContext) =>
      c.management.networkVolumes.create(c.accountId, parse(GqlNetworkVolumeCreateInput, args.input)),
    updateNetworkVolume: (_: unknown, args: Args, c: GraphqlContext) => {
      const input = parse(GqlNetworkVolumeUpdateInput, args.input);
      return c.management.networkVolumes.update(c.accountId, input.id, {
        name: given(input.name),
        size: given(input.size),
      });
    },
    deleteNetworkVolume: (_: unknown, args: Args, c: GraphqlContext) => {
      c.management.networkVolumes.delete(c.accountId, parse(GqlNetworkVolumeDeleteInput, args.input).id);
      return null;
    },
    saveRegistryAuth: (_: unknown, args: Args, c: GraphqlContext) => {
      const input = parse(ContainerRegistryAuthCreateInput, args.input);
      return publicRegistryAuth(c.management.registryAuths.create(c.accountId, input));
    },
    updateRegistryAuth: (_: unknown, args: Args, c: GraphqlContext) => {
      const { id: authId, ...credentials } = parse(GqlRegistryAuthUpdateInput, args.input);
      return publicRegistryAuth(c.management.registryAuths.update(c.accountId, authId, credentials));
    },
    deleteRegistryAuth: (_: unknown, args: Args, c: GraphqlContext) => {
      asField("registryAuthId", () =>
        c.management.registryAuths.delete(c.accountId, String(args.registryAuthId)),
      );
      return null;
    },
  },
};
