import type { ServerResponse } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { CREATE_MARK, endpointForwarder } from "../../provider/endpoint";
import { networkVolumeForwarder } from "../../provider/network-volume";
import { podForwarder } from "../../provider/pod";
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
import { type Hit, json, sendOn, startScriptedServer } from "../sdk/scripted-server";

/**
 * Faults of a busy or failing service, through Pulumi's own provider host: two hosts (two stacks of
 * the same project and stack names, in two backends, so the same generated names) on one service, the
 * second behind a relay that, by rule, refuses a request before it reaches the service (a status) or
 * forwards it and then answers `lose` (the service acted, the answer was lost).
 */

type Verdict = number | { lose: number };
type Rule = (hit: Hit) => Verdict | undefined;

let service: TestService;
let rest: RestClient;
let graphql: GraphQLClient;
let relay: Awaited<ReturnType<typeof startScriptedServer>>;
let rule: Rule = () => undefined;
let direct: DynamicProviderHost;
let relayed: DynamicProviderHost;
const text: Record<string, string> = {};
let templateId: string;

async function forward(hit: Hit, res: ServerResponse, lose?: number): Promise<void> {
  const reply = await sendOn(new URL(service.restUrl).origin, hit);
  const body = await reply.text();
  if (lose !== undefined) {
    json(res, lose, { message: "upstream request timeout" });
    return;
  }
  res.writeHead(reply.status, { "content-type": reply.headers.get("content-type") ?? "application/json" });
  res.end(body);
}

beforeAll(async () => {
  service = await withService({ clock: new ManualClock() });
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
  graphql = new GraphQLClient({ apiKey: service.apiKey, baseUrl: service.graphqlUrl });
  relay = await startScriptedServer((hit, res) => {
    const verdict = rule(hit);
    if (typeof verdict === "number") json(res, verdict, { message: "refused by the relay" });
    else forward(hit, res, verdict?.lose).catch(() => res.writeHead(502).end());
  });
  const swap = (url: string) => {
    const parsed = new URL(url);
    return `${relay.url}${parsed.pathname}${parsed.search}`;
  };
  text.Endpoint = await serializeProvider(endpointForwarder);
  text.Pod = await serializeProvider(podForwarder);
  text.NetworkVolume = await serializeProvider(networkVolumeForwarder);
  text.Template = await serializeProvider(templateForwarder);
  text.Secret = await serializeProvider(secretForwarder);
  [direct, relayed] = await Promise.all([startCheckoutHost(), startCheckoutHost()]);
  await direct.configure(stackConfig(service, service.apiKey));
  await relayed.configure(
    stackConfig(
      { restUrl: swap(service.restUrl), graphqlUrl: swap(service.graphqlUrl), queueUrl: service.queueUrl },
      service.apiKey,
    ),
  );
  templateId = (await rest.templates.create({ name: "worker", imageName: "img:1", isServerless: true })).id;
});

afterEach(() => {
  rule = () => undefined;
});

afterAll(async () => {
  await Promise.all([direct?.close(), relayed?.close()]);
  await relay?.close();
  await Promise.all([rest?.close(), graphql?.close()]);
  await service?.close();
});

/** `times` requests that `matches` get `verdict` (a status: refused; `lose`: done, answer lost); the rest pass. */
function onMatching(matches: (hit: Hit) => boolean, times: number, verdict: Verdict): Rule {
  let left = times;
  return (hit) => {
    if (left <= 0 || !matches(hit)) return undefined;
    left--;
    return verdict;
  };
}

const isPost = (path: string) => (hit: Hit) => hit.method === "POST" && hit.url.split("?")[0] === path;

async function create(
  host: DynamicProviderHost,
  type: "Endpoint" | "Pod" | "NetworkVolume" | "Template" | "Secret",
  name: string,
  program: Record<string, unknown>,
) {
  const urn = dynamicUrn(type, name);
  const checked = await host.check(urn, {}, { ...program, __logicalName: name, __provider: text[type] });
  expect(checked.failures).toEqual([]);
  return { urn, ...(await host.create(urn, checked.inputs)) };
}

describe("Endpoint through Pulumi's provider host, the service failing by rule", () => {
  test("a create refused with 503 (an answer the provider cannot tell from a lost one) does not take over the other stack's endpoint of its generated name", async () => {
    const theirs = await create(direct, "Endpoint", "twin", { templateId, workersMax: 1 });
    rule = onMatching((hit) => hit.body.includes("saveEndpoint"), 1, 503);
    const ours = await create(relayed, "Endpoint", "twin", { templateId, workersMax: 3 });
    expect(ours.properties.name).toBe(theirs.properties.name);
    expect(ours.id).not.toBe(theirs.id);
    expect(await graphql.getEndpoint(theirs.id)).toMatchObject({ workersMax: 1 });
    expect(await graphql.getEndpoint(ours.id)).toMatchObject({ workersMax: 3 });
  });

  test("a delete whose REST GPU types put-back is refused, then the delete too, leaves the endpoint with its workers and its GPU types", async () => {
    const made = await create(relayed, "Endpoint", "gpus", { templateId, workersMin: 1, workersMax: 2 });
    await rest.endpoints.update(made.id, { gpuTypeIds: ["NVIDIA B200"] });
    const patch = onMatching((hit) => hit.method === "PATCH" && hit.url.includes(made.id), 1, 401);
    const deletes = onMatching((hit) => hit.body.includes("deleteEndpoint"), 1_000, 401);
    rule = (hit) => patch(hit) ?? deletes(hit);
    const failure = await relayed.delete(made.urn, made.id, made.properties).catch((error: unknown) => error);
    rule = () => undefined;
    expect(String((failure as Error).message)).toContain(
      'its worker counts (workersMin 1, workersMax 2) and its GPU types set through REST (gpuTypeIds ["NVIDIA B200"]) were put back, so it serves as before',
    );
    expect(await rest.endpoints.get(made.id)).toMatchObject({
      workersMin: 1,
      workersMax: 2,
      gpuTypeIds: ["NVIDIA B200"],
    });
  });
});

describe("Pod through Pulumi's provider host: its create mark tells its own pod from the other stack's", () => {
  const POD = { imageName: "runpod/pytorch:2.4", gpuTypeIds: ["NVIDIA GeForce RTX 4090"], gpuCount: 1 };
  const podsNamed = async (name: unknown) =>
    (await rest.pods.list())
      .filter((p) => p.name === name)
      .map((p) => p.id)
      .sort();

  test("a create carried out whose answer was lost takes over its own pod (the one with its mark), not the other stack's; none is made twice", async () => {
    const theirs = await create(direct, "Pod", "twinpod", POD);
    rule = onMatching(isPost("/v1/pods"), 1, { lose: 503 });
    const ours = await create(relayed, "Pod", "twinpod", { ...POD, env: { MODE: "ours" } });
    expect(ours.properties.name).toBe(theirs.properties.name);
    expect(ours.id).not.toBe(theirs.id);
    // One each: the lost create was not sent again.
    expect(await podsNamed(theirs.properties.name)).toEqual([ours.id, theirs.id].sort());
    const [mine, other] = [(await rest.pods.get(ours.id)).env, (await rest.pods.get(theirs.id)).env];
    expect(mine).toEqual({ MODE: "ours", [CREATE_MARK]: expect.any(String) });
    expect(other).toEqual({ [CREATE_MARK]: expect.any(String) });
    expect(mine?.[CREATE_MARK]).not.toBe(other?.[CREATE_MARK]);
    // The mark stays out of the outputs, so state shows only the program's env.
    expect(ours.properties.env).toEqual({ MODE: "ours" });
  });

  test("a create refused before the service acted does not take over the other stack's pod of its name (without this create's mark): it is sent again", async () => {
    const theirs = await create(direct, "Pod", "otherpod", POD);
    rule = onMatching(isPost("/v1/pods"), 1, 503);
    const ours = await create(relayed, "Pod", "otherpod", { ...POD, env: { MODE: "ours" } });
    expect(ours.properties.name).toBe(theirs.properties.name);
    expect(ours.id).not.toBe(theirs.id);
    expect(await podsNamed(theirs.properties.name)).toEqual([ours.id, theirs.id].sort());
    // The other stack's pod was left as it was: no env of this program written over it.
    expect((await rest.pods.get(theirs.id)).env).toEqual({ [CREATE_MARK]: expect.any(String) });
    expect((await rest.pods.get(ours.id)).env).toMatchObject({ MODE: "ours" });
  });

  test("a lost create beside a pod of its name that carries no mark at all (as an older release made them) does not take that one over", async () => {
    const urn = dynamicUrn("Pod", "oldpod");
    const checked = await relayed.check(urn, {}, { ...POD, __logicalName: "oldpod", __provider: text.Pod });
    const name = String(checked.inputs.name);
    const older = await rest.pods.create({ ...POD, gpuTypeIds: ["NVIDIA GeForce RTX 4090"], name });
    rule = onMatching(isPost("/v1/pods"), 1, { lose: 503 });
    const ours = await relayed.create(urn, checked.inputs);
    expect(ours.id).not.toBe(older.id);
    expect(await podsNamed(name)).toEqual([ours.id, older.id].sort());
    expect((await rest.pods.get(older.id)).env ?? {}).toEqual({});
  });
});

describe("NetworkVolume through Pulumi's provider host: no field for a mark, so a lost create takes nothing over", () => {
  const VOLUME = { size: 10, dataCenterId: "EU-RO-1" };
  const volumesNamed = async (name: unknown) =>
    (await rest.networkVolumes.list())
      .filter((v) => v.name === name)
      .map((v) => v.id)
      .sort();

  test("beside the other stack's volume of its generated name, the error names it and adoptId; it is left as it was and none is made", async () => {
    const theirs = await create(direct, "NetworkVolume", "twinvol", VOLUME);
    rule = onMatching(isPost("/v1/networkvolumes"), 1, 503);
    const failure = await create(relayed, "NetworkVolume", "twinvol", { ...VOLUME, size: 20 }).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(Error);
    const message = String((failure as Error).message);
    expect(message).toContain(
      `the service may have created the network volume all the same: one network volume named "${String(theirs.properties.name)}" exists now (id ${theirs.id}). Its name is generated`,
    );
    expect(message).toContain("nothing is taken over nor created again");
    expect(message).toContain(`take it over with adoptId (adoptId: "${theirs.id}") and run up again`);
    expect(message).not.toContain(service.apiKey);
    expect(await volumesNamed(theirs.properties.name)).toEqual([theirs.id]);
    expect(await rest.networkVolumes.get(theirs.id)).toMatchObject({ size: 10 });
  });

  test("when the lost create was carried out too, the error names both volumes of the name and is not sent again", async () => {
    const theirs = await create(direct, "NetworkVolume", "bothvol", VOLUME);
    rule = onMatching(isPost("/v1/networkvolumes"), 1, { lose: 503 });
    const failure = await create(relayed, "NetworkVolume", "bothvol", { ...VOLUME, size: 20 }).catch(
      (error: unknown) => error,
    );
    const found = await volumesNamed(theirs.properties.name);
    expect(found).toHaveLength(2);
    const made = found.find((id) => id !== theirs.id) ?? "";
    expect(await rest.networkVolumes.get(made)).toMatchObject({ size: 20 });
    const message = String((failure as Error).message);
    // Both named, in the service's list order.
    const named = message.match(/2 network volumes named "([^"]+)" exist now \(id ([^)]+)\)/);
    expect(named?.[1]).toBe(theirs.properties.name);
    expect(named?.[2]?.split(", ").sort()).toEqual(found);
    expect(message).toContain("whether one is this create's cannot be told");
    // No one id offered: the first listed may be the other stack's.
    expect(message).toContain(`take that one over with adoptId set to its id (one of ${named?.[2]})`);
    expect(message).not.toMatch(/adoptId: "/);
    expect(await rest.networkVolumes.get(theirs.id)).toMatchObject({ size: 10 });
  });
});

describe("Unique names through Pulumi's provider host: a generated one is not proof", () => {
  test("a template create refused with 503 beside the other stack's template of its generated name takes a later generation, and leaves theirs alone", async () => {
    const theirs = await create(direct, "Template", "twintpl", {
      imageName: "img:1",
      env: { MODE: "theirs" },
    });
    rule = onMatching((hit) => hit.method === "POST" && hit.url.startsWith("/v1/templates"), 1, 503);
    const ours = await create(relayed, "Template", "twintpl", { imageName: "img:2", env: { MODE: "ours" } });
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
    const theirs = await create(direct, "Secret", "twinsecret", { value: "theirs", description: "theirs" });
    rule = onMatching((hit) => hit.body.includes("secretCreate"), 1, 503);
    const failure = await create(relayed, "Secret", "twinsecret", {
      value: "ours",
      description: "ours",
    }).catch((error: unknown) => error);
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
