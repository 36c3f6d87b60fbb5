import * as pulumi from "@pulumi/pulumi";
import { GraphQLClient } from "../sdk/graphql";
import { CONFIG_KEYS, type ConfigLookup, resolveSettings } from "./config";
import type { CpuFlavor, DataCenter, GpuType } from "./public-types";

/**
 * Lookup functions over the service's catalogue (GraphQL gpuTypes, cpuFlavors, dataCenters), for a
 * program: each reads the same `runpodkit:*` config (or environment) as the resources, and makes one
 * call when the program runs, in preview too. The SDK's GraphQLClient has the same calls.
 *
 * Resource `check` never calls these: it validates GPU type ids, pool ids, CPU flavors and data
 * centers against the catalogue compiled into this package (sdk/schemas/common.ts, the ids the
 * service accepts), so a preview names a wrong id even offline.
 */

export interface LookupOptions {
  /** Overrides runpodkit:apiKey / RUNPOD_API_KEY. */
  apiKey?: string | undefined;
  /** Overrides runpodkit:graphqlUrl / RUNPODKIT_GRAPHQL_URL. */
  graphqlUrl?: string | undefined;
}

export interface GetGpuTypesArgs {
  /** Only these GPU type ids (e.g. "NVIDIA GeForce RTX 4090"). */
  ids?: string[] | undefined;
}

export interface GetCpuFlavorsArgs {
  /** Only this flavor (e.g. "cpu3c"). */
  id?: string | undefined;
}

/** The program's config: Pulumi's for the running stack (outside a program, nothing). */
const programConfig: ConfigLookup = { get: (key) => pulumi.runtime.getConfig(key) };

async function withClient<T>(
  options: LookupOptions,
  call: (client: GraphQLClient) => Promise<T>,
): Promise<T> {
  // The options first, then the program's config, then the environment (as the resources).
  const lookup: ConfigLookup = {
    get: (key) =>
      (key === CONFIG_KEYS.apiKey.key ? options.apiKey : undefined) ??
      (key === CONFIG_KEYS.graphqlUrl.key ? options.graphqlUrl : undefined) ??
      programConfig.get(key),
  };
  const settings = resolveSettings(lookup, process.env);
  const client = new GraphQLClient({ apiKey: settings.apiKey, baseUrl: settings.graphqlUrl });
  try {
    return await call(client);
  } finally {
    await client.close();
  }
}

/** GPU types with their prices (USD per GPU-hour) and availability by cloud. */
export function getGpuTypes(args: GetGpuTypesArgs = {}, options: LookupOptions = {}): Promise<GpuType[]> {
  return withClient(options, (client) => client.gpuTypes(args.ids ? { ids: args.ids } : undefined));
}

/** CPU flavors; a pod's or endpoint's instance id is `<flavor>-<vCPUs>-<GB>`, e.g. "cpu3c-2-4". */
export function getCpuFlavors(
  args: GetCpuFlavorsArgs = {},
  options: LookupOptions = {},
): Promise<CpuFlavor[]> {
  return withClient(options, (client) => client.cpuFlavors(args.id ? { id: args.id } : undefined));
}

/** Data centers, with whether they hold network volumes (storageSupport). */
export function getDataCenters(options: LookupOptions = {}): Promise<DataCenter[]> {
  return withClient(options, (client) => client.dataCenters());
}

/** getGpuTypesOutput's arguments: the list or any of its ids may be an Output, as in Pulumi's invokes. */
export interface GetGpuTypesOutputArgs {
  /** Only these GPU type ids (e.g. "NVIDIA GeForce RTX 4090"). */
  ids?: pulumi.Input<pulumi.Input<string>[]> | undefined;
}

/** getGpuTypes as an Output, for inputs that are Outputs. */
export function getGpuTypesOutput(
  args: pulumi.Input<GetGpuTypesOutputArgs> = {},
  options: LookupOptions = {},
): pulumi.Output<GpuType[]> {
  // pulumi.output resolves Outputs at every level, so the ids reach getGpuTypes as plain strings.
  return pulumi.output(args).apply((a) => getGpuTypes(a, options));
}
