import type { FastifyInstance, FastifyRequest } from "fastify";
import type { z } from "zod";
import { parseInput } from "../../edge/parse";
import type { Management, ManagementWireDeps } from "../index";

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
  /** No bearer key needed (docs). */
  public?: boolean;
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
  register(app: FastifyInstance, deps: ManagementWireDeps): void;
}

/**
 * A REST route: authenticate, parse (zod), call the handler (one domain call and the reply's shape).
 * The same spec feeds openapi.json, so the document cannot drift from what is validated.
 */
export function route<const S extends RouteSpec>(
  spec: S,
  handle: (ctx: RouteContext<Parsed<S["body"]>, Parsed<S["query"]>>) => unknown,
): RestRoute {
  return {
    spec,
    register(app, deps) {
      // Authenticated in onRequest, before the body is read: a bad key costs no parsing.
      const accounts = new WeakMap<FastifyRequest, string>();
      app.route({
        method: spec.method,
        url: spec.url,
        bodyLimit: deps.bodyLimit,
        onRequest: async (request) => {
          if (!spec.public) accounts.set(request, deps.accounts.authenticate(request.headers.authorization));
        },
        handler: async (request, reply) => {
          const ctx = {
            management: deps.management,
            accountId: accounts.get(request) ?? "",
            params: request.params as Record<string, string>,
            body: (spec.body ? parseInput(spec.body, request.body, "body") : undefined) as Parsed<S["body"]>,
            query: (spec.query ? parseInput(spec.query, request.query, "query") : undefined) as Parsed<
              S["query"]
            >,
          };
          const result = handle(ctx);
          if (spec.status === 204) return reply.code(204).send();
          return reply.code(200).send(result);
        },
      });
    },
  };
}

/** An update, as the real service takes it: PATCH <url> and POST <url>/update, same body and reply. */
export function updateRoutes<const S extends Omit<RouteSpec, "method" | "url">>(
  url: string,
  spec: S,
  handle: (ctx: RouteContext<Parsed<S["body"]>, Parsed<S["query"]>>) => unknown,
): RestRoute[] {
  return [
    route({ ...spec, method: "PATCH", url }, handle),
    route({ ...spec, method: "POST", url: `${url}/update` }, handle),
  ];
}
