import { GraphQLClient } from "../sdk/graphql";
import { RestClient } from "../sdk/rest";
import type { ProviderSettings } from "./config";
import type { ManagementApi } from "./management-api";

/**
 * The providers' calls bound to the SDK: REST for templates, network volumes and registry auths
 * (plus GraphQL for the fields only it has: templates' start fields, volumes' storage);
 * GraphQL for endpoints (saveEndpoint is the full-replace save the spec describes, and only GraphQL
 * knows gpuIds, locations, hubReleaseId and modelName) and for registry credentials (REST cannot
 * update them).
 */
export function createManagementApi(settings: ProviderSettings): ManagementApi {
  const rest = new RestClient({ apiKey: settings.apiKey, baseUrl: settings.restUrl });
  const graphql = new GraphQLClient({ apiKey: settings.apiKey, baseUrl: settings.graphqlUrl });
  // Every read of a template (network volume) takes its GraphQL-only fields from the whole list:
  // shared by the reads of a refresh that run at once, or each would list the account.
  const templateViews = sharedAfterAsking(() => graphql.listTemplates());
  const volumeViews = sharedAfterAsking(() => graphql.listNetworkVolumes());
  let account: Promise<string> | undefined;
  return {
    accountId: () => {
      // One call per provider process and key; a failure is not kept, so the next call asks again.
      account ??= graphql.accountId().catch((error: unknown) => {
        account = undefined;
        throw error;
      });
      return account;
    },
    endpoints: {
      get: (id) => graphql.getEndpoint(id),
      list: () => graphql.listEndpoints(),
      save: (input) => graphql.saveEndpoint(input),
      delete: (id) => graphql.deleteEndpoint(id),
      gpuTypes: async (id) => (await rest.endpoints.get(id)).gpuTypeIds,
      setGpuTypes: async (id, gpuTypeIds) => {
        await rest.endpoints.update(id, { gpuTypeIds });
      },
    },
    templates: {
      get: (id) => rest.templates.get(id),
      // Every template of the account: the REST list leaves out those bound to endpoints unless asked.
      list: () => rest.templates.list({ includeEndpointBoundTemplates: true }),
      create: (input) => rest.templates.create(input),
      update: (id, patch) => rest.templates.update(id, patch),
      delete: (id) => rest.templates.delete(id),
      listGraphql: templateViews,
      save: (input) => graphql.saveTemplate(input),
    },
    networkVolumes: {
      get: (id) => rest.networkVolumes.get(id),
      create: (input) => rest.networkVolumes.create(input),
      createGraphql: (input) => graphql.createNetworkVolume(input),
      listGraphql: volumeViews,
      update: (id, patch) => rest.networkVolumes.update(id, patch),
      delete: (id) => rest.networkVolumes.delete(id),
    },
    registryAuths: {
      get: (id) => rest.containerRegistryAuths.get(id),
      list: () => rest.containerRegistryAuths.list(),
      create: (input) => rest.containerRegistryAuths.create(input),
      updateCredentials: async (input) => {
        await graphql.updateRegistryAuth(input);
      },
      delete: (id) => rest.containerRegistryAuths.delete(id),
    },
    secrets: {
      list: () => graphql.listSecrets(),
      create: (input) => graphql.createSecret(input),
      updateValue: (input) => graphql.updateSecretValue(input),
      updateDescription: (input) => graphql.updateSecretDescription(input),
      delete: (id) => graphql.deleteSecret(id),
    },
    pods: {
      // The real API leaves `machine` (the pod's data center and GPU type) out unless asked.
      get: (id) => rest.pods.get(id, { includeMachine: true }),
      list: () => rest.pods.list(),
      create: (input) => rest.pods.create(input),
      update: (id, patch) => rest.pods.update(id, patch),
      start: (id) => rest.pods.start(id),
      stop: (id) => rest.pods.stop(id),
      terminate: (id) => rest.pods.terminate(id),
    },
  };
}

/**
 * `list`, shared by the calls made while one is under way: a call joins the next list (sent once the
 * one under way has answered), never one already sent, so every caller's answer was given after it
 * asked (it sees a change it made just before). One list at a time, one more waiting: a parallel
 * refresh of n resources lists about (its duration / one list's) times, not n. A failure is each
 * joiner's, and not kept.
 */
export function sharedAfterAsking<T>(list: () => Promise<T>): () => Promise<T> {
  let sent: Promise<unknown> | undefined;
  let waiting: Promise<T> | undefined;
  const send = (): Promise<T> => {
    const answer = list();
    sent = answer;
    const done = () => {
      if (sent === answer) sent = undefined;
    };
    answer.then(done, done);
    return answer;
  };
  return () => {
    if (waiting !== undefined) return waiting;
    if (sent === undefined) return send();
    const settle = () => undefined;
    waiting = sent.then(settle, settle).then(() => {
      waiting = undefined;
      return send();
    });
    return waiting;
  };
}
