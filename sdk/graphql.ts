import { GraphQLClient as GraphQLRequestClient } from "graphql-request";
import { type ClientOptions, clientHttp, requireBaseUrl, requireClientOptions } from "./client-options";
import { NotFoundError, ValidationError } from "./errors";
import {
  ENDPOINT_DOCUMENTS,
  type EndpointDocuments,
  type GraphqlOperation,
  OPERATIONS,
} from "./graphql-documents";
import { graphqlErrorOf } from "./graphql-errors";
import type { CallOptions, CloseOptions, HttpClient } from "./http";
import type * as api from "./public-types";

export const DEFAULT_GRAPHQL_URL = "https://api.runpod.io/graphql";

export interface GraphQLClientOptions extends ClientOptions {
  /** Default https://api.runpod.io/graphql. The key is added as `?api_key=` (the real service's way). */
  baseUrl?: string | undefined;
  /** Retries of queries (default 3); mutations are never retried. */
  retries?: number | undefined;
}

/*
 * A call's own settings reach the transport below as request headers: graphql-request hands its
 * fetch the headers of each request, and the transport reads these and forwards only the body, so
 * they never leave the process. That keeps one graphql-request client for all of a client's calls.
 */
const OPERATION_HEADER = "x-runpodkit-operation";
const RETRY_HEADER = "x-runpodkit-retry";
const TIMEOUT_HEADER = "x-runpodkit-timeout-ms";

/**
 * Typed client of the GraphQL management API, built on graphql-request with the SDK's HTTP layer as
 * its transport (one pool, retries for queries only, timeouts, typed and redacted errors). Every
 * method runs one operation of OPERATIONS (sdk/graphql-documents.ts).
 */
export class GraphQLClient {
  readonly #http: HttpClient;
  readonly #apiKey: string;
  readonly #client: GraphQLRequestClient;
  /** Which endpoint selection this service accepts; see ENDPOINT_DOCUMENTS. */
  #endpointDocs: EndpointDocuments = ENDPOINT_DOCUMENTS.extended;

  constructor(given: GraphQLClientOptions) {
    const options = requireClientOptions(given, "graphql");
    this.#apiKey = options.apiKey;
    const url = new URL(
      requireBaseUrl(
        options.baseUrl ?? DEFAULT_GRAPHQL_URL,
        "graphql",
        options.apiKey,
        "http://127.0.0.1:8080/graphql",
      ),
    );
    url.searchParams.set("api_key", options.apiKey);
    this.#http = clientHttp(options, url.toString());
    this.#client = new GraphQLRequestClient(url.toString(), { fetch: (_url, init) => this.#transport(init) });
  }

  /**
   * Creates (no `id`) or updates (`id`) an endpoint. This is a FULL REPLACE: every field left out is
   * reset to the service's default, so an update must send the whole desired configuration (read it
   * with getEndpoint first if you only mean to change one field). `flashBootType` travels as the
   * EndpointInput enum through variables.
   */
  saveEndpoint(input: api.GqlEndpointInput, options: CallOptions = {}): Promise<api.GqlEndpoint> {
    return this.#run(OPERATIONS.saveEndpoint, input, options);
  }

  /** `myself { endpoint(id:) }`; null when the account has no such endpoint. */
  getEndpoint(id: string, options: CallOptions = {}): Promise<api.GqlEndpoint | null> {
    return this.#run(OPERATIONS.getEndpoint, id, options);
  }

  listEndpoints(options: CallOptions = {}): Promise<api.GqlEndpoint[]> {
    return this.#run(OPERATIONS.listEndpoints, undefined, options);
  }

  /** Refused by the service (CONFLICT) unless workersMin and workersMax are both 0. */
  deleteEndpoint(id: string, options: CallOptions = {}): Promise<void> {
    return this.#run(OPERATIONS.deleteEndpoint, id, options);
  }

  /** The account's serverless discount; null when it has none. */
  serverlessDiscount(options: CallOptions = {}): Promise<api.ServerlessDiscount> {
    return this.#run(OPERATIONS.serverlessDiscount, undefined, options);
  }

  /** The id of the account the API key belongs to (`myself { id }`). */
  accountId(options: CallOptions = {}): Promise<string> {
    return this.#run(OPERATIONS.accountId, undefined, options);
  }

  /** Creates (no `id`) or replaces (`id`) a template: like saveEndpoint, a FULL REPLACE. */
  saveTemplate(input: api.GqlTemplateInput, options: CallOptions = {}): Promise<api.GqlPodTemplate> {
    return this.#run(OPERATIONS.saveTemplate, input, options);
  }

  /** Deletes a template BY NAME (the real service's signature). */
  deleteTemplate(templateName: string, options: CallOptions = {}): Promise<void> {
    return this.#run(OPERATIONS.deleteTemplate, templateName, options);
  }

  listTemplates(options: CallOptions = {}): Promise<api.GqlPodTemplate[]> {
    return this.#run(OPERATIONS.listTemplates, undefined, options);
  }

  /** Creates a volume; `isNextGenStorage` (GraphQL only) picks its storage for good. */
  createNetworkVolume(
    input: api.GqlNetworkVolumeCreateInput,
    options: CallOptions = {},
  ): Promise<api.GqlNetworkVolume> {
    return this.#run(OPERATIONS.createNetworkVolume, input, options);
  }

  updateNetworkVolume(
    input: api.GqlNetworkVolumeUpdateInput,
    options: CallOptions = {},
  ): Promise<api.GqlNetworkVolume> {
    return this.#run(OPERATIONS.updateNetworkVolume, input, options);
  }

  deleteNetworkVolume(id: string, options: CallOptions = {}): Promise<void> {
    return this.#run(OPERATIONS.deleteNetworkVolume, { id }, options);
  }

  listNetworkVolumes(options: CallOptions = {}): Promise<api.GqlNetworkVolume[]> {
    return this.#run(OPERATIONS.listNetworkVolumes, undefined, options);
  }

  saveRegistryAuth(
    input: api.ContainerRegistryAuthCreateInput,
    options: CallOptions = {},
  ): Promise<api.ContainerRegistryAuth> {
    return this.#run(OPERATIONS.saveRegistryAuth, input, options);
  }

  /** Replaces the credentials of a registry auth (its name is fixed). */
  updateRegistryAuth(
    input: api.GqlRegistryAuthUpdateInput,
    options: CallOptions = {},
  ): Promise<api.ContainerRegistryAuth> {
    return this.#run(OPERATIONS.updateRegistryAuth, input, options);
  }

  deleteRegistryAuth(registryAuthId: string, options: CallOptions = {}): Promise<void> {
    return this.#run(OPERATIONS.deleteRegistryAuth, registryAuthId, options);
  }

  listRegistryAuths(options: CallOptions = {}): Promise<api.ContainerRegistryAuth[]> {
    return this.#run(OPERATIONS.listRegistryAuths, undefined, options);
  }

  /** Creates an account secret; templates and endpoints reference it as `{{ RUNPOD_SECRET_<name> }}`. */
  createSecret(input: api.GqlSecretCreateInput, options: CallOptions = {}): Promise<api.GqlSecret> {
    return this.#run(OPERATIONS.createSecret, input, options);
  }

  /** Rotates a secret's value; workers started afterwards get the new one. */
  updateSecretValue(input: api.GqlSecretValueUpdateInput, options: CallOptions = {}): Promise<api.GqlSecret> {
    return this.#run(OPERATIONS.updateSecretValue, input, options);
  }

  updateSecretDescription(
    input: api.GqlSecretDescriptionUpdateInput,
    options: CallOptions = {},
  ): Promise<api.GqlSecret> {
    return this.#run(OPERATIONS.updateSecretDescription, input, options);
  }

  deleteSecret(id: string, options: CallOptions = {}): Promise<void> {
    return this.#run(OPERATIONS.deleteSecret, id, options);
  }

  /** The account's secrets, never their values. */
  listSecrets(options: CallOptions = {}): Promise<api.GqlSecret[]> {
    return this.#run(OPERATIONS.listSecrets, undefined, options);
  }

  /** GPU types with their prices (USD per GPU-hour); one id, several, or all. */
  gpuTypes(filter?: api.GqlGpuTypeFilter, options: CallOptions = {}): Promise<api.GpuType[]> {
    return this.#run(OPERATIONS.gpuTypes, filter, options);
  }

  /** CPU flavors (instance ids are `<flavor>-<vCPUs>-<GB>`). */
  cpuFlavors(filter?: api.GqlCpuFlavorInput, options: CallOptions = {}): Promise<api.CpuFlavor[]> {
    return this.#run(OPERATIONS.cpuFlavors, filter, options);
  }

  dataCenters(options: CallOptions = {}): Promise<api.DataCenter[]> {
    return this.#run(OPERATIONS.dataCenters, undefined, options);
  }

  /** Closes the client once its calls in flight have ended; `{ force: true }` ends them at once (AbortedError). */
  close(options?: CloseOptions): Promise<void> {
    return this.#http.close(options);
  }

  /** Checks the argument, sends the operation's document, reads the reply. */
  async #run<In, Out>(op: GraphqlOperation<In, Out>, input: In, options: CallOptions): Promise<Out> {
    const { variables, secrets } = op.prepare(input);
    const send = (document: string) => this.#send(op, document, variables, secrets, options);
    try {
      const data =
        typeof op.document === "string"
          ? await send(op.document)
          : await this.#endpointCall(op.document.endpoint, send);
      return op.read(data);
    } catch (error) {
      if (op.whenNotFound && error instanceof NotFoundError) return op.whenNotFound();
      throw error;
    }
  }

  /**
   * Sends an endpoint document with the extended selection; if the service's schema refuses it (a
   * validation error: nothing was executed, so resending is safe), sends the portable one and keeps
   * using it when that works.
   */
  async #endpointCall(which: keyof EndpointDocuments, send: (document: string) => Promise<unknown>) {
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

  async #send(
    op: GraphqlOperation<never, unknown>,
    document: string,
    variables: Record<string, unknown> | undefined,
    secrets: readonly string[],
    options: CallOptions,
  ): Promise<unknown> {
    const requestHeaders: Record<string, string> = {
      [OPERATION_HEADER]: op.name,
      [RETRY_HEADER]: op.kind === "query" ? "idempotent" : "never",
    };
    if (options.timeoutMs !== undefined) requestHeaders[TIMEOUT_HEADER] = String(options.timeoutMs);
    try {
      return await this.#client.request<unknown>({
        document,
        variables,
        requestHeaders,
        signal: options.signal,
      });
    } catch (error) {
      throw graphqlErrorOf(op.name, error, [this.#apiKey, ...secrets], op.kind === "query");
    }
  }

  /** graphql-request builds the body and reads the reply; the SDK's HTTP layer carries it. */
  async #transport(init: RequestInit | undefined): Promise<Response> {
    const headers = new Headers(init?.headers);
    const timeout = headers.get(TIMEOUT_HEADER);
    const reply = await this.#http.exchange({
      operation: headers.get(OPERATION_HEADER) ?? "graphql",
      method: "POST",
      path: "",
      rawBody: typeof init?.body === "string" ? init.body : "",
      retry: headers.get(RETRY_HEADER) === "idempotent" ? "idempotent" : "never",
      signal: init?.signal ?? undefined,
      timeoutMs: timeout === null ? undefined : Number(timeout),
    });
    const replyHeaders = new Headers();
    const contentType = reply.headers["content-type"];
    if (typeof contentType === "string") replyHeaders.set("content-type", contentType);
    // Read back by graphqlErrorOf: a 429's RateLimitedError carries retryAfterMs, as the JobClient's.
    const retryAfter = reply.headers["retry-after"];
    if (typeof retryAfter === "string") replyHeaders.set("retry-after", retryAfter);
    const empty = reply.status === 204 || reply.status === 205 || reply.status === 304;
    return new Response(empty ? null : reply.text, { status: reply.status, headers: replyHeaders });
  }
}
