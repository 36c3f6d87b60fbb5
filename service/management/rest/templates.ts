import {
  Template,
  TemplateCreateInput,
  TemplateList,
  TemplateListQuery,
  TemplateUpdateInput,
} from "../../../sdk/schemas/template";
import { type RestRoute, route, updateRoutes } from "./route";
import { restTemplate } from "./shape";

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
      summary: "List the account's templates (this service has no public or official ones)",
      query: TemplateListQuery,
      response: TemplateList,
    },
    (c) => c.management.templates.list(c.accountId).map(restTemplate),
  ),
  route(
    {
      method: "GET",
      url: "/templates/:templateId",
      operationId: "GetTemplate",
      tag: TAG,
      summary: "Find a template by id",
      query: TemplateListQuery,
      response: Template,
    },
    (c) => restTemplate(c.management.templates.get(c.accountId, c.params.templateId ?? "")),
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
