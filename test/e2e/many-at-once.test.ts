/**
 * A first `up` of a larger stack on Pulumi's wire path (the program runner and the dynamic-provider
 * host), with --parallel above the stack's size: every independent create reaches ONE provider
 * process at once. Calls are counted at the service (every answered request, by route and GraphQL
 * field). One endpoint in the middle names a template that does not exist: the service refuses it,
 * and every other create must still complete and be in the state.
 */
import { randomBytes } from "node:crypto";
import { subscribe } from "node:diagnostics_channel";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, test } from "vitest";
import { LocalStack } from "../../engine/engine";
import { EngineError } from "../../engine/errors";
import { installProgram, packProject } from "../../engine/package";
import { type ServiceFixture, startServiceFixture } from "./support/service";

const FIXTURE = join(__dirname, "fixtures", "many");
const COUNT = 50;
const REFUSED = 23;

/** "METHOD route" or "GRAPHQL <field>" ("myself.<field>" under myself) of every answered request. */
const answered: string[] = [];

function keyOf(method: string, route: string, body: unknown): string {
  if (!route.endsWith("/graphql")) return `${method} ${route}`;
  const query = (body as { query?: unknown } | undefined)?.query;
  const fields = typeof query === "string" ? /\{\s*(\w+)[^{]*\{?\s*(\w+)?/.exec(query) : null;
  return `GRAPHQL ${fields?.[1] === "myself" ? `myself.${fields[2]}` : (fields?.[1] ?? "?")}`;
}

function tally(keys: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of keys) out[key] = (out[key] ?? 0) + 1;
  return out;
}

let svc: ServiceFixture;
let stack: LocalStack;
let workDir: string;

beforeAll(async () => {
  subscribe("fastify.initialization", (message) => {
    const { fastify } = message as { fastify: FastifyInstance };
    fastify.addHook("onResponse", async (request) => {
      answered.push(keyOf(request.method, request.routeOptions.url ?? "", request.body));
    });
  });
  const program = await installProgram(FIXTURE, await packProject());
  workDir = await mkdtemp(join(tmpdir(), "runpodkit-many-"));
  svc = await startServiceFixture();
  stack = await LocalStack.open({
    programDir: program.dir,
    stackName: "dev",
    stateDir: join(workDir, "state"),
    passphrase: randomBytes(12).toString("hex"),
    // Above the stack's size, as the CLI's default is for a stack this size on a large runner.
    parallel: 4 * COUNT,
  });
  stack.setAllConfig({
    ...svc.stackConfig(),
    count: { value: String(COUNT) },
    refused: { value: String(REFUSED) },
  });
}, 600_000);

afterAll(async () => {
  await svc?.close();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

test("a first up of 100 resources at once: one refused endpoint fails alone, named with its field; the other 99 are made and kept, within the call budget", {
  timeout: 600_000,
}, async () => {
  const from = answered.length;
  const failure = await stack.up().catch((error: unknown) => error);
  // The up's own calls, before the test's reads below.
  const calls = tally(answered.slice(from));
  expect(failure).toBeInstanceOf(EngineError);
  const message = String((failure as Error).message);
  expect(message).toContain(`endpoint-${REFUSED}`);
  expect(message).toContain("templateId: template nosuchtemplate not found");
  for (let i = 0; i < COUNT; i++) if (i !== REFUSED) expect(message).not.toContain(`::endpoint-${i}:`);

  // Every other resource was made once, and is in the state.
  const endpoints = await svc.graphql.listEndpoints();
  expect(endpoints).toHaveLength(COUNT - 1);
  const templates = await svc.rest.templates.list({ includeEndpointBoundTemplates: true });
  expect(templates).toHaveLength(COUNT);
  const state = await stack.state();
  const ids = (type: string) =>
    state.resources
      .filter((r) => r.type === `pulumi-nodejs:dynamic/runpodkit:${type}`)
      .map((r) => r.id)
      .sort();
  expect(ids("Endpoint")).toEqual(endpoints.map((e) => e.id).sort());
  expect(ids("Template")).toEqual(templates.map((t) => t.id).sort());

  // A create is one write; each kind asks the account once and lists the endpoints once (namesakes).
  expect(calls).toEqual({
    "POST /v1/templates": COUNT,
    "GRAPHQL saveEndpoint": COUNT,
    "GRAPHQL myself.id": 2,
    "GRAPHQL myself.endpoints": 1,
  });
});

test("a refresh of the 99 at once changes nothing, one read each", { timeout: 600_000 }, async () => {
  const from = answered.length;
  const refresh = await stack.refresh();
  const { "GRAPHQL myself.podTemplates": lists = 0, ...reads } = tally(answered.slice(from));
  expect(refresh.changes).toEqual({ same: 2 * COUNT - 1 });
  // One read each; the templates' GraphQL list of start fields is shared by the reads that overlap
  // (how many overlap is the engine's timing: 7 in a run where each read listing alone made 50).
  expect(reads).toEqual({ "GET /v1/templates/:templateId": COUNT, "GRAPHQL myself.endpoint": COUNT - 1 });
  expect(lists).toBeGreaterThanOrEqual(1);
  expect(lists).toBeLessThanOrEqual(COUNT);
});
