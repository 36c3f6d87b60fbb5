import { z } from "zod";
import { type ClientOptions, clientHttp, requireBaseUrl, requireClientOptions } from "./client-options";
import type { CallOptions, CloseOptions, HttpClient, QueryValue } from "./http";
import type * as api from "./public-types";
import {
  BillingRecords,
  EndpointBillingQuery,
  NetworkVolumeBillingQuery,
  NetworkVolumeBillingRecords,
  PodBillingQuery,
} from "./schemas/billing";
import {
  ContainerRegistryAuth,
  ContainerRegistryAuthCreateInput,
  ContainerRegistryAuthList,
} from "./schemas/container-registry-auth";
import {
  Endpoint,
  EndpointCreateInput,
  EndpointGetQuery,
  EndpointList,
  EndpointUpdateInput,
} from "./schemas/endpoint";
import {
  NetworkVolume,
  NetworkVolumeCreateInput,
  NetworkVolumeList,
  NetworkVolumeUpdateInput,
} from "./schemas/network-volume";
import { Pod, PodCreateInput, PodGetQuery, PodList, PodListQuery, PodUpdateInput } from "./schemas/pod";
import {
  Template,
  TemplateCreateInput,
  TemplateList,
  TemplateListQuery,
  TemplateUpdateInput,
} from "./schemas/template";
import { idSegment, parseReply, validateInput } from "./validate";

export const DEFAULT_REST_URL = "https://rest.runpod.io/v1";

/** For collections without query parameters: any parameter is refused before sending. */
const NoQuery = z.strictObject({});
/**
 * Their `list`/`get` query at the type level: only `{}` (or nothing). `object` took any object, so
 * `networkVolumes.list({ signal })` compiled and failed only when called.
 */
export type NoQueryInput = Record<string, never>;

export interface RestClientOptions extends ClientOptions {
  /** Default https://rest.runpod.io/v1; the local service serves the same paths under /v1. */
  baseUrl?: string | undefined;
  /** Retries of idempotent calls (default 3). */
  retries?: number | undefined;
}

/**
 * Query flags of the wire are "true"/"false" strings; callers may pass booleans. The clients'
 * signatures use its expansions in sdk/public-types.ts, which hold without zod.
 */
export type QueryInput<S extends z.ZodType> = {
  [K in keyof z.input<S>]?: z.input<S>[K] | boolean;
};

function toWireQuery(query: object | undefined): Record<string, unknown> | undefined {
  if (!query) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) out[key] = typeof value === "boolean" ? String(value) : value;
  }
  return out;
}

interface QueriedGet<R extends z.ZodType> extends CallOptions {
  operation: string;
  path: string;
  /** What the query may hold; it is validated before anything is sent. */
  querySchema: z.ZodType;
  query: unknown;
  reply: R;
}

/** A GET with a validated query, its reply parsed with `reply`. */
async function queriedGet<R extends z.ZodType>(http: HttpClient, call: QueriedGet<R>): Promise<z.output<R>> {
  const { operation, path, querySchema, query, reply: replySchema, ...options } = call;
  const wireQuery = validateInput(querySchema, query, operation);
  const reply = await http.request({
    ...options,
    operation,
    method: "GET",
    path,
    query: wireQuery as Record<string, QueryValue>,
  });
  return parseReply(replySchema, reply, operation);
}

interface ResourceSchemas {
  record: z.ZodType;
  list: z.ZodType;
  create: z.ZodType;
  update: z.ZodType;
  query: z.ZodType;
}

/**
 * One REST collection: create (POST, 200 or 201), list, get, update (PATCH, partial: absent fields are
 * unchanged, `0`/`false` are values), delete (204). A missing id is a NotFoundError (code NOT_FOUND).
 */
export class RestResource<Rec, CreateIn, UpdateIn, Query extends object> {
  readonly #http: HttpClient;
  readonly #name: string;
  readonly #path: string;
  readonly #schemas: ResourceSchemas;

  constructor(http: HttpClient, name: string, path: string, schemas: ResourceSchemas) {
    this.#http = http;
    this.#name = name;
    this.#path = path;
    this.#schemas = schemas;
  }

  async create(input: CreateIn, options: CallOptions = {}): Promise<Rec> {
    const operation = `rest.${this.#name}.create`;
    const body = validateInput(this.#schemas.create, input, operation);
    // 429 means nothing was created, so that one answer is retried; a 5xx or reset is not (duplicates).
    const reply = await this.#http.request({
      ...options,
      operation,
      method: "POST",
      path: this.#path,
      body,
      retry: "rejected-only",
    });
    return parseReply(this.#schemas.record, reply, operation) as Rec;
  }

  async list(query?: Query, options: CallOptions = {}): Promise<Rec[]> {
    return (await queriedGet(this.#http, {
      ...options,
      operation: `rest.${this.#name}.list`,
      path: this.#path,
      querySchema: this.#schemas.query,
      query: toWireQuery(query) ?? {},
      reply: this.#schemas.list,
    })) as Rec[];
  }

  async get(id: string, query?: Query, options: CallOptions = {}): Promise<Rec> {
    const operation = `rest.${this.#name}.get`;
    return (await queriedGet(this.#http, {
      ...options,
      operation,
      path: this.#path + idSegment(id, operation),
      querySchema: this.#schemas.query,
      query: toWireQuery(query) ?? {},
      reply: this.#schemas.record,
    })) as Rec;
  }

  async update(id: string, input: UpdateIn, options: CallOptions = {}): Promise<Rec> {
    const operation = `rest.${this.#name}.update`;
    const path = this.#path + idSegment(id, operation);
    const body = validateInput(this.#schemas.update, input, operation);
    // A PATCH of absolute values gives the same state when repeated: safe to retry.
    const reply = await this.#http.request({
      ...options,
      operation,
      method: "PATCH",
      path,
      body,
      retry: "idempotent",
    });
    return parseReply(this.#schemas.record, reply, operation) as Rec;
  }

  async delete(id: string, options: CallOptions = {}): Promise<void> {
    const operation = `rest.${this.#name}.delete`;
    const path = this.#path + idSegment(id, operation);
    await this.#http.request({ ...options, operation, method: "DELETE", path });
  }
}

/** Container registry auths have no REST update (as the real service); GraphQL has one. */
export type RegistryAuthResource = Omit<
  RestResource<api.ContainerRegistryAuth, api.ContainerRegistryAuthCreateInput, never, NoQueryInput>,
  "update"
>;

export class PodsResource {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  /** Serverless workers are pods too; the service lists them only with `includeWorkers: true`. */
  async list(query?: api.PodListQuery, options: CallOptions = {}): Promise<api.Pod[]> {
    return queriedGet(this.#http, {
      ...options,
      operation: "rest.pods.list",
      path: "/pods",
      querySchema: PodListQuery,
      query: toWireQuery(query) ?? {},
      reply: PodList,
    });
  }

  async get(id: string, query?: api.PodGetQuery, options: CallOptions = {}): Promise<api.Pod> {
    const operation = "rest.pods.get";
    return queriedGet(this.#http, {
      ...options,
      operation,
      path: `/pods${idSegment(id, operation)}`,
      querySchema: PodGetQuery,
      query: toWireQuery(query) ?? {},
      reply: Pod,
    });
  }

  /** Rents a GPU or CPU pod (POST /pods); it starts RUNNING and is billed while it runs. */
  async create(input: api.PodCreateInput, options: CallOptions = {}): Promise<api.Pod> {
    const operation = "rest.pods.create";
    const body = validateInput(PodCreateInput, input, operation);
    // Only a 429 proves nothing was created: nothing else is retried (a duplicate pod costs money).
    const reply = await this.#http.request({
      ...options,
      operation,
      method: "POST",
      path: "/pods",
      body,
      retry: "rejected-only",
    });
    return parseReply(Pod, reply, operation);
  }

  /** PATCH /pods/{id}: absent fields unchanged; a new image, command, env, ports or disk resets the pod. */
  async update(id: string, patch: api.PodUpdateInput, options: CallOptions = {}): Promise<api.Pod> {
    const operation = "rest.pods.update";
    const body = validateInput(PodUpdateInput, patch, operation);
    const reply = await this.#http.request({
      ...options,
      operation,
      method: "PATCH",
      path: `/pods${idSegment(id, operation)}`,
      body,
      retry: "idempotent",
    });
    return parseReply(Pod, reply, operation);
  }

  /** DELETE /pods/{id}: terminates the pod; it is gone afterwards (404). */
  async terminate(id: string, options: CallOptions = {}): Promise<void> {
    const operation = "rest.pods.terminate";
    await this.#http.request({
      ...options,
      operation,
      method: "DELETE",
      path: `/pods${idSegment(id, operation)}`,
    });
  }

  /** POST /pods/{id}/start: EXITED -> RUNNING. */
  start(id: string, options: CallOptions = {}): Promise<api.Pod> {
    return this.#action(id, "start", options);
  }

  /** POST /pods/{id}/stop: RUNNING -> EXITED (refused while locked). */
  stop(id: string, options: CallOptions = {}): Promise<api.Pod> {
    return this.#action(id, "stop", options);
  }

  /** POST /pods/{id}/restart: only a RUNNING pod. */
  restart(id: string, options: CallOptions = {}): Promise<api.Pod> {
    return this.#action(id, "restart", options);
  }

  /** POST /pods/{id}/reset: a fresh container, started. */
  reset(id: string, options: CallOptions = {}): Promise<api.Pod> {
    return this.#action(id, "reset", options);
  }

  async #action(
    id: string,
    action: "start" | "stop" | "restart" | "reset",
    options: CallOptions,
  ): Promise<api.Pod> {
    const operation = `rest.pods.${action}`;
    const reply = await this.#http.request({
      ...options,
      operation,
      method: "POST",
      path: `/pods${idSegment(id, operation)}/${action}`,
      retry: "idempotent",
    });
    return parseReply(Pod, reply, operation);
  }
}

export class BillingResource {
  readonly #http: HttpClient;

  constructor(http: HttpClient) {
    this.#http = http;
  }

  pods(query: api.PodBillingQuery = {}, options: CallOptions = {}): Promise<api.BillingRecord[]> {
    return this.#get("pods", "/billing/pods", PodBillingQuery, BillingRecords, query, options);
  }

  endpoints(query: api.EndpointBillingQuery = {}, options: CallOptions = {}): Promise<api.BillingRecord[]> {
    return this.#get("endpoints", "/billing/endpoints", EndpointBillingQuery, BillingRecords, query, options);
  }

  networkVolumes(
    query: api.NetworkVolumeBillingQuery = {},
    options: CallOptions = {},
  ): Promise<api.NetworkVolumeBillingRecord[]> {
    return this.#get(
      "networkVolumes",
      "/billing/networkvolumes",
      NetworkVolumeBillingQuery,
      NetworkVolumeBillingRecords,
      query,
      options,
    );
  }

  #get<R extends z.ZodType>(
    name: string,
    path: string,
    querySchema: z.ZodType,
    reply: R,
    query: unknown,
    options: CallOptions,
  ): Promise<z.output<R>> {
    return queriedGet(this.#http, {
      ...options,
      operation: `rest.billing.${name}`,
      path,
      querySchema,
      query,
      reply,
    });
  }
}

/** Typed client of the REST management API v1 (Bearer auth). */
export class RestClient {
  readonly endpoints: RestResource<
    api.Endpoint,
    api.EndpointCreateInput,
    api.EndpointUpdateInput,
    api.EndpointGetQuery
  >;
  readonly templates: RestResource<
    api.Template,
    api.TemplateCreateInput,
    api.TemplateUpdateInput,
    api.TemplateListQuery
  >;
  readonly networkVolumes: RestResource<
    api.NetworkVolume,
    api.NetworkVolumeCreateInput,
    api.NetworkVolumeUpdateInput,
    NoQueryInput
  >;
  readonly containerRegistryAuths: RegistryAuthResource;
  readonly pods: PodsResource;
  readonly billing: BillingResource;
  readonly #http: HttpClient;

  constructor(given: RestClientOptions) {
    const options = requireClientOptions(given, "rest");
    const baseUrl = requireBaseUrl(
      options.baseUrl ?? DEFAULT_REST_URL,
      "rest",
      options.apiKey,
      "http://127.0.0.1:8080/v1",
    );
    this.#http = clientHttp(options, baseUrl, {
      authorization: `Bearer ${options.apiKey}`,
    });
    const none = NoQuery;
    this.endpoints = new RestResource(this.#http, "endpoints", "/endpoints", {
      record: Endpoint,
      list: EndpointList,
      create: EndpointCreateInput,
      update: EndpointUpdateInput,
      query: EndpointGetQuery,
    });
    this.templates = new RestResource(this.#http, "templates", "/templates", {
      record: Template,
      list: TemplateList,
      create: TemplateCreateInput,
      update: TemplateUpdateInput,
      query: TemplateListQuery,
    });
    this.networkVolumes = new RestResource(this.#http, "networkVolumes", "/networkvolumes", {
      record: NetworkVolume,
      list: NetworkVolumeList,
      create: NetworkVolumeCreateInput,
      update: NetworkVolumeUpdateInput,
      query: none,
    });
    this.containerRegistryAuths = new RestResource(
      this.#http,
      "containerRegistryAuths",
      "/containerregistryauth",
      {
        record: ContainerRegistryAuth,
        list: ContainerRegistryAuthList,
        create: ContainerRegistryAuthCreateInput,
        update: none,
        query: none,
      },
    );
    this.pods = new PodsResource(this.#http);
    this.billing = new BillingResource(this.#http);
  }

  /** Closes the connection pool. */
  /** Closes the client once its calls in flight have ended; `{ force: true }` ends them at once (AbortedError). */
  close(options?: CloseOptions): Promise<void> {
    return this.#http.close(options);
  }
}
