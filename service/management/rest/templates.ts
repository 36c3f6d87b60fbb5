import {
  Template,
  TemplateCreateInput,
  TemplateList,
  TemplateListQuery,
  TemplateUpdateInput,
} from "../../../sdk/schemas/template";
import { publicTemplate, publicTemplates } from "../model/catalogue";
import { type RestRoute, route, updateRoutes } from "./route";
import { restRunpodTemplate, restTemplate } from "./shape";

const TAG = "templates";

export const templateRoutes: RestRoute[] = [
  route(
    {
      method: "POST",
      url: "/templates",
      operationId: "CreateTemplate",
      tag: TAG,
      summary: "Create a template (name unique per account)",
      body: TemplateCreateInput,
      response: Template,
    },
    (c) => restTemplate(c.management.templates.create(c.accountId, c.body)),
  ),
  route(
    {
      method: "GET",
      url: "/templates",
      operationId: "ListTemplates",
      tag: TAG,
      summary:
        "List the account's templates; endpoint-bound ones (serverless templates an endpoint uses) with includeEndpointBoundTemplates, the official ones with includeRunpodTemplates (this service has no community templates: includePublicTemplates adds none)",
      query: TemplateListQuery,
      response: TemplateList,
    },
    (c) => [
      ...c.management.templates
        .listed(c.accountId, { endpointBound: c.query.includeEndpointBoundTemplates ?? false })
        .map(restTemplate),
      ...(c.query.includeRunpodTemplates ? publicTemplates().map(restRunpodTemplate) : []),
    ],
  ),
  route(
    {
      method: "GET",
      url: "/templates/:templateId",
      operationId: "GetTemplate",
      tag: TAG,
      summary:
        "Find a template by id: the account's (endpoint-bound or not), or an official one with includeRunpodTemplates",
      query: TemplateListQuery,
      response: Template,
    },
    (c) => {
      const id = c.params.templateId ?? "";
      const official = c.query.includeRunpodTemplates ? publicTemplate(id) : undefined;
      if (official && !c.management.templates.find(c.accountId, id)) return restRunpodTemplate(official);
      return restTemplate(c.management.templates.get(c.accountId, id));
    },
  ),
  ...updateRoutes(
    "/templates/:templateId",
    {
      body: TemplateUpdateInput,
      response: Template,
      tag: TAG,
      summary: "Update a template (partial); endpoints using it get a new version",
      operationId: "UpdateTemplate",
    },
    (c) => restTemplate(c.management.templates.update(c.accountId, c.params.templateId ?? "", c.body)),
  ),
  route(
    {
      method: "DELETE",
      url: "/templates/:templateId",
      operationId: "DeleteTemplate",
      tag: TAG,
      summary: "Delete a template (refused while an endpoint uses it)",
      status: 204,
    },
    (c) => c.management.templates.delete(c.accountId, c.params.templateId ?? ""),
  ),
];
