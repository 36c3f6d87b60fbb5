import type { z } from "zod";
import {
  ContainerRegistryAuthCreateInput,
  GqlRegistryAuthUpdateInput,
} from "../../../sdk/schemas/container-registry-auth";
import { GqlEndpointInput } from "../../../sdk/schemas/endpoint";
import {
  GqlNetworkVolumeDeleteInput,
  GqlNetworkVolumeUpdateInput,
  NetworkVolumeCreateInput,
} from "../../../sdk/schemas/network-volume";
import { GqlTemplateInput, type KeyValue, splitCommaList } from "../../../sdk/schemas/template";
import type { ServiceDeps } from "../../deps";
import {
  createRegistryAuth,
  deleteRegistryAuth,
  listRegistryAuths,
  updateRegistryAuth,
} from "../../domain/container-registry-auth";
import {
  createEndpoint,
  deleteEndpoint,
  type EndpointChanges,
  getEndpoint,
  listEndpoints,
  replaceEndpoint,
} from "../../domain/endpoint";
import { ServiceError } from "../../domain/errors";
import {
  createNetworkVolume,
  deleteNetworkVolume,
  listNetworkVolumes,
  updateNetworkVolume,
} from "../../domain/network-volume";
import { listPods, podName } from "../../domain/pod";
import type { EndpointRecord, TemplateRecord } from "../../domain/records";
import {
  createTemplate,
  deleteTemplateByName,
  getTemplate,
  listTemplates,
  replaceTemplate,
  type TemplateChanges,
} from "../../domain/template";
import { parseInput } from "../../edge/parse";

export interface GraphqlContext {
  deps: ServiceDeps;
  accountId: string;
}

type Args = Record<string, unknown>;

const envList = (env: Record<string, string>): KeyValue[] =>
  Object.entries(env).map(([key, value]) => ({ key, value }));
const envMap = (env: readonly KeyValue[] | null | undefined) =>
  env ? Object.fromEntries(env.map(({ key, value }) => [key, value])) : undefined;
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
    networkVolumeId: given(input.networkVolumeId),
    hubReleaseId: given(input.hubReleaseId),
    modelName: given(input.modelName),
    type: given(input.type),
    gpuCount: given(input.gpuCount),
    executionTimeoutMs: given(input.executionTimeoutMs),
    env: envMap(input.env),
    allowedCudaVersions: input.allowedCudaVersions ? splitCommaList(input.allowedCudaVersions) : undefined,
    instanceIds: given(input.instanceIds),
    computeType: given(input.computeType),
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
    // dockerArgs is the start command as one string; REST holds it as an argv array.
    dockerStartCmd:
      typeof input.dockerArgs === "string" ? input.dockerArgs.split(/\s+/).filter(Boolean) : undefined,
    env: envMap(input.env),
    ports: input.ports ? splitCommaList(input.ports) : undefined,
    readme: given(input.readme),
    isPublic: given(input.isPublic),
    containerRegistryAuthId: given(input.containerRegistryAuthId),
    startSsh: given(input.startSsh),
    startJupyter: given(input.startJupyter),
  };
}

function gqlTemplate(t: TemplateRecord) {
  return { ...t, dockerArgs: t.dockerStartCmd.join(" "), env: envList(t.env), ports: t.ports.join(",") };
}

const parse = <S extends z.ZodType>(schema: S, value: unknown) => parseInput(schema, value, "input");

/** Resolvers: parse (zod), call one domain function, shape the reply. */
export const resolvers = {
  Query: {
    myself: () => ({}),
  },
  User: {
    id: (_: unknown, __: Args, c: GraphqlContext) => c.accountId,
    endpoints: (_: unknown, __: Args, c: GraphqlContext) => listEndpoints(c.deps, c.accountId),
    /** null when the account has no such endpoint (ids of other accounts read as missing). */
    endpoint: (_: unknown, args: Args, c: GraphqlContext) => {
      try {
        return getEndpoint(c.deps, c.accountId, String(args.id));
      } catch (error) {
        if (error instanceof ServiceError && error.code === "NOT_FOUND") return null;
        throw error;
      }
    },
    serverlessDiscount: () => null,
    podTemplates: (_: unknown, __: Args, c: GraphqlContext) =>
      listTemplates(c.deps, c.accountId).map(gqlTemplate),
    networkVolumes: (_: unknown, __: Args, c: GraphqlContext) => listNetworkVolumes(c.deps, c.accountId),
    containerRegistryCreds: (_: unknown, __: Args, c: GraphqlContext) =>
      listRegistryAuths(c.deps, c.accountId).map(({ id, name }) => ({ id, name })),
  },
  Endpoint: {
    userId: (e: EndpointRecord) => e.accountId,
    env: (e: EndpointRecord) => envList(e.env),
    allowedCudaVersions: (e: EndpointRecord) => e.allowedCudaVersions.join(","),
    createdAt: (e: EndpointRecord) => new Date(e.createdAt).toISOString(),
    template: (e: EndpointRecord, _: Args, c: GraphqlContext) =>
      gqlTemplate(getTemplate(c.deps, c.accountId, e.templateId)),
    pods: (e: EndpointRecord, _: Args, c: GraphqlContext) =>
      listPods(c.deps, c.accountId, { endpointId: e.id, includeWorkers: true }).map((pod) => ({
        id: pod.worker.id,
        name: podName(pod),
        desiredStatus: pod.worker.desiredStatus,
        endpointId: pod.worker.endpointId,
        imageName: pod.worker.imageName,
        templateId: pod.worker.templateId,
        gpuCount: pod.worker.gpuCount,
        lastStartedAt:
          pod.worker.lastStartedAt === null ? null : new Date(pod.worker.lastStartedAt).toISOString(),
      })),
  },
  Mutation: {
    saveEndpoint: (_: unknown, args: Args, c: GraphqlContext) => {
      const input = parse(GqlEndpointInput, args.input);
      const changes = endpointChanges(input);
      return input.id
        ? replaceEndpoint(c.deps, c.accountId, input.id, changes)
        : createEndpoint(c.deps, c.accountId, changes);
    },
    deleteEndpoint: (_: unknown, args: Args, c: GraphqlContext) => {
      deleteEndpoint(c.deps, c.accountId, String(args.id));
      return null;
    },
    saveTemplate: (_: unknown, args: Args, c: GraphqlContext) => {
      const input = parse(GqlTemplateInput, args.input);
      const changes = templateChanges(input);
      const record = input.id
        ? replaceTemplate(c.deps, c.accountId, input.id, changes)
        : createTemplate(c.deps, c.accountId, changes);
      return gqlTemplate(record);
    },
    deleteTemplate: (_: unknown, args: Args, c: GraphqlContext) => {
      deleteTemplateByName(c.deps, c.accountId, String(args.templateName));
      return null;
    },
    createNetworkVolume: (_: unknown, args: Args, c: GraphqlContext) =>
      createNetworkVolume(c.deps, c.accountId, parse(NetworkVolumeCreateInput, args.input)),
    updateNetworkVolume: (_: unknown, args: Args, c: GraphqlContext) => {
      const input = parse(GqlNetworkVolumeUpdateInput, args.input);
      return updateNetworkVolume(c.deps, c.accountId, input.id, {
        name: given(input.name),
        size: given(input.size),
      });
    },
    deleteNetworkVolume: (_: unknown, args: Args, c: GraphqlContext) => {
      deleteNetworkVolume(c.deps, c.accountId, parse(GqlNetworkVolumeDeleteInput, args.input).id);
      return null;
    },
    saveRegistryAuth: (_: unknown, args: Args, c: GraphqlContext) => {
      const { id, name } = createRegistryAuth(
        c.deps,
        c.accountId,
        parse(ContainerRegistryAuthCreateInput, args.input),
      );
      return { id, name };
    },
    updateRegistryAuth: (_: unknown, args: Args, c: GraphqlContext) => {
      const { id: authId, ...credentials } = parse(GqlRegistryAuthUpdateInput, args.input);
      const { id, name } = updateRegistryAuth(c.deps, c.accountId, authId, credentials);
      return { id, name };
    },
    deleteRegistryAuth: (_: unknown, args: Args, c: GraphqlContext) => {
      deleteRegistryAuth(c.deps, c.accountId, String(args.registryAuthId));
      return null;
    },
  },
};
