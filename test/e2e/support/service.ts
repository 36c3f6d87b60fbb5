/**
 * The local service for an e2e scenario, started in-process with a freshly generated key, plus what
 * the scenario needs to assert on the SERVICE's state: the SDK's REST and GraphQL clients, direct reads of the
 * endpoint records, and a log of endpoint saves (with the worker counts at that moment) and deletes.
 */
import { randomBytes } from "node:crypto";
import type { ConfigMap } from "../../../engine/engine";
import { GraphQLClient } from "../../../sdk/graphql";
import { RestClient } from "../../../sdk/rest";
import { accountIdOf } from "../../../service/edge/auth";
import { type RunningService, startService } from "../../../service/index";
import type { EndpointRecord } from "../../../service/management/model/records";

export interface EndpointEvent {
  kind: "saved" | "deleted";
  endpointId: string;
  workersMin?: number;
  workersMax?: number;
}

export interface ServiceFixture {
  service: RunningService;
  apiKey: string;
  rest: RestClient;
  /** For what only GraphQL shows (templates' start fields, volumes' storageType). */
  graphql: GraphQLClient;
  events: EndpointEvent[];
  /** The endpoint as the service stores it, or undefined when it does not exist. */
  endpoint(id: string): EndpointRecord | undefined;
  /** The `runpodkit:*` stack config that points a program at this service. */
  stackConfig(): ConfigMap;
  close(): Promise<void>;
}

export async function startServiceFixture(): Promise<ServiceFixture> {
  const apiKey = `rpk_e2e_${randomBytes(16).toString("hex")}`;
  const accountId = accountIdOf(apiKey);
  const service = await startService({ apiKeys: [apiKey], port: 0 });
  const rest = new RestClient({ apiKey, baseUrl: service.restUrl });
  const graphql = new GraphQLClient({ apiKey, baseUrl: service.graphqlUrl });
  const endpoint = (id: string): EndpointRecord | undefined => {
    try {
      return service.management.endpoints.get(accountId, id);
    } catch {
      return undefined;
    }
  };
  const events: EndpointEvent[] = [];
  service.events.on("endpoint.saved", (account, endpointId) => {
    if (account !== accountId) return;
    const record = endpoint(endpointId);
    events.push({
      kind: "saved",
      endpointId,
      workersMin: record?.workersMin,
      workersMax: record?.workersMax,
    });
  });
  service.events.on("endpoint.deleted", (account, endpointId) => {
    if (account === accountId) events.push({ kind: "deleted", endpointId });
  });
  return {
    service,
    apiKey,
    rest,
    graphql,
    events,
    endpoint,
    stackConfig: () => ({
      "runpodkit:apiKey": { value: apiKey, secret: true },
      "runpodkit:restUrl": { value: service.restUrl },
      "runpodkit:graphqlUrl": { value: service.graphqlUrl },
      "runpodkit:queueUrl": { value: service.queueUrl },
      // Bounds a delete that keeps being refused, so a broken delete fails the test instead of hanging.
      "runpodkit:deleteTimeout": { value: "60" },
    }),
    close: async () => {
      await Promise.all([rest.close(), graphql.close()]);
      await service.close();
    },
  };
}
