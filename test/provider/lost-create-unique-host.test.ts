import type { ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { secretForwarder } from "../../provider/secret";
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
} from "../helpers/pulumi-host";
import { type TestService, withService } from "../helpers/service";
import { type Hit, json, startScriptedServer } from "../sdk/scripted-server";

/**
 * Unique names (Template, Secret) after a create the provider cannot tell from a lost one, through
 * Pulumi's own provider host: two hosts (two stacks of the same project and stack names, in two
 * backends) on one service, the second behind a relay that refuses requests by rule before they
 * reach the service. A generated name is no proof that the resource found under it is this create's.
 */

type Rule = (hit: Hit) => number | undefined;

let service: TestService;
let rest: RestClient;
let graphql: GraphQLClient;
let relay: Awaited<ReturnType<typeof startScriptedServer>>;
let rule: Rule = () => undefined;
let direct: DynamicProviderHost;
let relayed: DynamicProviderHost;
let templateText: string;
let secretText: string;

async function forward(hit: Hit, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = { authorization: String(hit.headers.authorization ?? "") };
  if (hit.headers["content-type"]) headers["content-type"] = String(hit.headers["content-type"]);
  const reply = await fetch(`${new URL(service.restUrl).origin}${hit.url}`, {
    method: hit.method,
    headers,
    ...(hit.body === "" ? {} : { body: hit.body }),
  });
  res.writeHead(reply.status, { "content-type": reply.headers.get("content-type") ?? "application/json" });
  res.end(await reply.text());
}

beforeAll(async () => {
  service = await withService({ clock: new ManualClock() });
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
  graphql = new GraphQLClient({ apiKey: service.apiKey, baseUrl: service.graphqlUrl });
  relay = await startScriptedServer((hit, res) => {
    const status = rule(hit);
    if (status !== undefined) json(res, status, { message: "refused by the relay" });
    else forward(hit, res).catch(() => res.writeHead(502).end());
  });
  const swap = (url: string) => {
    const parsed = new URL(url);
    return `${relay.url}${parsed.pathname}${parsed.search}`;
  };
  [templateText, secretText] = await Promise.all([
    serializeProvider(templateForwarder),
    serializeProvider(secretForwarder),
  ]);
  [direct, relayed] = await Promise.all([startCheckoutHost(), startCheckoutHost()]);
  await direct.configure(stackConfig(service, service.apiKey));
  await relayed.configure(
    stackConfig(
      { restUrl: swap(service.restUrl), graphqlUrl: swap(service.graphqlUrl), queueUrl: service.queueUrl },
      service.apiKey,
    ),
  );
});

afterAll(async () => {
  await Promise.all([direct?.close(), relayed?.close()]);
  await relay?.close();
  await Promise.all([rest?.close(), graphql?.close()]);
  await service?.close();
});

/** `times` requests that `matches` are refused with `status`; the rest pass. */
function refuse(matches: (hit: Hit) => boolean, times: number, status: number): Rule {
  let left = times;
  return (hit) => {
    if (left <= 0 || !matches(hit)) return undefined;
    left--;
    return status;
  };
}

async function create(
  host: DynamicProviderHost,
  name: string,
  program: Record<string, unknown>,
  kind: { type: string; provider: string },
) {
  const urn = dynamicUrn(kind.type, name);
  const checked = await host.check(urn, {}, { ...program, __logicalName: name, __provider: kind.provider });
  expect(checked.failures).toEqual([]);
  return { urn, ...(await host.create(urn, checked.inputs)) };
}

describe("Unique names through Pulumi's provider host: a generated one is not proof", () => {
  test("a template create refused with 503 beside the other stack's template of its generated name takes a later generation, and leaves theirs alone", async () => {
    const kind = { type: "Template", provider: templateText };
    const theirs = await create(direct, "twintpl", { imageName: "img:1", env: { MODE: "theirs" } }, kind);
    rule = refuse((hit) => hit.method === "POST" && hit.url.startsWith("/v1/templates"), 1, 503);
    const ours = await create(relayed, "twintpl", { imageName: "img:2", env: { MODE: "ours" } }, kind);
    rule = () => undefined;
    expect(ours.id).not.toBe(theirs.id);
    expect(ours.properties.name).not.toBe(theirs.properties.name);
    expect(await rest.templates.get(theirs.id)).toMatchObject({
      imageName: "img:1",
      env: { MODE: "theirs" },
    });
    expect(await rest.templates.get(ours.id)).toMatchObject({ imageName: "img:2", env: { MODE: "ours" } });
  });

  test("a secret create refused with 503 beside the other stack's secret of its generated name fails naming it and adoptId", async () => {
    const kind = { type: "Secret", provider: secretText };
    const theirs = await create(direct, "twinsecret", { value: "theirs", description: "theirs" }, kind);
    rule = refuse((hit) => hit.body.includes("secretCreate"), 1, 503);
    const failure = await create(relayed, "twinsecret", { value: "ours", description: "ours" }, kind).catch(
      (error: unknown) => error,
    );
    rule = () => undefined;
    const message = String((failure as Error).message);
    expect(message).toContain(
      `one secret named "${String(theirs.properties.name)}" exists now (id ${theirs.id}). Its name is generated`,
    );
    expect(message).toContain(`adoptId (adoptId: "${theirs.id}")`);
    const secrets = (await graphql.listSecrets()).filter((s) => s.name.startsWith("twinsecret-"));
    expect(secrets.map((s) => [s.id, s.description])).toEqual([[theirs.id, "theirs"]]);
  });
});
