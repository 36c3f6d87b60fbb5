import {
  Endpoint,
  EndpointCreateInput,
  EndpointGetQuery,
  EndpointList,
  EndpointUpdateInput,
} from "../../../sdk/schemas/endpoint";
import type { Management } from "../index";
import type { EndpointChanges, EndpointRecord } from "../model/endpoint";
import { type RestRoute, route, updateRoutes } from "./route";
import { restEndpoint } from "./shape";

const TAG = "endpoints";

/**
 * REST's boolean `flashboot` is the domain's flashBootType. `true` is any flashboot: an endpoint
 * whose GraphQL flashBootType is PRIORITY_FLASHBOOT (which REST reads as `true`) keeps it, so a REST
 * read-then-update changes nothing.
 */
function changesOf(
  body: EndpointCreateInput | EndpointUpdateInput,
  existing?: EndpointRecord,
): EndpointChanges {
  const { flashboot, computeType, ...rest } = body as EndpointCreateInput & EndpointUpdateInput;
  const flashBootType = (on: boolean): EndpointRecord["flashBootType"] => {
    if (!on) return "OFF";
    return existing?.flashBootType === "PRIORITY_FLASHBOOT" ? "PRIORITY_FLASHBOOT" : "FLASHBOOT";
  };
  return {
    ...rest,
    ...(computeType !== undefined ? { computeType } : {}),
    ...(flashboot !== undefined ? { flashBootType: flashBootType(flashboot) } : {}),
  };
}

function reply(management: Management, record: EndpointRecord, query: EndpointGetQuery = {}) {
  const { accountId } = record;
  return restEndpoint(record, {
    template: query.includeTemplate ? management.templates.get(accountId, record.templateId) : undefined,
    workers: query.includeWorkers ? management.pods.workers(accountId, { endpointId: record.id }) : undefined,
  });
}

export const endpointRoutes: RestRoute[] = [
  route(
    {
      method: "POST",
      url: "/endpoints",
      operationId: "CreateEndpoint",
      tag: TAG,
      summary: "Create an endpoint",
      body: EndpointCreateInput,
      response: Endpoint,
    },
    (c) => reply(c.management, c.management.endpoints.create(c.accountId, changesOf(c.body))),
  ),
  route(
    {
      method: "GET",
      url: "/endpoints",
      operationId: "ListEndpoints",
      tag: TAG,
      summary: "List endpoints",
      query: EndpointGetQuery,
      response: EndpointList,
    },
    (c) => c.management.endpoints.list(c.accountId).map((e) => reply(c.management, e, c.query)),
  ),
  route(
    {
      method: "GET",
      url: "/endpoints/:endpointId",
      operationId: "GetEndpoint",
      tag: TAG,
      summary: "Find an endpoint by id",
      query: EndpointGetQuery,
      response: Endpoint,
    },
    (c) => reply(c.management, c.management.endpoints.get(c.accountId, c.params.endpointId ?? ""), c.query),
  ),
  ...updateRoutes(
    "/endpoints/:endpointId",
    {
      body: EndpointUpdateInput,
      response: Endpoint,
      tag: TAG,
      summary: "Update an endpoint (partial: absent fields are unchanged)",
      operationId: "UpdateEndpoint",
    },
    (c) => {
      const id = c.params.endpointId ?? "";
      const existing = c.management.endpoints.get(c.accountId, id);
      return reply(c.management, c.management.endpoints.update(c.accountId, id, changesOf(c.body, existing)));
    },
  ),
  route(
    {
      method: "DELETE",
      url: "/endpoints/:endpointId",
      operationId: "DeleteEndpoint",
      tag: TAG,
      summary: "Delete an endpoint (only when workersMin and workersMax are both 0)",
      status: 204,
    },
    (c) => c.management.endpoints.delete(c.accountId, c.params.endpointId ?? ""),
  ),
];
