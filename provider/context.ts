import type {
  ContainerRegistryAuth,
  ContainerRegistryAuthCreateInput,
  GqlEndpoint,
  GqlEndpointInput,
  GqlRegistryAuthUpdateInput,
  NetworkVolume,
  NetworkVolumeCreateInput,
  NetworkVolumeUpdateInput,
  Template,
  TemplateCreateInput,
  TemplateUpdateInput,
} from "../sdk/schemas";
import { createManagementApi } from "./clients";
import { hostSettings, type ProviderSettings } from "./config";
import { type Pause, wallClock } from "./retry";

/**
 * The calls the providers make, one narrow interface per resource. provider/clients.ts binds them to
 * the SDK (REST for templates, volumes and registry auths; GraphQL for endpoints and credentials).
 * Every failure is an SDK error with a stable `code` ("NOT_FOUND", "CONFLICT", ...).
 */
export interface ManagementApi {
  endpoints: {
    /** `myself { endpoint(id:) }`; null when the account has no such endpoint. */
    get(id: string): Promise<GqlEndpoint | null>;
    /** `myself { endpoints }`: who uses a template or a volume. */
    list(): Promise<GqlEndpoint[]>;
    /** saveEndpoint: a FULL replace when `id` is set. */
    save(input: GqlEndpointInput): Promise<GqlEndpoint>;
    delete(id: string): Promise<void>;
  };
  templates: {
    get(id: string): Promise<Template>;
    list(): Promise<Template[]>;
    create(input: TemplateCreateInput): Promise<Template>;
    update(id: string, patch: TemplateUpdateInput): Promise<Template>;
    delete(id: string): Promise<void>;
  };
  networkVolumes: {
    get(id: string): Promise<NetworkVolume>;
    create(input: NetworkVolumeCreateInput): Promise<NetworkVolume>;
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
}

/** Everything a provider implementation depends on; the host uses `hostContext`, tests build their own. */
export interface ProviderContext {
  settings(): ProviderSettings;
  api(settings: ProviderSettings): ManagementApi;
  pause: Pause;
}

/**
 * The context inside Pulumi's provider host: settings from `configure` (or the environment), one set
 * of clients (kept while the settings stay the same), wall-clock waits.
 */
export function hostContext(): ProviderContext {
  let last: { settings: ProviderSettings; api: ManagementApi } | undefined;
  return {
    settings: hostSettings,
    api: (settings) => {
      const same =
        last &&
        last.settings.apiKey === settings.apiKey &&
        last.settings.restUrl === settings.restUrl &&
        last.settings.graphqlUrl === settings.graphqlUrl;
      if (!same || !last) last = { settings, api: createManagementApi(settings) };
      return last.api;
    },
    pause: wallClock,
  };
}
