import type { FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import { parseManagementInput, parseQuery } from "../../edge/parse";
import { asField, invalid } from "../../errors";
import type { Management } from "../index";

type Method = "GET" | "POST" | "PATCH" | "DELETE";
type Parsed<S> = S extends z.ZodType ? z.infer<S> : undefined;

/** What a route declares: enough to register it, validate it and describe it in openapi.json. */
export interface RouteSpec {
  method: Method;
  /** Fastify form, e.g. "/endpoints/:endpointId". */
  url: string;
  operationId: string;
  tag: string;
  summary: string;
  body?: z.ZodType;
  query?: z.ZodType;
  response?: z.ZodType;
  /** 204 answers no body. */
  status?: 200 | 204;
}

export interface RouteContext<B, Q> {
  management: Management;
  accountId: string;
  params: Record<string, string>;
  body: B;
  query: Q;
}

export interface RestRoute {
  spec: RouteSpec;
  /**
   * Answers one request to this route, already authenticated as `accountId` (rest/index.ts registers
   * the route with its bearer check): parse the body and query (zod), call the handler, send the reply.
   */
  serve(
    request: FastifyRequest,
    reply: FastifyReply,
    management: Management,
    accountId: string,
  ): FastifyReply;
}

/**
 * A REST route: parse (zod), call the handler (one domain call and the reply's shape). The same spec
 * feeds openapi.json, so the document cannot drift from what is validated.
 */
export function route<const S extends RouteSpec>(
  spec: S,
  handle: (ctx: RouteContext<Parsed<S["body"]>, Parsed<S["query"]>>) => unknown,
): RestRoute {
  // The path's id parameter (`:endpointId`) names an unknown id in the 404.
  const idParameter = /\/:(\w+)/.exec(spec.url)?.[1] ?? "id";
  return {
    spec,
    serve(request, reply, management, accountId) {
      const ctx = {
        management,
        accountId,
        params: request.params as Record<string, string>,
        body: (spec.body ? parseManagementInput(spec.body, request.body, "body") : undefined) as Parsed<
          S["body"]
        >,
        query: (spec.query ? parseQuery(spec.query, request.query, "query") : undefined) as Parsed<
          S["query"]
        >,
      };
      const result = asField(idParameter, () => handle(ctx));
      if (spec.status === 204) return reply.code(204).send();
      return reply.code(200).send(result);
    },
  };
}

/**
 * An update, as the real service takes it: PATCH <url> and POST <url>/update, same body and reply.
 * `createOnly` names the fields only a create takes: one in an update is refused as not updatable
 * (the body's strict schema would call it an "Unrecognized key", as if the field did not exist).
 */
export function updateRoutes<const S extends Omit<RouteSpec, "method" | "url">>(
  url: string,
  spec: S,
  handle: (ctx: RouteContext<Parsed<S["body"]>, Parsed<S["query"]>>) => unknown,
  createOnly: { fields: readonly string[]; fix: string } = { fields: [], fix: "" },
): RestRoute[] {
  const routes = [
    route({ ...spec, method: "PATCH", url }, handle),
    route({ ...spec, method: "POST", url: `${url}/update` }, handle),
  ];
  if (createOnly.fields.length === 0) return routes;
  const fixed = new Set(createOnly.fields);
  return routes.map((r) => ({
    spec: r.spec,
    serve(request, reply, management, accountId) {
      const body: unknown = request.body;
      if (body !== null && typeof body === "object" && !Array.isArray(body)) {
        const field = Object.keys(body).find((key) => fixed.has(key));
        if (field !== undefined) throw invalid(field, `is not updatable; ${createOnly.fix}`);
      }
      return r.serve(request, reply, management, accountId);
    },
  }));
}
