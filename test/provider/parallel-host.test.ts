import { subscribe } from "node:diagnostics_channel";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, test } from "vitest";
import { endpointForwarder } from "../../provider/endpoint";
import { templateForwarder } from "../../provider/template";
import { GraphQLClient } from "../../sdk/graphql";
import { RestClient } from "../../sdk/rest";
import { ManualClock } from "../../service/clock";
import {
  type DynamicProviderHost,
  dynamicUrn,
  serializeProvider,
  stackConfig,
  startCheckoutHost,
  startEngineLog,
} from "../helpers/pulumi-host";
import { type TestService, withService } from "../helpers/service";

/**
 * Many steps at once in ONE provider process, through Pulumi's own provider host: the CLI's default
 * --parallel lets a first `up` send every independent create of the program together. Calls are
 * counted at the service (every answered request, by route and GraphQL field, with its status).
 */

let service: TestService;
let rest: RestClient;
let graphql: GraphQLClient;
let host: DynamicProviderHost;
let engine: Awaited<ReturnType<typeof startEngineLog>>;
const text: Record<string, string> = {};
const answered: string[] = [];
/** While set, the first GraphQL list of templates waits for it before the service answers. */
let holdTemplateList: Promise<void> | undefined;

function keyOf(method: string, route: string, body: unknown, status: number): string {
  if (!route.endsWith("/graphql")) return `${method} ${route} ${status}`;
  const query = (body as { query?: unknown } | undefined)?.query;
  const fields = typeof query === "string" ? /\{\s*(\w+)[^{]*\{?\s*(\w+)?/.exec(query) : null;
  return `GRAPHQL ${fields?.[1] === "myself" ? `myself.${fields[2]}` : (fields?.[1] ?? "?")} ${status}`;
}

function tallySince(from: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of answered.slice(from)) out[key] = (out[key] ?? 0) + 1;
  return out;
}

beforeAll(async () => {
  subscribe("fastify.initialization", (message) => {
    const { fastify } = message as { fastify: FastifyInstance };
    fastify.addHook("preHandler", async (request) => {
      const held = holdTemplateList;
      if (held === undefined || !JSON.stringify(request.body ?? "").includes("podTemplates")) return;
      holdTemplateList = undefined;
      await held;
    });
    fastify.addHook("onResponse", async (request, reply) => {
      answered.push(keyOf(request.method, request.routeOptions.url ?? "", request.body, reply.statusCode));
    });
  });
  service = await withService({ clock: new ManualClock() });
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
  graphql = new GraphQLClient({ apiKey: service.apiKey, baseUrl: service.graphqlUrl });
  text.Endpoint = await serializeProvider(endpointForwarder);
  text.Template = await serializeProvider(templateForwarder);
  engine = await startEngineLog();
  host = await startCheckoutHost({ engineAddress: engine.address });
  await host.configure(stackConfig(service, service.apiKey));
});

afterAll(async () => {
  await host?.close();
  await engine?.close();
  await Promise.all([rest?.close(), graphql?.close()]);
  await service?.close();
});

async function checked(type: string, name: string, program: Record<string, unknown>, olds = {}) {
  const urn = dynamicUrn(type, name);
  const result = await host.check(urn, olds, { ...program, __logicalName: name, __provider: text[type] });
  expect(result.failures).toEqual([]);
  return { urn, inputs: result.inputs };
}

test("200 templates, then their 200 endpoints, created at once: one write each, one account and one namesake list per kind; one refused endpoint fails alone, naming itself and the field", async () => {
  const n = 200;
  const refused = 117;
  const names = Array.from({ length: n }, (_, i) => `w${i}`);
  let from = answered.length;
  const templates = await Promise.all(
    names.map(async (name) => {
      const step = await checked("Template", name, { imageName: "img:1", isServerless: true });
      return host.create(step.urn, step.inputs);
    }),
  );
  expect(tallySince(from)).toEqual({ "GRAPHQL myself.id 200": 1, "POST /v1/templates 200": n });
  from = answered.length;
  const results = await Promise.allSettled(
    names.map(async (name, i) => {
      const templateId = i === refused ? "nosuchtemplate" : templates[i]?.id;
      const step = await checked("Endpoint", name, { templateId, workersMax: 1 });
      return host.create(step.urn, step.inputs);
    }),
  );
  // The refused save answers 200 with a GraphQL error, as GraphQL does: no 4xx, no 5xx.
  expect(tallySince(from)).toEqual({
    "GRAPHQL myself.id 200": 1,
    "GRAPHQL myself.endpoints 200": 1,
    "GRAPHQL saveEndpoint 200": n,
  });
  const failed = results.flatMap((r, i) =>
    r.status === "rejected" ? [{ i, reason: String(r.reason) }] : [],
  );
  expect(failed.map((f) => f.i)).toEqual([refused]);
  expect(failed[0]?.reason).toMatch(
    new RegExp(
      `Endpoint::w${refused}: create endpoint w${refused}-[0-9a-f]{7}: .*templateId: template nosuchtemplate not found`,
    ),
  );
  expect(failed[0]?.reason).not.toContain(service.apiKey);
  const made = results.flatMap((r) => (r.status === "fulfilled" ? [r.value.id] : []));
  expect((await graphql.listEndpoints()).map((e) => e.id).sort()).toEqual(made.sort());
  // No leftover of any of these names existed: nothing to warn of.
  expect(engine.entries.filter((e) => e.severity === "warning")).toEqual([]);
});

test("40 named templates replaced at once while their endpoints move to the replacements: each old one renamed aside, then deleted; nothing fails", async () => {
  const n = 40;
  const names = Array.from({ length: n }, (_, i) => `r${i}`);
  const program = (name: string, category: string) => ({
    name: `tpl-${name}`,
    imageName: "img:1",
    isServerless: true,
    category,
  });
  const stacked = await Promise.all(
    names.map(async (name) => {
      const t = await checked("Template", name, program(name, "NVIDIA"));
      const tc = await host.create(t.urn, t.inputs);
      const e = await checked("Endpoint", name, { templateId: tc.id, workersMax: 1 });
      const ec = await host.create(e.urn, e.inputs);
      return { name, t, tc, e, ec };
    }),
  );
  const from = answered.length;
  // As Pulumi's engine steps a create-before-delete replacement: diff, create, the dependents'
  // updates, and the old one's delete at the end; every resource's steps at once.
  const replaced = await Promise.all(
    stacked.map(async ({ name, t, tc, e, ec }) => {
      const again = await checked("Template", name, program(name, "CPU"), t.inputs);
      const diff = await host.diff(t.urn, tc.id, tc.properties, again.inputs, t.inputs);
      expect(diff.replaces).toEqual(["category"]);
      const fresh = await checked("Template", name, program(name, "CPU"));
      const made = await host.create(t.urn, fresh.inputs);
      const moved = await checked("Endpoint", name, { ...e.inputs, templateId: made.id }, e.inputs);
      await host.update(e.urn, ec.id, ec.properties, moved.inputs, e.inputs);
      return { old: tc, made, urn: t.urn };
    }),
  );
  await Promise.all(replaced.map(({ old, urn }) => host.delete(urn, old.id, old.properties)));
  const templates = await rest.templates.list({ includeEndpointBoundTemplates: true });
  const ours = templates.filter((t) => t.name.startsWith("tpl-r"));
  expect(ours.map((t) => t.id).sort()).toEqual(replaced.map((r) => r.made.id).sort());
  expect(ours.map((t) => t.name).sort()).toEqual(names.map((name) => `tpl-${name}`).sort());
  for (const { made } of replaced) expect(made.properties.category).toBe("CPU");
  const calls = tallySince(from);
  expect(Object.keys(calls).filter((key) => !/ 20[04]$/.test(key))).toEqual([]);
  expect(calls["PATCH /v1/templates/:templateId 200"]).toBe(n);
  expect(calls["POST /v1/templates 200"]).toBe(n);
  expect(calls["DELETE /v1/templates/:templateId 204"]).toBe(n);
  expect(calls["GRAPHQL saveEndpoint 200"]).toBe(n);
});

test("200 templates refreshed at once share the GraphQL list of start fields: each read waits for a list sent after it asked, not one list each", async () => {
  const n = 200;
  const made = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const step = await checked("Template", `f${i}`, {
        imageName: "img:1",
        isServerless: true,
        startSsh: true,
      });
      return { urn: step.urn, ...(await host.create(step.urn, step.inputs)) };
    }),
  );
  const from = answered.length;
  const gets = () => answered.slice(from).filter((key) => key === "GET /v1/templates/:templateId 200").length;
  // The first read's list is held until every read has had its REST answer (and so asks for a list).
  let release: () => void = () => undefined;
  holdTemplateList = new Promise<void>((resolve) => {
    release = resolve;
  });
  const everyGet = (async () => {
    while (gets() < n) await new Promise((resolve) => setImmediate(resolve));
    release();
  })();
  const reads = await Promise.all(made.map((m) => host.read(m.urn, m.id, m.properties)));
  await everyGet;
  expect(reads.map((r) => r.id)).toEqual(made.map((m) => m.id));
  for (const r of reads) expect(r.properties.startSsh).toBe(true);
  // The held list, then one more for the 199 reads that asked while it was under way.
  expect(tallySince(from)).toEqual({
    "GET /v1/templates/:templateId 200": n,
    "GRAPHQL myself.podTemplates 200": 2,
  });
});
