import { z } from "zod";
import { ErrorBody } from "../../../sdk/schemas/common";
import type { RestRoute } from "./route";

type JsonSchema = Record<string, unknown>;

/** JSON Schema 2020-12 of a zod schema, as OpenAPI 3.1 embeds it. */
function jsonSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonSchema;
  return rest;
}

const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: jsonSchema(ErrorBody, "output") } },
});

function queryParameters(query: z.ZodType | undefined): JsonSchema[] {
  if (!query) return [];
  const schema = jsonSchema(query, "input") as {
    properties?: Record<string, JsonSchema>;
    required?: string[];
  };
  return Object.entries(schema.properties ?? {}).map(([name, property]) => ({
    name,
    in: "query",
    required: schema.required?.includes(name) ?? false,
    schema: property,
  }));
}

/** ":endpointId" -> "{endpointId}" */
const openApiPath = (url: string) => url.replace(/:(\w+)/g, "{$1}");

/**
 * The service's own OpenAPI 3.1 description, generated from the zod schemas the routes validate
 * with, so the document and the behaviour cannot disagree.
 */
export function openApiDocument(routes: readonly RestRoute[]): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const { spec } of routes) {
    const path = openApiPath(spec.url);
    const pathParameters = [...spec.url.matchAll(/:(\w+)/g)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    const ok =
      spec.status === 204
        ? { 204: { description: "Done; no body." } }
        : {
            200: {
              description: "Successful operation.",
              ...(spec.response
                ? { content: { "application/json": { schema: jsonSchema(spec.response, "output") } } }
                : {}),
            },
          };
    paths[path] ??= {};
    paths[path][spec.method.toLowerCase()] = {
      operationId: spec.operationId,
      tags: [spec.tag],
      summary: spec.summary,
      parameters: [...pathParameters, ...queryParameters(spec.query)],
      ...(spec.body
        ? {
            requestBody: {
              required: true,
              content: { "application/json": { schema: jsonSchema(spec.body, "input") } },
            },
          }
        : {}),
      responses: {
        ...ok,
        400: errorResponse("Invalid input; the message names the field."),
        401: errorResponse("Missing or wrong API key."),
        404: errorResponse("No such resource in this account."),
        ...(spec.body ? { 413: errorResponse("Body too large.") } : {}),
        ...(spec.operationId.endsWith("Pod") && spec.method !== "GET"
          ? { 501: errorResponse("Not implemented by this local service.") }
          : {}),
      },
    };
  }
  paths["/openapi.json"] = {
    get: {
      operationId: "GetOpenAPI",
      tags: ["docs"],
      summary: "This document",
      security: [],
      responses: { 200: { description: "OpenAPI 3.1 document" } },
    },
  };
  paths["/docs"] = {
    get: {
      operationId: "GetDocs",
      tags: ["docs"],
      summary: "Interactive documentation",
      security: [],
      responses: { 200: { description: "HTML page" } },
    },
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "runpodkit local service: REST v1",
      description:
        "A local, RunPod-compatible implementation of the REST management API. Lists are bare arrays, create answers 200, delete 204, errors {message}.",
      version: "0.1.0",
    },
    servers: [{ url: "/v1" }],
    tags: [
      "docs",
      "pods",
      "endpoints",
      "network volumes",
      "templates",
      "container registry auths",
      "billing",
    ].map((name) => ({ name })),
    security: [{ bearerAuth: [] }],
    components: { securitySchemes: { bearerAuth: { type: "http", scheme: "bearer" } } },
    paths,
  };
}
