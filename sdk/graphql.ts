import { GraphQLClient as GraphQLRequestClient } from "graphql-request";
import { z } from "zod";
import { type ClientOptions, clientHttp, requireApiKey } from "./client-options";
import { NotFoundError, ValidationError } from "./errors";
import * as documents from "./graphql-documents";
import { ENDPOINT_DOCUMENTS, type EndpointDocuments } from "./graphql-documents";
import { graphqlErrorOf } from "./graphql-errors";
import type { CallOptions, HttpClient, RetryMode } from "./http";
import {
  ContainerRegistryAuth,
  ContainerRegistryAuthCreateInput,
  GqlRegistryAuthUpdateInput,
} from "./schemas/container-registry-auth";
import { GqlEndpoint, GqlEndpointInput, ServerlessDiscount } from "./schemas/endpoint";
import {
  GqlNetworkVolumeDeleteInput,
  GqlNetworkVolumeUpdateInput,
  NetworkVolume,
  NetworkVolumeCreateInput,
} from "./schemas/network-volume";
import { GqlPodTemplate, GqlTemplateInput } from "./schemas/template";
import { parseReply, validateInput } from "./validate";

export const DEFAULT_GRAPHQL_URL = "https://api.runpod.io/graphql";

export interface GraphQLClientOptions extends ClientOptions {
  /** Default https://api.runpod.io/graphql. The key is added as `?api_key=` (the real service's way). */
  baseUrl?: string;
  /** Retries of queries (default 3); mutations are never retried. */
  retries?: number;
}

interface Call<S extends z.ZodType> extends CallOptions {
  operation: string;
  document: string;
  variables?: Record<string, unknown>;
  reply: S;
  /** Strings to keep out of errors besides the key (registry passwords). */
  secrets?: readonly string[];
}

const Reply = {
  saveEndpoint: z.object({ saveEndpoint: GqlEndpoint }),
  getEndpoint: z.object({ myself: z.object({ endpoint: GqlEndpoint.nullish() }) }),
  listEndpoints: z.object({ myself: z.object({ endpoints: z.array(GqlEndpoint) }) }),
  serverlessDiscount: z.object({ myself: z.object({ serverlessDiscount: ServerlessDiscount.optional() }) }),
  saveTemplate: z.object({ saveTemplate: GqlPodTemplate }),
  listTemplates: z.object({ myself: z.object({ podTemplates: z.array(GqlPodTemplate) }) }),
  createNetworkVolume: z.object({ createNetworkVolume: NetworkVolume }),
  updateNetworkVolume: z.object({ updateNetworkVolume: NetworkVolume }),
  listNetworkVolumes: z.object({ myself: z.object({ networkVolumes: z.array(NetworkVolume) }) }),
  saveRegistryAuth: z.object({ saveRegistryAuth: ContainerRegistryAuth }),
  updateRegistryAuth: z.object({ updateRegistryAuth: ContainerRegistryAuth }),
  listRegistryAuths: z.object({
    myself: z.object({ containerRegistryCreds: z.array(ContainerRegistryAuth) }),
  }),
  /** Deletes answer null (or a scalar on some operations): nothing to read. */
  none: z.unknown(),
};

const NonEmptyId = z.string().trim().min(1);

/**
 * Typed client of the GraphQL management API, built on graphql-request with the SDK's HTTP layer as
 * its transport (one pool, retries for queries only, timeouts, typed and redacted errors).
 */
export class GraphQLClient {
  readonly #http: HttpClient;
  readonly #apiKey: string;
  readonly #url: string;
  /** Which endpoint selection this service accepts; see ENDPOINT_DOCUMENTS. */
  #endpointDocs: EndpointDocuments = ENDPOINT_DOCUMENTS.extended;

  constructor(options: GraphQLClientOptions) {
    requireApiKey(options.apiKey, "graphql");
    this.#apiKey = options.apiKey;
    const url = new URL(options.baseUrl ?? DEFAULT_GRAPHQL_URL);
    url.searchParams.set("api_key", options.apiKey);
    this.#url = url.toString();
    this.#http = clientHttp(options, this.#url);
  }

  /**
   * Creates (no `id`) or updates (`id`) an endpoint. This is a FULL REPLACE: every field left out is
   * reset to the service's default, so an update must send the whole desired configuration (read it
   * with getEndpoint first if you only mean to change one field). `flashBootType` travels as the
   * EndpointInput enum through variables.
   */
  async saveEndpoint(
    input: z.input<typeof GqlEndpointInput>,
    options: CallOptions = {},
  ): Promise<GqlEndpoint> {
    const operation = "graphql.saveEndpoint";
    const valid = validateInput(GqlEndpointInput, input, operation);
    const data = await this.#endpointCall("save", (document) =>
      this.#mutate({
        ...options,
        operation,
        document,
        variables: { input: valid },
        reply: Reply.saveEndpoint,
      }),
    );
    return data.saveEndpoint;
  }

  /** `myself { endpoint(id:) }`; null when the account has no such endpoint. */
  async getEndpoint(id: string, options: CallOptions = {}): Promise<GqlEndpoint | null> {
    const operation = "graphql.getEndpoint";
    const valid = validateInput(NonEmptyId, id, operation);
    try {
      const data = await this.#endpointCall("get", (document) =>
        this.#query({ ...options, operation, document, variables: { id: valid }, reply: Reply.getEndpoint }),
      );
      return data.myself.endpoint ?? null;
    } catch (error) {
      if (error instanceof NotFoundError) return null;
      throw error;
    }
  }

  async listEndpoints(options: CallOptions = {}): Promise<GqlEndpoint[]> {
    const data = await this.#endpointCall("list", (document) =>
      this.#query({ ...options, operation: "graphql.listEndpoints", document, reply: Reply.listEndpoints }),
    );
    return data.myself.endpoints;
  }

  /** Refused by the service (CONFLICT) unless workersMin and workersMax are both 0. */
  async deleteEndpoint(id: string, options: CallOptions = {}): Promise<void> {
    const operation = "graphql.deleteEndpoint";
    const valid = validateInput(NonEmptyId, id, operation);
    await this.#mutate({
      ...options,
      operation,
      document: documents.DELETE_ENDPOINT,
      variables: { id: valid },
      reply: Reply.none,
    });
  }

  /** The account's serverless discount; null when it has none. */
  async serverlessDiscount(options: CallOptions = {}): Promise<ServerlessDiscount> {
    const data = await this.#query({
      ...options,
      operation: "graphql.serverlessDiscount",
      document: documents.SERVERLESS_DISCOUNT,
      reply: Reply.serverlessDiscount,
    });
    return data.myself.serverlessDiscount ?? null;
  }

  /** Creates (no `id`) or replaces (`id`) a template: like saveEndpoint, a FULL REPLACE. */
  async saveTemplate(
    input: z.input<typeof GqlTemplateInput>,
    options: CallOptions = {},
  ): Promise<GqlPodTemplate> {
    const operation = "graphql.saveTemplate";
    const valid = validateInput(GqlTemplateInput, input, operation);
    const data = await this.#mutate({
      ...options,
      operation,
      document: documents.SAVE_TEMPLATE,
      variables: { input: valid },
      reply: Reply.saveTemplate,
    });
    return data.saveTemplate;
  }

  /** Deletes a template BY NAME (the real service's signature). */
  async deleteTemplate(templateName: string, options: CallOptions = {}): Promise<void> {
    const operation = "graphql.deleteTemplate";
    const valid = validateInput(NonEmptyId, templateName, operation);
    await this.#mutate({
      ...options,
      operation,
      document: documents.DELETE_TEMPLATE,
      variables: { templateName: valid },
      reply: Reply.none,
    });
  }

  async listTemplates(options: CallOptions = {}): Promise<GqlPodTemplate[]> {
    const data = await this.#query({
      ...options,
      operation: "graphql.listTemplates",
      document: documents.LIST_TEMPLATES,
      reply: Reply.listTemplates,
    });
    return data.myself.podTemplates;
  }

  async createNetworkVolume(
    input: z.input<typeof NetworkVolumeCreateInput>,
    options: CallOptions = {},
  ): Promise<NetworkVolume> {
    const operation = "graphql.createNetworkVolume";
    const valid = validateInput(NetworkVolumeCreateInput, input, operation);
    const data = await this.#mutate({
      ...options,
      operation,
      document: documents.CREATE_NETWORK_VOLUME,
      variables: { input: valid },
      reply: Reply.createNetworkVolume,
    });
    return data.createNetworkVolume;
  }

  async updateNetworkVolume(
    input: z.input<typeof GqlNetworkVolumeUpdateInput>,
    options: CallOptions = {},
  ): Promise<NetworkVolume> {
    const operation = "graphql.updateNetworkVolume";
    const valid = validateInput(GqlNetworkVolumeUpdateInput, input, operation);
    const data = await this.#mutate({
      ...options,
      operation,
      document: documents.UPDATE_NETWORK_VOLUME,
      variables: { input: valid },
      reply: Reply.updateNetworkVolume,
    });
    return data.updateNetworkVolume;
  }

  async deleteNetworkVolume(id: string, options: CallOptions = {}): Promise<void> {
    const operation = "graphql.deleteNetworkVolume";
    const valid = validateInput(GqlNetworkVolumeDeleteInput, { id }, operation);
    await this.#mutate({
      ...options,
      operation,
      document: documents.DELETE_NETWORK_VOLUME,
      variables: { input: valid },
      reply: Reply.none,
    });
  }

  async listNetworkVolumes(options: CallOptions = {}): Promise<NetworkVolume[]> {
    const data = await this.#query({
      ...options,
      operation: "graphql.listNetworkVolumes",
      document: documents.LIST_NETWORK_VOLUMES,
      reply: Reply.listNetworkVolumes,
    });
    return data.myself.networkVolumes;
  }

  async saveRegistryAuth(
    input: z.input<typeof ContainerRegistryAuthCreateInput>,
    options: CallOptions = {},
  ): Promise<ContainerRegistryAuth> {
    const operation = "graphql.saveRegistryAuth";
    const valid = validateInput(ContainerRegistryAuthCreateInput, input, operation);
    const data = await this.#mutate({
      ...options,
      operation,
      document: documents.SAVE_REGISTRY_AUTH,
      variables: { input: valid },
      reply: Reply.saveRegistryAuth,
      secrets: [valid.password],
    });
    return data.saveRegistryAuth;
  }

  /** Replaces the credentials of a registry auth (its name is fixed). */
  async updateRegistryAuth(
    input: z.input<typeof GqlRegistryAuthUpdateInput>,
    options: CallOptions = {},
  ): Promise<ContainerRegistryAuth> {
    const operation = "graphql.updateRegistryAuth";
    const valid = validateInput(GqlRegistryAuthUpdateInput, input, operation);
    const data = await this.#mutate({
      ...options,
      operation,
      document: documents.UPDATE_REGISTRY_AUTH,
      variables: { input: valid },
      reply: Reply.updateRegistryAuth,
      secrets: [valid.password],
    });
    return data.updateRegistryAuth;
  }

  async deleteRegistryAuth(registryAuthId: string, options: CallOptions = {}): Promise<void> {
    const operation = "graphql.deleteRegistryAuth";
    const valid = validateInput(NonEmptyId, registryAuthId, operation);
    await this.#mutate({
      ...options,
      operation,
      document: documents.DELETE_REGISTRY_AUTH,
      variables: { registryAuthId: valid },
      reply: Reply.none,
    });
  }

  async listRegistryAuths(options: CallOptions = {}): Promise<ContainerRegistryAuth[]> {
    const data = await this.#query({
      ...options,
      operation: "graphql.listRegistryAuths",
      document: documents.LIST_REGISTRY_AUTHS,
      reply: Reply.listRegistryAuths,
    });
    return data.myself.containerRegistryCreds;
  }

  close(): Promise<void> {
    return this.#http.close();
  }

  /**
   * Sends an endpoint document with the extended selection; if the service's schema refuses it (a
   * validation error: nothing was executed, so resending is safe), sends the portable one and keeps
   * using it when that works.
   */
  async #endpointCall<T>(which: keyof EndpointDocuments, send: (document: string) => Promise<T>): Promise<T> {
    const docs = this.#endpointDocs;
    try {
      return await send(docs[which]);
    } catch (error) {
      const refused =
        error instanceof ValidationError &&
        (error.serviceCode === "GRAPHQL_VALIDATION" || error.serviceCode === "GRAPHQL_VALIDATION_FAILED");
      if (!refused || docs === ENDPOINT_DOCUMENTS.portable) throw error;
      const result = await send(ENDPOINT_DOCUMENTS.portable[which]);
      this.#endpointDocs = ENDPOINT_DOCUMENTS.portable;
      return result;
    }
  }

  #query<S extends z.ZodType>(call: Call<S>): Promise<z.output<S>> {
    return this.#send(call, "idempotent");
  }

  #mutate<S extends z.ZodType>(call: Call<S>): Promise<z.output<S>> {
    return this.#send(call, "never");
  }

  async #send<S extends z.ZodType>(call: Call<S>, retry: RetryMode): Promise<z.output<S>> {
    // graphql-request builds the body and reads the reply; the SDK's HTTP layer carries it.
    const client = new GraphQLRequestClient(this.#url, {
      fetch: async (_url, init) => {
        const reply = await this.#http.exchange({
          operation: call.operation,
          method: "POST",
          path: "",
          rawBody: typeof init?.body === "string" ? init.body : "",
          retry,
          signal: call.signal,
          timeoutMs: call.timeoutMs,
        });
        const headers = new Headers();
        const contentType = reply.headers["content-type"];
        if (typeof contentType === "string") headers.set("content-type", contentType);
        const empty = reply.status === 204 || reply.status === 205 || reply.status === 304;
        return new Response(empty ? null : reply.text, { status: reply.status, headers });
      },
    });
    let data: unknown;
    try {
      data = await client.request<unknown>({ document: call.document, variables: call.variables });
    } catch (error) {
      throw graphqlErrorOf(call.operation, error, [this.#apiKey, ...(call.secrets ?? [])]);
    }
    return parseReply(call.reply, data, call.operation);
  }
}
