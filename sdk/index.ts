/** The public SDK: typed clients of the REST v1, GraphQL and job (/v2) APIs, their errors and schemas. */
// First: on an unsupported Node.js, one line naming the required version instead of a crash below.
import "./node-guard";

export type { ClientOptions } from "./client-options";
export * from "./errors";
export { DEFAULT_GRAPHQL_URL, GraphQLClient, type GraphQLClientOptions } from "./graphql";
export {
  type CallOptions,
  type CloseOptions,
  HttpClient,
  type HttpClientOptions,
  type RetryMode,
  type RetryPolicy,
} from "./http";
export {
  DEFAULT_JOBS_URL,
  JobClient,
  type JobClientOptions,
  type JobInput,
  type RunSyncOptions,
  type StreamOptions,
  type WaitOptions,
} from "./jobs";
export {
  BillingResource,
  DEFAULT_REST_URL,
  type NoQueryInput,
  PodsResource,
  type QueryInput,
  type RegistryAuthResource,
  RestClient,
  type RestClientOptions,
  RestResource,
} from "./rest";
export * as schemas from "./schemas";
export type {
  JobCancelled,
  JobCompleted,
  JobFailed,
  JobInProgress,
  JobInQueue,
  JobResult,
  JobResultFields,
  JobTimedOut,
} from "./schemas/job";
