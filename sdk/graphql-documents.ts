import { z } from "zod";
import { CpuFlavor, DataCenter, GpuType, GqlCpuFlavorInput, GqlGpuTypeFilter } from "./schemas/catalogue";
import {
  ContainerRegistryAuth,
  ContainerRegistryAuthCreateInput,
  GqlRegistryAuthUpdateInput,
} from "./schemas/container-registry-auth";
import { GqlEndpoint, GqlEndpointInput, ServerlessDiscount } from "./schemas/endpoint";
import {
  GqlNetworkVolume,
  GqlNetworkVolumeCreateInput,
  GqlNetworkVolumeDeleteInput,
  GqlNetworkVolumeUpdateInput,
} from "./schemas/network-volume";
import {
  GqlSecret,
  GqlSecretCreateInput,
  GqlSecretDescriptionUpdateInput,
  GqlSecretValueUpdateInput,
} from "./schemas/secret";
import { GqlPodTemplate, GqlTemplateInput } from "./schemas/template";
import { parseReply, validateInput } from "./validate";

/**
 * The GraphQL documents the SDK sends, with the type names of the real service's schema. Values always
 * travel as variables: nothing a caller passes is ever interpolated into a document.
 */

/** Endpoint fields every version of the real service's Endpoint type has. */
const PORTABLE_ENDPOINT_FIELDS = `
  id name userId templateId gpuIds idleTimeout locations flashBootType scalerType scalerValue
  workersMin workersMax workersStandby networkVolumeId type computeType gpuCount executionTimeoutMs
  env { key value } allowedCudaVersions instanceIds version createdAt pods { id desiredStatus }`;

/** Plus the deployment source (hub release, cached model), which a service may not expose. */
const EXTENDED_ENDPOINT_FIELDS = `${PORTABLE_ENDPOINT_FIELDS} hubReleaseId modelName
  networkVolumeIds { networkVolumeId dataCenterId } minCudaVersion`;

function endpointDocuments(fields: string) {
  return {
    save: `mutation saveEndpoint($input: EndpointInput!) {
  saveEndpoint(input: $input) { ${fields} }
}`,
    get: `query getEndpoint($id: String!) {
  myself { endpoint(id: $id) { ${fields} } }
}`,
    list: `query listEndpoints {
  myself { endpoints { ${fields} } }
}`,
  };
}
export type EndpointDocuments = ReturnType<typeof endpointDocuments>;

/**
 * The endpoint documents in two selections: the client starts with "extended" and falls back to
 * "portable" when the service's schema refuses the extra fields (a validation error, nothing ran).
 */
export const ENDPOINT_DOCUMENTS = {
  extended: endpointDocuments(EXTENDED_ENDPOINT_FIELDS),
  portable: endpointDocuments(PORTABLE_ENDPOINT_FIELDS),
} as const;

const TEMPLATE_FIELDS = `
  id name imageName category isServerless isPublic containerDiskInGb volumeInGb volumeMountPath
  dockerArgs env { key value } ports readme containerRegistryAuthId startSsh startJupyter startScript`;

const VOLUME_FIELDS = "id name size dataCenterId storageType";
const REGISTRY_AUTH_FIELDS = "id name";

const DELETE_ENDPOINT = `mutation deleteEndpoint($id: String!) {
  deleteEndpoint(id: $id)
}`;

const SERVERLESS_DISCOUNT = `query serverlessDiscount {
  myself { serverlessDiscount { discountFactor type expirationDate } }
}`;

const ACCOUNT_ID = `query accountId {
  myself { id }
}`;

const SAVE_TEMPLATE = `mutation saveTemplate($input: SaveTemplateInput!) {
  saveTemplate(input: $input) { ${TEMPLATE_FIELDS} }
}`;

const DELETE_TEMPLATE = `mutation deleteTemplate($templateName: String!) {
  deleteTemplate(templateName: $templateName)
}`;

const LIST_TEMPLATES = `query listTemplates {
  myself { podTemplates { ${TEMPLATE_FIELDS} } }
}`;

const CREATE_NETWORK_VOLUME = `mutation createNetworkVolume($input: CreateNetworkVolumeInput!) {
  createNetworkVolume(input: $input) { ${VOLUME_FIELDS} }
}`;

const UPDATE_NETWORK_VOLUME = `mutation updateNetworkVolume($input: UpdateNetworkVolumeInput!) {
  updateNetworkVolume(input: $input) { ${VOLUME_FIELDS} }
}`;

const DELETE_NETWORK_VOLUME = `mutation deleteNetworkVolume($input: DeleteNetworkVolumeInput!) {
  deleteNetworkVolume(input: $input)
}`;

const LIST_NETWORK_VOLUMES = `query listNetworkVolumes {
  myself { networkVolumes { ${VOLUME_FIELDS} } }
}`;

const SAVE_REGISTRY_AUTH = `mutation saveRegistryAuth($input: SaveRegistryAuthInput!) {
  saveRegistryAuth(input: $input) { ${REGISTRY_AUTH_FIELDS} }
}`;

const UPDATE_REGISTRY_AUTH = `mutation updateRegistryAuth($input: UpdateRegistryAuthInput!) {
  updateRegistryAuth(input: $input) { ${REGISTRY_AUTH_FIELDS} }
}`;

const DELETE_REGISTRY_AUTH = `mutation deleteRegistryAuth($registryAuthId: String!) {
  deleteRegistryAuth(registryAuthId: $registryAuthId)
}`;

const LIST_REGISTRY_AUTHS = `query listRegistryAuths {
  myself { containerRegistryCreds { ${REGISTRY_AUTH_FIELDS} } }
}`;

const SECRET_FIELDS = "id name description createdAt";

const SECRET_CREATE = `mutation secretCreate($input: SecretCreateInput!) {
  secretCreate(input: $input) { ${SECRET_FIELDS} }
}`;

const SECRET_VALUE_UPDATE = `mutation secretValueUpdate($input: SecretValueUpdateInput!) {
  secretValueUpdate(input: $input) { ${SECRET_FIELDS} }
}`;

const SECRET_DESCRIPTION_UPDATE = `mutation secretDescriptionUpdate($input: SecretDescriptionUpdateInput!) {
  secretDescriptionUpdate(input: $input) { ${SECRET_FIELDS} }
}`;

const SECRET_DELETE = `mutation secretDelete($id: ID!) {
  secretDelete(id: $id)
}`;

const LIST_SECRETS = `query listSecrets {
  myself { secrets { ${SECRET_FIELDS} } }
}`;

const GPU_TYPES = `query gpuTypes($input: GpuTypeFilter) {
  gpuTypes(input: $input) {
    id displayName manufacturer memoryInGb secureCloud communityCloud securePrice communityPrice
    secureSpotPrice communitySpotPrice maxGpuCount
  }
}`;

const CPU_FLAVORS = `query cpuFlavors($input: CpuFlavorInput) {
  cpuFlavors(input: $input) { id groupId groupName displayName minVcpu maxVcpu ramMultiplier diskLimitPerVcpu }
}`;

const DATA_CENTERS = `query dataCenters {
  dataCenters { id name location listed storageSupport globalNetwork region compliance }
}`;

type Variables = Record<string, unknown>;

/**
 * One operation of the GraphQL client: its document, how the caller's argument is checked and becomes
 * the variables, and how the reply is read. GraphQLClient runs every operation the same way.
 */
export interface GraphqlOperation<In, Out> {
  /** Names the call in errors: "graphql.saveEndpoint". */
  readonly name: string;
  /** Queries are retried (idempotent); mutations never are. */
  readonly kind: "query" | "mutation";
  /** The document, or which endpoint document (sent with the extended selection, then the portable one). */
  readonly document: string | { endpoint: keyof EndpointDocuments };
  /** Checks the argument (a ValidationError naming the field; nothing is sent) and makes the variables. */
  prepare(input: In): { variables?: Variables; secrets: readonly string[] };
  /** Parses the reply's data (a ProtocolError naming the field) and picks the result from it. */
  read(data: unknown): Out;
  /** What a NOT_FOUND error answers instead, for reads of one resource that may be missing. */
  readonly whenNotFound?: () => Out;
}

interface Definition<S extends z.ZodType | undefined, R extends z.ZodType, Out> {
  name: string;
  kind: "query" | "mutation";
  document: GraphqlOperation<unknown, unknown>["document"];
  /** The argument's schema; none for operations without one. */
  input?: S;
  /** Variables from the checked argument; default `{ input }`. */
  variables?: (valid: Valid<S>) => Variables;
  reply: R;
  pick: (data: z.output<R>) => Out;
  /** Strings to keep out of errors besides the key (registry passwords). */
  secrets?: (valid: Valid<S>) => string[];
  whenNotFound?: () => Out;
}

type Valid<S> = S extends z.ZodType ? z.output<S> : undefined;
type Argument<S> = S extends z.ZodType ? z.input<S> : undefined;

function operation<S extends z.ZodType | undefined, R extends z.ZodType, Out>(
  def: Definition<S, R, Out>,
): GraphqlOperation<Argument<S>, Out> {
  const name = `graphql.${def.name}`;
  return {
    name,
    kind: def.kind,
    document: def.document,
    prepare(input) {
      if (def.input === undefined) return { secrets: [] };
      const valid = validateInput(def.input, input, name) as Valid<S>;
      return {
        variables: def.variables ? def.variables(valid) : { input: valid },
        secrets: def.secrets?.(valid) ?? [],
      };
    },
    read: (data) => def.pick(parseReply(def.reply, data, name)),
    ...(def.whenNotFound ? { whenNotFound: def.whenNotFound } : {}),
  };
}

const NonEmptyId = z.string().trim().min(1);
/** Deletes answer null (or a scalar on some operations): nothing to read. */
const Nothing = z.unknown();
const myself = <S extends z.ZodRawShape>(shape: S) => z.object({ myself: z.object(shape) });

/** Every operation of GraphQLClient, by method. */
/** env values may be credentials: kept out of the errors of the calls that send them. */
function envValues(input: { env?: readonly { value: string }[] | null }): string[] {
  return (input.env ?? []).map((entry) => entry.value);
}

export const OPERATIONS = {
  createSecret: operation({
    name: "createSecret",
    kind: "mutation",
    document: SECRET_CREATE,
    input: GqlSecretCreateInput,
    reply: z.object({ secretCreate: GqlSecret }),
    pick: (data) => data.secretCreate,
    secrets: (valid) => [valid.value],
  }),
  updateSecretValue: operation({
    name: "updateSecretValue",
    kind: "mutation",
    document: SECRET_VALUE_UPDATE,
    input: GqlSecretValueUpdateInput,
    reply: z.object({ secretValueUpdate: GqlSecret }),
    pick: (data) => data.secretValueUpdate,
    secrets: (valid) => [valid.value],
  }),
  updateSecretDescription: operation({
    name: "updateSecretDescription",
    kind: "mutation",
    document: SECRET_DESCRIPTION_UPDATE,
    input: GqlSecretDescriptionUpdateInput,
    reply: z.object({ secretDescriptionUpdate: GqlSecret }),
    pick: (data) => data.secretDescriptionUpdate,
  }),
  deleteSecret: operation({
    name: "deleteSecret",
    kind: "mutation",
    document: SECRET_DELETE,
    input: NonEmptyId,
    variables: (id) => ({ id }),
    reply: Nothing,
    pick: () => undefined,
  }),
  listSecrets: operation({
    name: "listSecrets",
    kind: "query",
    document: LIST_SECRETS,
    reply: myself({ secrets: z.array(GqlSecret) }),
    pick: (data) => data.myself.secrets,
  }),
  gpuTypes: operation({
    name: "gpuTypes",
    kind: "query",
    document: GPU_TYPES,
    input: GqlGpuTypeFilter.optional(),
    variables: (input) => ({ input: input ?? null }),
    reply: z.object({ gpuTypes: z.array(GpuType.nullable()).nullish() }),
    pick: (data) => (data.gpuTypes ?? []).filter((t): t is GpuType => t !== null),
  }),
  cpuFlavors: operation({
    name: "cpuFlavors",
    kind: "query",
    document: CPU_FLAVORS,
    input: GqlCpuFlavorInput.optional(),
    variables: (input) => ({ input: input ?? null }),
    reply: z.object({ cpuFlavors: z.array(CpuFlavor.nullable()).nullish() }),
    pick: (data) => (data.cpuFlavors ?? []).filter((f): f is CpuFlavor => f !== null),
  }),
  dataCenters: operation({
    name: "dataCenters",
    kind: "query",
    document: DATA_CENTERS,
    reply: z.object({ dataCenters: z.array(DataCenter.nullable()).nullish() }),
    pick: (data) => (data.dataCenters ?? []).filter((d): d is DataCenter => d !== null),
  }),
  saveEndpoint: operation({
    name: "saveEndpoint",
    kind: "mutation",
    document: { endpoint: "save" },
    input: GqlEndpointInput,
    reply: z.object({ saveEndpoint: GqlEndpoint }),
    pick: (data) => data.saveEndpoint,
    secrets: envValues,
  }),
  getEndpoint: operation({
    name: "getEndpoint",
    kind: "query",
    document: { endpoint: "get" },
    input: NonEmptyId,
    variables: (id) => ({ id }),
    reply: myself({ endpoint: GqlEndpoint.nullish() }),
    pick: (data): GqlEndpoint | null => data.myself.endpoint ?? null,
    whenNotFound: () => null,
  }),
  listEndpoints: operation({
    name: "listEndpoints",
    kind: "query",
    document: { endpoint: "list" },
    reply: myself({ endpoints: z.array(GqlEndpoint) }),
    pick: (data) => data.myself.endpoints,
  }),
  deleteEndpoint: operation({
    name: "deleteEndpoint",
    kind: "mutation",
    document: DELETE_ENDPOINT,
    input: NonEmptyId,
    variables: (id) => ({ id }),
    reply: Nothing,
    pick: () => undefined,
  }),
  serverlessDiscount: operation({
    name: "serverlessDiscount",
    kind: "query",
    document: SERVERLESS_DISCOUNT,
    reply: myself({ serverlessDiscount: ServerlessDiscount.optional() }),
    pick: (data): ServerlessDiscount => data.myself.serverlessDiscount ?? null,
  }),
  accountId: operation({
    name: "accountId",
    kind: "query",
    document: ACCOUNT_ID,
    reply: myself({ id: NonEmptyId }),
    pick: (data) => data.myself.id,
  }),
  saveTemplate: operation({
    name: "saveTemplate",
    kind: "mutation",
    document: SAVE_TEMPLATE,
    input: GqlTemplateInput,
    reply: z.object({ saveTemplate: GqlPodTemplate }),
    pick: (data) => data.saveTemplate,
    secrets: envValues,
  }),
  deleteTemplate: operation({
    name: "deleteTemplate",
    kind: "mutation",
    document: DELETE_TEMPLATE,
    input: NonEmptyId,
    variables: (templateName) => ({ templateName }),
    reply: Nothing,
    pick: () => undefined,
  }),
  listTemplates: operation({
    name: "listTemplates",
    kind: "query",
    document: LIST_TEMPLATES,
    reply: myself({ podTemplates: z.array(GqlPodTemplate) }),
    pick: (data) => data.myself.podTemplates,
  }),
  createNetworkVolume: operation({
    name: "createNetworkVolume",
    kind: "mutation",
    document: CREATE_NETWORK_VOLUME,
    input: GqlNetworkVolumeCreateInput,
    reply: z.object({ createNetworkVolume: GqlNetworkVolume }),
    pick: (data) => data.createNetworkVolume,
  }),
  updateNetworkVolume: operation({
    name: "updateNetworkVolume",
    kind: "mutation",
    document: UPDATE_NETWORK_VOLUME,
    input: GqlNetworkVolumeUpdateInput,
    reply: z.object({ updateNetworkVolume: GqlNetworkVolume }),
    pick: (data) => data.updateNetworkVolume,
  }),
  deleteNetworkVolume: operation({
    name: "deleteNetworkVolume",
    kind: "mutation",
    document: DELETE_NETWORK_VOLUME,
    input: GqlNetworkVolumeDeleteInput,
    reply: Nothing,
    pick: () => undefined,
  }),
  listNetworkVolumes: operation({
    name: "listNetworkVolumes",
    kind: "query",
    document: LIST_NETWORK_VOLUMES,
    reply: myself({ networkVolumes: z.array(GqlNetworkVolume) }),
    pick: (data) => data.myself.networkVolumes,
  }),
  saveRegistryAuth: operation({
    name: "saveRegistryAuth",
    kind: "mutation",
    document: SAVE_REGISTRY_AUTH,
    input: ContainerRegistryAuthCreateInput,
    reply: z.object({ saveRegistryAuth: ContainerRegistryAuth }),
    pick: (data) => data.saveRegistryAuth,
    secrets: (valid) => [valid.password],
  }),
  updateRegistryAuth: operation({
    name: "updateRegistryAuth",
    kind: "mutation",
    document: UPDATE_REGISTRY_AUTH,
    input: GqlRegistryAuthUpdateInput,
    reply: z.object({ updateRegistryAuth: ContainerRegistryAuth }),
    pick: (data) => data.updateRegistryAuth,
    secrets: (valid) => [valid.password],
  }),
  deleteRegistryAuth: operation({
    name: "deleteRegistryAuth",
    kind: "mutation",
    document: DELETE_REGISTRY_AUTH,
    input: NonEmptyId,
    variables: (registryAuthId) => ({ registryAuthId }),
    reply: Nothing,
    pick: () => undefined,
  }),
  listRegistryAuths: operation({
    name: "listRegistryAuths",
    kind: "query",
    document: LIST_REGISTRY_AUTHS,
    reply: myself({ containerRegistryCreds: z.array(ContainerRegistryAuth) }),
    pick: (data) => data.myself.containerRegistryCreds,
  }),
} as const;
