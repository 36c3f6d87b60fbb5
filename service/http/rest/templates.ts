import {
  Template,
  TemplateCreateInput,
  TemplateList,
  TemplateListQuery,
  TemplateUpdateInput,
} from "../../../sdk/schemas/template";
import {
  createTemplate,
  deleteTemplate,
  getTemplate,
  listTemplates,
  updateTemplate,
} from "../../domain/template";
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
    (c) => restTemplate(createTemplate(c.deps, c.accountId, c.body)),
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
    (c) => listTemplates(c.deps, c.accountId).map(restTemplate),
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
    (c) => restTemplate(getTemplate(c.deps, c.accountId, c.params.templateId ?? "")),
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
    (c) => restTemplate(updateTemplate(c.deps, c.accountId, c.params.templateId ?? "", c.body)),
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
    (c) => deleteTemplate(c.deps, c.accountId, c.params.templateId ?? ""),
  ),
];
