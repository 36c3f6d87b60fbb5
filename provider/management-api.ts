import type {
  ContainerRegistryAuth,
  ContainerRegistryAuthCreateInput,
  EndpointUpdateInput,
  GqlEndpoint,
  GqlEndpointInput,
  GqlNetworkVolume,
  GqlNetworkVolumeCreateInput,
  GqlPodTemplate,
  GqlRegistryAuthUpdateInput,
  GqlSecret,
  GqlSecretCreateInput,
  GqlSecretDescriptionUpdateInput,
  GqlSecretValueUpdateInput,
  GqlTemplateInput,
  NetworkVolume,
  NetworkVolumeCreateInput,
  NetworkVolumeUpdateInput,
  Pod,
  PodCreateInput,
  PodUpdateInput,
  Template,
  TemplateCreateInput,
  TemplateUpdateInput,
} from "../sdk/schemas";

/**
 * The calls the providers make, one narrow interface per resource. provider/clients.ts binds them to
 * the SDK (REST for templates, volumes and registry auths; GraphQL for endpoints and credentials).
 * Every failure is an SDK error with a stable `code` ("NOT_FOUND", "CONFLICT", ...).
 */
export interface ManagementApi {
  /** The id of the account the API key belongs to (`myself { id }`), asked once per client set. */
  accountId(): Promise<string>;
  endpoints: {
    /** `myself { endpoint(id:) }`; null when the account has no such endpoint. */
    get(id: string): Promise<GqlEndpoint | null>;
    /** `myself { endpoints }`: who uses a template or a volume. */
    list(): Promise<GqlEndpoint[]>;
    /** saveEndpoint: a FULL replace when `id` is set. */
    save(input: GqlEndpointInput): Promise<GqlEndpoint>;
    delete(id: string): Promise<void>;
    /** REST gpuTypeIds: the GPU types in priority order, also those no pool describes (gpuIds ""). */
    gpuTypes(id: string): Promise<string[]>;
    /** REST PATCH of gpuTypeIds alone: the only write of GPU types no pool describes. */
    setGpuTypes(id: string, gpuTypeIds: NonNullable<EndpointUpdateInput["gpuTypeIds"]>): Promise<void>;
  };
  templates: {
    get(id: string): Promise<Template>;
    /** Every template of the account, the endpoint-bound ones too. */
    list(): Promise<Template[]>;
    create(input: TemplateCreateInput): Promise<Template>;
    update(id: string, patch: TemplateUpdateInput): Promise<Template>;
    delete(id: string): Promise<void>;
    /** `myself { podTemplates }`: the only view with startSsh, startJupyter and startScript. */
    listGraphql(): Promise<GqlPodTemplate[]>;
    /** GraphQL saveTemplate with an id: a FULL replace, and the only write of the three start fields. */
    save(input: GqlTemplateInput): Promise<GqlPodTemplate>;
  };
  networkVolumes: {
    get(id: string): Promise<NetworkVolume>;
    create(input: NetworkVolumeCreateInput): Promise<NetworkVolume>;
    /** GraphQL createNetworkVolume: the only create that takes isNextGenStorage. */
    createGraphql(input: GqlNetworkVolumeCreateInput): Promise<GqlNetworkVolume>;
    /** `myself { networkVolumes }`: the only view with storageType. */
    listGraphql(): Promise<GqlNetworkVolume[]>;
    update(id: string, patch: NetworkVolumeUpdateInput): Promise<NetworkVolume>;
    delete(id: string): Promise<void>;
  };
  registryAuths: {
    get(id: string): Promise<ContainerRegistryAuth>;
    list(): Promise<ContainerRegistryAuth[]>;
    create(input: ContainerRegistryAuthCreateInput): Promise<ContainerRegistryAuth>;
    /** GraphQL updateRegistryAuth: REST has no update. */
    updateCredentials(input: GqlRegistryAuthUpdateInput): Promise<void>;
    delete(id: string): Promise<void>;
  };
  secrets: {
    /** `myself { secrets }`: no value is ever returned. */
    list(): Promise<GqlSecret[]>;
    create(input: GqlSecretCreateInput): Promise<GqlSecret>;
    updateValue(input: GqlSecretValueUpdateInput): Promise<GqlSecret>;
    updateDescription(input: GqlSecretDescriptionUpdateInput): Promise<GqlSecret>;
    delete(id: string): Promise<void>;
  };
  pods: {
    get(id: string): Promise<Pod>;
    list(): Promise<Pod[]>;
    create(input: PodCreateInput): Promise<Pod>;
    update(id: string, patch: PodUpdateInput): Promise<Pod>;
    start(id: string): Promise<Pod>;
    stop(id: string): Promise<Pod>;
    terminate(id: string): Promise<void>;
  };
}
