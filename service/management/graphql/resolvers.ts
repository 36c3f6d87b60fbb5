import type { z } from "zod";
import {
  ContainerRegistryAuthCreateInput,
  GqlRegistryAuthUpdateInput,
} from "../../../sdk/schemas/container-registry-auth";
import { parseDockerArgs } from "../../../sdk/schemas/docker-args";
import { GqlEndpointInput } from "../../../sdk/schemas/endpoint";
import {
  GqlNetworkVolumeDeleteInput,
  GqlNetworkVolumeUpdateInput,
  NetworkVolumeCreateInput,
} from "../../../sdk/schemas/network-volume";
import { GqlTemplateInput, type KeyValue, splitCommaList } from "../../../sdk/schemas/template";
import { parseInput } from "../../edge/parse";
import { ServiceError } from "../../errors";
import type { Management } from "../index";
import { publicRegistryAuth } from "../model/container-registry-auth";
import type { EndpointChanges } from "../model/endpoint";
import type { EndpointRecord } from "../model/records";
import type { TemplateChanges } from "../model/template";
import { envList, gqlPod, gqlTemplate } from "./shape";

export interface GraphqlContext {
  management: Management;
  accountId: string;
}

type Args = Record<string, unknown>;

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
    // dockerArgs is the start command as one string; REST holds it as an argv array (shell quoting).
    dockerStartCmd: typeof input.dockerArgs === "string" ? parseDockerArgs(input.dockerArgs) : undefined,
    env: envMap(input.env),
    ports: input.ports ? splitCommaList(input.ports) : undefined,
    readme: given(input.readme),
    isPublic: given(input.isPublic),
    containerRegistryAuthId: given(input.containerRegistryAuthId),
    startSsh: given(input.startSsh),
    startJupyter: given(input.startJupyter),
  };
}

const parse = <S extends z.ZodType>(schema: S, value: unknown) => parseInput(schema, value, "input");

/** Resolvers: parse (zod), call one domain function, shape the reply. */
export const resolvers = {
  Query: {
    myself: () => ({}),
  },
  User: {
    id: (_: unknown, __: Args, c: GraphqlContext) => c.accountId,
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
      c.management.pods.list(c.accountId, { endpointId: e.id, includeWorkers: true }).map(gqlPod),
  },
  Mutation: {
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
      c.management.networkVolumes.create(c.accountId, parse(NetworkVolumeCreateInput, args.input)),
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
      c.management.registryAuths.delete(c.accountId, String(args.registryAuthId));
      return null;
    },
  },
};
