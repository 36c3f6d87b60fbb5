import type { ServerResponse } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { ACCOUNT } from "../../provider/bookkeeping";
import { createManagementApi } from "../../provider/clients";
import type { ProviderSettings } from "../../provider/config";
import { createContainerRegistryAuthProvider } from "../../provider/container-registry-auth";
import type { ProviderContext } from "../../provider/context";
import { CREATE_MARK, createEndpointProvider, endpointSpec } from "../../provider/endpoint";
import { createNetworkVolumeProvider } from "../../provider/network-volume";
import { createPodProvider } from "../../provider/pod";
import { createSecretProvider } from "../../provider/secret";
import { createTemplateProvider } from "../../provider/template";
import { holdPort } from "../helpers/tcp-relay";
import { type Hit, json, sendOn, startScriptedServer } from "../sdk/scripted-server";
import { checkAndCreate, generatedNameOf, type Harness, startHarness } from "./support";

/**
 * The provider against a busy service: the local service behind a relay that, by rule, refuses a
 * request before it reaches the service (429, 503: nothing done) or forwards it and then answers 503
 * (the service acted, the answer was lost, as behind a gateway that timed out). Waits are virtual.
 */

type Rule = (hit: Hit) =>
  | { refuse: number; retryAfter?: string }
  | { lose: number; meanwhile?: () => Promise<unknown> }
  // The connection breaks: before the request reaches the service, or after it acted.
  | { cut: "before" | "after" }
  | undefined;

let h: Harness;
let rule: Rule = () => undefined;
let relay: Awaited<ReturnType<typeof startScriptedServer>>;
let context: ProviderContext;

async function forward(
  hit: Hit,
  res: ServerResponse,
  loseWith?: number | "cut",
  meanwhile?: () => Promise<unknown>,
): Promise<void> {
  const origin = new URL(h.settings.restUrl).origin;
  const reply = await sendOn(origin, hit);
  const text = await reply.text();
  await meanwhile?.();
  if (loseWith === "cut") {
    res.socket?.destroy();
    return;
  }
  if (loseWith !== undefined) {
    json(res, loseWith, { message: "upstream request timeout" });
    return;
  }
  res.writeHead(reply.status, { "content-type": reply.headers.get("content-type") ?? "application/json" });
  res.end(text);
}

beforeAll(async () => {
  h = await startHarness({ deleteTimeoutMs: 120_000 });
  relay = await startScriptedServer((hit, res) => {
    const verdict = rule(hit);
    if (verdict !== undefined && "refuse" in verdict) {
      json(
        res,
        verdict.refuse,
        { message: "too many requests" },
        verdict.retryAfter ? { "retry-after": verdict.retryAfter } : {},
      );
      return;
    }
    if (verdict !== undefined && "cut" in verdict && verdict.cut === "before") {
      res.socket?.destroy();
      return;
    }
    if (verdict !== undefined && "cut" in verdict) {
      forward(hit, res, "cut").catch(() => res.writeHead(502).end());
      return;
    }
    forward(hit, res, verdict?.lose, verdict?.meanwhile).catch(() => res.writeHead(502).end());
  });
  const swap = (url: string) => {
    const parsed = new URL(url);
    return `${relay.url}${parsed.pathname}${parsed.search}`;
  };
  const settings: ProviderSettings = {
    ...h.settings,
    restUrl: swap(h.settings.restUrl),
    graphqlUrl: swap(h.settings.graphqlUrl),
  };
  const api = createManagementApi(settings);
  context = { settings: () => settings, api: () => api, pause: h.pause };
});

afterEach(() => {
  rule = () => undefined;
  h.pause.slept.length = 0;
});

afterAll(async () => {
  await relay?.close();
  await h?.close();
});

/** `times` requests whose body mentions `operation` get the verdict; the rest pass. */
function onOperation(operation: string, times: number, verdict: ReturnType<Rule>): Rule {
  let left = times;
  return (hit) => {
    if (left <= 0 || !hit.body.includes(operation)) return undefined;
    left--;
    return verdict;
  };
}

async function template(): Promise<string> {
  const created = await h.rest.templates.create({
    name: `tpl-${Math.random().toString(36).slice(2, 10)}`,
    imageName: "runpodkit/echo:1.0",
    isServerless: true,
  });
  return created.id;
}

async function endpointsNamed(name: unknown): Promise<string[]> {
  return (await h.graphql.listEndpoints()).filter((e) => e.name === name).map((e) => e.id);
}

describe("Endpoint against a busy service", () => {
  test("a create refused with 429 is sent again after the Retry-After, and makes one endpoint", async () => {
    const templateId = await template();
    rule = onOperation("saveEndpoint", 2, { refuse: 429, retryAfter: "7" });
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "busy429", { templateId });
    expect(h.pause.slept).toEqual([7_000, 7_000]);
    expect(await endpointsNamed(made.outs.name)).toEqual([made.id]);
    expect(made.outs.templateId).toBe(templateId);
  });

  test("a create the service carried out but whose answer was lost (503) is found by its generated name, not made twice", async () => {
    const templateId = await template();
    rule = onOperation("saveEndpoint", 1, { lose: 503 });
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "lost", { templateId, workersMax: 2 });
    expect(await endpointsNamed(made.outs.name)).toEqual([made.id]);
    expect(made.outs).toMatchObject({ templateId, workersMax: 2, name: made.outs.name });
    expect(h.pause.slept).toEqual([]);
  });

  test("two stacks of the same project and stack names (two backends, one account): a lost create does not take over the other stack's endpoint", async () => {
    const templateId = await template();
    const program = { __scope: "shop/prod", templateId, workersMax: 1 };
    // The other backend's stack: its own provider process, the same project, stack and resource names.
    const theirs = await checkAndCreate(createEndpointProvider(context), "twinstack", program);
    // This stack's create is refused before it reaches the service (a 503: nothing made, which
    // the provider cannot tell from a lost answer), so it looks for one made all the same.
    rule = onOperation("saveEndpoint", 1, { refuse: 503 });
    const ours = await checkAndCreate(createEndpointProvider(context), "twinstack", {
      ...program,
      workersMax: 3,
    });
    expect(ours.outs.name).toBe(theirs.outs.name);
    expect(ours.id).not.toBe(theirs.id);
    expect((await endpointsNamed(theirs.outs.name)).sort()).toEqual([ours.id, theirs.id].sort());
    // The other stack's endpoint is untouched; this one has this program's configuration.
    expect(await h.graphql.getEndpoint(theirs.id)).toMatchObject({ workersMax: 1 });
    expect(await h.graphql.getEndpoint(ours.id)).toMatchObject({ workersMax: 3 });
    expect(ours.outs).toMatchObject({ workersMax: 3, env: {} });
  });

  test("beside the other stack's endpoint of the same generated name, a create carried out whose answer was lost takes over its own", async () => {
    const templateId = await template();
    const program = { __scope: "shop/staging", templateId, workersMax: 1 };
    const theirs = await checkAndCreate(createEndpointProvider(context), "twinlost", program);
    rule = onOperation("saveEndpoint", 1, { lose: 503 });
    const ours = await checkAndCreate(createEndpointProvider(context), "twinlost", {
      ...program,
      workersMax: 2,
      env: { MODE: "a" },
    });
    expect(ours.id).not.toBe(theirs.id);
    // One each: the lost create was not sent again.
    expect((await endpointsNamed(theirs.outs.name)).sort()).toEqual([ours.id, theirs.id].sort());
    expect(await h.graphql.getEndpoint(theirs.id)).toMatchObject({ workersMax: 1 });
    expect(ours.outs).toMatchObject({ workersMax: 2, env: { MODE: "a" } });
    // The mark stays on the endpoint as a key set elsewhere would, outside the outputs.
    const env = (await h.graphql.getEndpoint(ours.id))?.env.map(({ key }) => key);
    expect(env?.sort()).toEqual(["MODE", CREATE_MARK]);
  });

  test("a lost create whose env had no room for the mark takes nothing over: the error says why and names adoptId", async () => {
    const templateId = await template();
    // 47 bytes short of ENV_LIMITS.totalBytes: no room for the mark's 59.
    const env = { A: "a".repeat(126 * 1_024), B: "b".repeat(126 * 1_024), C: "c".repeat(4_040) };
    rule = onOperation("saveEndpoint", 1, { lose: 503 });
    const failure = await checkAndCreate(createEndpointProvider(context), "fulllost", {
      templateId,
      env,
    }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "SERVICE", field: "name" });
    const message = String((failure as Error).message);
    expect(message).toContain("this create carried no mark (the endpoint's env had no room for one)");
    const name = /named "(fulllost-[0-9a-f]{7})"/.exec(message)?.[1];
    // The one endpoint the lost create made, not taken over and not made twice.
    const made = await endpointsNamed(name);
    expect(made).toHaveLength(1);
    expect(message).toContain(`take it over with adoptId (adoptId: "${made[0]}")`);
  });

  test("a create the service answers costs one call: nothing is listed before it", async () => {
    const templateId = await template();
    // The key's account is asked once per provider process (the owner each resource records).
    await context.api(context.settings()).accountId();
    const seen: string[] = [];
    rule = (hit) => {
      seen.push(
        hit.body.includes("saveEndpoint")
          ? "saveEndpoint"
          : hit.body.includes("endpoints")
            ? "list"
            : hit.url,
      );
      return undefined;
    };
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "quiet", { templateId, workersMax: 1 });
    expect(await endpointsNamed(made.outs.name)).toEqual([made.id]);
    expect(seen).toEqual(["saveEndpoint"]);
  });

  test("a service that will not say whose the key is (myself refused) still gets the create; the endpoint records no owner", async () => {
    const templateId = await template();
    rule = (hit) => (hit.body.includes("myself") ? { refuse: 403 } : undefined);
    const settings = context.settings();
    const fresh = createManagementApi(settings);
    const provider = createEndpointProvider({ settings: () => settings, api: () => fresh, pause: h.pause });
    const made = await checkAndCreate(provider, "ownerless", { templateId, workersMax: 1 });
    expect(await endpointsNamed(made.outs.name)).toEqual([made.id]);
    expect(made.outs).not.toHaveProperty(ACCOUNT);
    // Once the service says, an update records it.
    rule = () => undefined;
    const updated = await provider.update(made.id, made.outs, { ...made.inputs, workersMax: 2 });
    expect(updated.outs?.[ACCOUNT]).toBe(await fresh.accountId());
    expect((await h.graphql.getEndpoint(made.id))?.workersMax).toBe(2);
  });

  test("creates at once while the service refuses myself (429) past the SDK's retries: each waits it out and records the owner, one myself per attempt", async () => {
    const templateId = await template();
    // Past the SDK's own retries (4 attempts) of the one myself all the creates share.
    let refusedMyself = 0;
    let askedMyself = 0;
    rule = (hit) => {
      if (!hit.body.includes("myself { id }")) return undefined;
      askedMyself++;
      if (refusedMyself >= 4) return undefined;
      refusedMyself++;
      return { refuse: 429 };
    };
    const settings = context.settings();
    const fresh = createManagementApi(settings);
    const provider = createEndpointProvider({ settings: () => settings, api: () => fresh, pause: h.pause });
    const made = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        checkAndCreate(provider, `owned${i}`, { templateId, workersMax: 1 }),
      ),
    );
    const account = await h.graphql.accountId();
    expect(made.map((m) => m.outs[ACCOUNT])).toEqual(made.map(() => account));
    // Four refused (one call), then one answered: shared by all twenty creates.
    expect(askedMyself).toBe(5);
    for (const m of made) expect(await endpointsNamed(m.outs.name)).toEqual([m.id]);
  });

  test("myself refused past customTimeouts.create: the create fails within that one bound and sends nothing", async () => {
    const templateId = await template();
    const saves: string[] = [];
    rule = (hit) => {
      if (hit.body.includes("saveEndpoint")) saves.push(hit.body);
      return hit.body.includes("myself { id }") ? { refuse: 429, retryAfter: "0" } : undefined;
    };
    const settings = context.settings();
    const fresh = createManagementApi(settings);
    const provider = createEndpointProvider({ settings: () => settings, api: () => fresh, pause: h.pause });
    const checked = await provider.check(
      {},
      { __logicalName: "nobody", templateId, __customTimeouts: { create: "3s" } },
    );
    const failure = await provider.create(checked.inputs).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "TIMEOUT", operation: `create endpoint ${checked.inputs.name}` });
    expect(String((failure as Error).message)).toMatch(
      /within the bound of 3s: .*HTTP 429.*customTimeouts\.create/,
    );
    expect(h.pause.slept.reduce((a, b) => a + b, 0)).toBe(3_000);
    expect(saves).toEqual([]);
    expect(await endpointsNamed(checked.inputs.name)).toEqual([]);
  });

  test("a namesake list refused past the SDK's retries is asked again by a later create, which warns of its leftover", async () => {
    const templateId = await template();
    const warnings: string[] = [];
    const settings = context.settings();
    const fresh = createManagementApi(settings);
    const provider = createEndpointProvider({
      settings: () => settings,
      api: () => fresh,
      pause: h.pause,
      warn: (message) => {
        warnings.push(message);
      },
    });
    // The first create's list meets a busy service past the SDK's own retries (4 attempts).
    rule = onOperation("myself { endpoints", 4, { refuse: 429, retryAfter: "0" });
    const first = await checkAndCreate(provider, "early", { templateId, workersMax: 1 });
    expect(await endpointsNamed(first.outs.name)).toEqual([first.id]);
    expect(warnings).toEqual([]);
    // A later create of the same up, beside a leftover of its generated name.
    const program = { templateId, workersMax: 1 };
    const name = generatedNameOf(endpointSpec, "late", program);
    const leftover = await h.graphql.saveEndpoint({ name, templateId, gpuIds: "AMPERE_16" });
    const made = await checkAndCreate(provider, "late", program);
    expect(made.id).not.toBe(leftover.id);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`already exists in the account (id ${leftover.id})`);
  });

  test("a 503 before the service acted is sent again: one endpoint", async () => {
    const templateId = await template();
    rule = onOperation("saveEndpoint", 1, { refuse: 503 });
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "refused503", { templateId });
    expect(await endpointsNamed(made.outs.name)).toEqual([made.id]);
    expect(h.pause.slept).toEqual([1_000]);
  });

  test("a service busy past customTimeouts.create fails naming the bound and the option, and makes nothing", async () => {
    const templateId = await template();
    rule = onOperation("saveEndpoint", 1_000, { refuse: 429 });
    const provider = createEndpointProvider(context);
    const checked = await provider.check(
      {},
      { __logicalName: "toobusy", templateId, __customTimeouts: { create: "30s" } },
    );
    const failure = await provider.create(checked.inputs).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "TIMEOUT", operation: `create endpoint ${checked.inputs.name}` });
    expect(String((failure as Error).message)).toMatch(
      /still refused after \d+ attempts within the bound of 30s: .*HTTP 429.*customTimeouts\.create/,
    );
    expect(h.pause.slept.reduce((a, b) => a + b, 0)).toBe(30_000);
    expect(await endpointsNamed(checked.inputs.name)).toEqual([]);
  });

  test("with a name the program chose that another endpoint already holds, the lost create is not sent again nor the other taken over", async () => {
    const templateId = await template();
    const other = await h.graphql.saveEndpoint({ name: "prod-api", templateId, gpuIds: "AMPERE_16" });
    rule = onOperation("saveEndpoint", 1, { lose: 503 });
    const provider = createEndpointProvider(context);
    const checked = await provider.check(
      {},
      { __logicalName: "named", name: "prod-api", templateId, workersMax: 1 },
    );
    const failure = await provider.create(checked.inputs).catch((error: unknown) => error);
    const ids = await endpointsNamed("prod-api");
    expect(ids).toHaveLength(2);
    expect(failure).toMatchObject({ code: "SERVICE", field: "name", serviceCode: undefined });
    for (const id of ids) expect(String((failure as Error).message)).toContain(id);
    expect(String((failure as Error).message)).toContain("take the one it made over with adoptId");
    // The endpoint that held the name before is untouched.
    expect((await h.graphql.getEndpoint(other.id))?.workersMax).toBe(other.workersMax);
  });

  test("with a name the program chose, even the lone endpoint of it after a lost create is not taken over: the error names it for adoptId", async () => {
    const templateId = await template();
    rule = onOperation("saveEndpoint", 1, { lose: 503 });
    const provider = createEndpointProvider(context);
    const checked = await provider.check(
      {},
      { __logicalName: "solo", name: "solo-api", templateId, workersMax: 1 },
    );
    const failure = await provider.create(checked.inputs).catch((error: unknown) => error);
    // A name the program chose may be held by an endpoint outside the stack: one of it is not taken over.
    const ids = await endpointsNamed("solo-api");
    expect(ids).toHaveLength(1);
    expect(failure).toMatchObject({ code: "SERVICE", field: "name" });
    expect(String((failure as Error).message)).toContain(`adoptId: "${ids[0]}"`);
  });

  test("when two endpoints of the name appeared meanwhile, none is taken over and the create is not sent again", async () => {
    const templateId = await template();
    // Another writer makes an endpoint of the same name while this create's answer is lost.
    rule = onOperation("saveEndpoint", 1, {
      lose: 503,
      meanwhile: () => h.graphql.saveEndpoint({ name: "twin", templateId, gpuIds: "AMPERE_16" }),
    });
    const provider = createEndpointProvider(context);
    const checked = await provider.check({}, { __logicalName: "twin", name: "twin", templateId });
    const failure = await provider.create(checked.inputs).catch((error: unknown) => error);
    const ids = await endpointsNamed("twin");
    expect(ids).toHaveLength(2);
    expect(failure).toMatchObject({ code: "SERVICE", field: "name", serviceCode: undefined });
    const message = String((failure as Error).message);
    expect(message).toContain(
      'create endpoint twin: graphql.saveEndpoint: upstream request timeout (HTTP 503); the service may have created the endpoint all the same: 2 endpoints named "twin" exist now',
    );
    expect(message).toContain("It is not created again, so that no second one is made");
    for (const id of ids) expect(message).toContain(id);
  });

  test("a create whose connection broke after the service acted, the network down a while longer, is found once the lookup answers: one endpoint", async () => {
    const templateId = await template();
    const lost = onOperation("saveEndpoint", 1, { cut: "after" });
    // The first lookups (each already retried by the SDK) break too, as during a network outage.
    const outage = onOperation("listEndpoints", 6, { cut: "before" });
    rule = (hit) => lost(hit) ?? outage(hit);
    const saves = relay.hits.length;
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "outage", { templateId, workersMax: 2 });
    expect(await endpointsNamed(made.outs.name)).toEqual([made.id]);
    expect(made.outs).toMatchObject({ templateId, workersMax: 2 });
    // Sent once as a create; the second save is the take-over with the program's configuration.
    const sent = relay.hits.slice(saves).filter((hit) => hit.body.includes("saveEndpoint"));
    expect(sent.map((hit) => hit.body.includes('"id"'))).toEqual([false, true]);
    expect(h.pause.slept.length).toBeGreaterThan(0);
  });

  test("a lost create whose lookup keeps failing is not sent again: the error names the name to look for and adoptId", async () => {
    const templateId = await template();
    const lost = onOperation("saveEndpoint", 1, { lose: 503 });
    rule = (hit) => lost(hit) ?? (hit.body.includes("listEndpoints") ? { refuse: 503 } : undefined);
    const provider = createEndpointProvider(context);
    const checked = await provider.check(
      {},
      { __logicalName: "unlooked", templateId, __customTimeouts: { create: "30s" } },
    );
    const name = String(checked.inputs.name);
    const failure = await provider.create(checked.inputs).catch((error: unknown) => error);
    // The one endpoint the lost create made, and no second one.
    expect(await endpointsNamed(name)).toHaveLength(1);
    expect(failure).toMatchObject({ code: "SERVICE", field: "name", serviceCode: undefined });
    const message = String((failure as Error).message);
    expect(message).toContain(
      `create endpoint ${name}: graphql.saveEndpoint: upstream request timeout (HTTP 503); the service may have created the endpoint all the same, and looking for it by its name failed too`,
    );
    expect(message).toContain(
      `list your endpoints: if one named "${name}" exists, take it over with adoptId`,
    );
    expect(message).not.toContain(h.settings.apiKey);
    expect(h.pause.slept.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(30_000);
  });

  test("a lost create found by its name whose take-over meets a busy service is taken over again, not created anew", async () => {
    const templateId = await template();
    const lost = onOperation("saveEndpoint", 1, { lose: 503 });
    // Past the SDK's own retries of the read.
    const busyRead = onOperation("getEndpoint", 5, { refuse: 503 });
    rule = (hit) => lost(hit) ?? busyRead(hit);
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "busyread", { templateId, workersMax: 2 });
    expect(await endpointsNamed(made.outs.name)).toEqual([made.id]);
    expect(made.outs).toMatchObject({ templateId, workersMax: 2 });
  });

  test("a refresh (read) meeting a busy service past the client's own retries waits it out, and reads the endpoint", async () => {
    const templateId = await template();
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "refreshbusy", { templateId, workersMax: 2 });
    rule = onOperation("getEndpoint", 6, { refuse: 503 });
    const read = await provider.read(made.id, made.outs);
    expect(read.id).toBe(made.id);
    expect(read.props).toMatchObject({ workersMax: 2, name: made.outs.name });
    expect(h.pause.slept.length).toBeGreaterThan(0);
  });

  test("an update and a delete whose connection broke (before or after the service acted) are sent again and done", async () => {
    const templateId = await template();
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "updcut", { templateId });
    const cutBefore = onOperation("saveEndpoint", 1, { cut: "before" });
    const cutAfter = onOperation("saveEndpoint", 1, { cut: "after" });
    rule = (hit) => cutBefore(hit) ?? cutAfter(hit);
    const checked = await provider.check(made.outs, { ...made.inputs, idleTimeout: 43 });
    const updated = await provider.update(made.id, made.outs, checked.inputs);
    expect(updated.outs.idleTimeout).toBe(43);
    expect((await h.graphql.getEndpoint(made.id))?.idleTimeout).toBe(43);

    rule = onOperation("deleteEndpoint", 1, { cut: "after" });
    await provider.delete(made.id, updated.outs);
    expect(await h.graphql.getEndpoint(made.id)).toBeNull();
  });

  test("a service that refuses connections is not waited for: the update fails at once saying nothing answers there", async () => {
    const templateId = await template();
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "refusedconn", { templateId });
    // Held for the test: no other process gets the port and answers there meanwhile.
    const nothing = holdPort();
    try {
      const settings = { ...context.settings(), graphqlUrl: `http://127.0.0.1:${nothing.port}/graphql` };
      const nowhere = createEndpointProvider({
        settings: () => settings,
        api: () => createManagementApi(settings),
        pause: h.pause,
      });
      const checked = await nowhere.check(made.outs, { ...made.inputs, idleTimeout: 44 });
      const failure = await nowhere
        .update(made.id, made.outs, checked.inputs)
        .catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: "SERVICE", serviceCode: "CONNECTION" });
      expect(String((failure as Error).message)).toContain("no service answered there");
      expect(h.pause.slept).toEqual([]);
    } finally {
      nothing.close();
    }
  });

  test("an update and a delete refused with 429 and 503 are sent again and done", async () => {
    const templateId = await template();
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "upd", { templateId });
    rule = onOperation("saveEndpoint", 2, { refuse: 503 });
    const checked = await provider.check(made.outs, { ...made.inputs, idleTimeout: 42 });
    const updated = await provider.update(made.id, made.outs, checked.inputs);
    expect(updated.outs.idleTimeout).toBe(42);
    expect((await h.graphql.getEndpoint(made.id))?.idleTimeout).toBe(42);

    rule = onOperation("deleteEndpoint", 2, { refuse: 429, retryAfter: "3" });
    await provider.delete(made.id, updated.outs);
    expect(await h.graphql.getEndpoint(made.id)).toBeNull();
    expect(h.pause.slept).toEqual([1_000, 2_000, 3_000, 3_000]);
  });
});

describe("Endpoint whose GPU types were set through REST, against a busy service", () => {
  /** REST PATCH /endpoints/<id>: the only write of GPU types no pool describes. */
  // Refused with a Retry-After past the SDK's own limit (60s), so only the provider waits (virtually).
  const busy = { refuse: 429, retryAfter: "90" } as const;
  const patchOf = (id: string) => (hit: { method: string; url: string }) =>
    hit.method === "PATCH" && hit.url.endsWith(`/endpoints/${id}`);

  test("an update waits out a busy service to put the REST GPU types back", async () => {
    const templateId = await template();
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "restgpu", { templateId, gpuIds: "AMPERE_48" });
    await h.rest.endpoints.update(made.id, { gpuTypeIds: ["NVIDIA B200"] });
    let left = 2;
    const isPatch = patchOf(made.id);
    rule = (hit) => (isPatch(hit) && left-- > 0 ? busy : undefined);
    const checked = await provider.check(made.outs, { ...made.inputs, idleTimeout: 30 });
    await provider.update(made.id, made.outs, checked.inputs);
    expect(await h.rest.endpoints.get(made.id)).toMatchObject({
      idleTimeout: 30,
      gpuTypeIds: ["NVIDIA B200"],
    });
    expect(h.pause.slept).toEqual([90_000, 90_000]);
  });

  test("putting them back stays within customTimeouts.update, and the error names that option", async () => {
    const templateId = await template();
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "restgpubound", {
      templateId,
      gpuIds: "AMPERE_48",
      __customTimeouts: { update: "30s" },
    });
    await h.rest.endpoints.update(made.id, { gpuTypeIds: ["NVIDIA B200"] });
    const isPatch = patchOf(made.id);
    rule = (hit) => (isPatch(hit) ? busy : undefined);
    const checked = await provider.check(made.outs, { ...made.inputs, idleTimeout: 30 });
    const failure = await provider
      .update(made.id, made.outs, checked.inputs)
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "SERVICE", field: "gpuIds" });
    expect(String((failure as Error).message)).toBe(
      `update endpoint ${made.outs.name}: gpuIds: the update was saved, but putting back the GPU types set through REST (gpuTypeIds ["NVIDIA B200"]; saveEndpoint can only send pools, so it sent AMPERE_48) failed: still refused after 2 attempts within the bound of 30s: rest.endpoints.update: too many requests (HTTP 429) Give the resource a longer customTimeouts.update. Set gpuTypeIds back through REST (PATCH /endpoints/${made.id}), or set gpuIds in the program to the pools you want.`,
    );
    // The save before it and the waits share the one bound (the 20-minute default is not used).
    expect(h.pause.slept.reduce((a, b) => a + b, 0)).toBe(30_000);
    expect(await h.rest.endpoints.get(made.id)).toMatchObject({ idleTimeout: 30 });
  });
  test("a delete's scale-to-zero puts them back within the delete's bound (runpodkit:deleteTimeout here)", async () => {
    const templateId = await template();
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "restgpudel", {
      templateId,
      gpuIds: "AMPERE_48",
      workersMax: 2,
    });
    await h.rest.endpoints.update(made.id, { gpuTypeIds: ["NVIDIA B200"] });
    const isPatch = patchOf(made.id);
    rule = (hit) => (isPatch(hit) ? busy : undefined);
    const failure = await provider.delete(made.id, made.outs).catch((error: unknown) => error);
    expect(String((failure as Error).message)).toContain(
      "failed: still refused after 3 attempts within the bound of 120s: rest.endpoints.update: too many requests (HTTP 429) Give the resource a longer customTimeouts.delete (else runpodkit:deleteTimeout).",
    );
    expect(h.pause.slept).toEqual([90_000, 30_000]);
  });
});

describe("Endpoint delete against a service busy past the bound", () => {
  test("fails naming the bound, the last refusal and the options that set it; the endpoint stays in the stack", async () => {
    const templateId = await template();
    const provider = createEndpointProvider(context);
    const made = await checkAndCreate(provider, "stays", { templateId });
    rule = onOperation("deleteEndpoint", 1_000, { refuse: 503 });
    const failure = await provider.delete(made.id, made.outs).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "TIMEOUT", operation: `delete endpoint ${made.outs.name}` });
    expect(String((failure as Error).message)).toMatch(
      /within the bound of 120s: graphql\.deleteEndpoint: too many requests \(HTTP 503\) Run destroy again later, or give the resource a longer customTimeouts\.delete \(else runpodkit:deleteTimeout\)\. \(the endpoint had been scaled to zero first; its worker counts were put back \(workersMin 0, workersMax 3\), so it serves as before\)$/,
    );
    expect(await h.graphql.getEndpoint(made.id)).toMatchObject({ workersMin: 0, workersMax: 3 });
  });
});

describe("Template (REST) against a busy service", () => {
  test("a create whose answer was lost is found by its generated name: no second template under a later generation", async () => {
    rule = (hit) =>
      hit.method === "POST" && hit.url.startsWith("/v1/templates") && !lost++ ? { lose: 503 } : undefined;
    let lost = 0;
    const provider = createTemplateProvider(context);
    const made = await checkAndCreate(provider, "tpl-lost", {
      imageName: "runpodkit/echo:1.0",
      isServerless: true,
    });
    const named = (await h.rest.templates.list({ includeEndpointBoundTemplates: true })).filter((t) =>
      t.name.startsWith("tpl-lost-"),
    );
    expect(named.map((t) => [t.id, t.name])).toEqual([[made.id, made.outs.name]]);
    // Taken over by its mark, which stays on the template outside the outputs: the next up is no change.
    expect(Object.keys((await h.rest.templates.get(made.id)).env)).toEqual([CREATE_MARK]);
    expect(made.outs.env).toEqual({});
    const checked = await provider.check(made.outs, made.inputs);
    expect((await provider.diff(made.id, made.outs, checked.inputs)).changes).toBe(false);
  });

  test("two stacks of the same project and stack names: a create refused because the other holds the generated name, that answer lost, does not take the other's template over", async () => {
    const program = { imageName: "runpodkit/echo:1.0", __scope: "shop/prod" };
    const theirs = await checkAndCreate(createTemplateProvider(context), "twintpl", {
      ...program,
      env: { MODE: "theirs" },
    });
    // The service refuses it (NAME_TAKEN: theirs holds the name); the refusal is lost as a 503.
    rule = onPost("/v1/templates", 1, { lose: 503 });
    const ours = await checkAndCreate(createTemplateProvider(context), "twintpl", {
      ...program,
      env: { MODE: "ours" },
    });
    expect(ours.id).not.toBe(theirs.id);
    // Created under the next generation of the name, as when the refusal is answered.
    expect(ours.outs.name).not.toBe(theirs.outs.name);
    expect(String(ours.outs.name)).toMatch(/^twintpl-/);
    expect(ours.outs.env).toEqual({ MODE: "ours" });
    expect((await h.rest.templates.get(theirs.id)).env).toMatchObject({ MODE: "theirs" });
  });
});

describe("Unique names with no field for a mark against a busy service", () => {
  test("registry auth: a create refused because another stack holds the generated name, that answer lost, takes nothing over: the error names it and adoptId", async () => {
    const program = { username: "bot", __scope: "shop/prod" };
    const theirs = await checkAndCreate(createContainerRegistryAuthProvider(context), "twinauth", {
      ...program,
      password: "theirs",
    });
    const seen: string[] = [];
    const lost = onPost("/v1/containerregistryauth", 1, { lose: 503 });
    rule = (hit) => {
      seen.push(hit.body);
      return lost(hit);
    };
    const failure = await checkAndCreate(createContainerRegistryAuthProvider(context), "twinauth", {
      ...program,
      password: "ours",
    }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "SERVICE", field: "name" });
    const message = String((failure as Error).message);
    expect(message).toContain(
      `one container registry auth named "${theirs.outs.name}" exists now (id ${theirs.id}). Its name is generated`,
    );
    expect(message).toContain(`take it over with adoptId (adoptId: "${theirs.id}") and run up again`);
    expect(message).not.toContain(h.settings.apiKey);
    // The other stack's credentials were not overwritten, and nothing else was made.
    expect(seen.some((body) => body.includes("updateRegistryAuth"))).toBe(false);
    const auths = await h.rest.containerRegistryAuths.list();
    expect(auths.filter((a) => a.name.startsWith("twinauth-")).map((a) => a.id)).toEqual([theirs.id]);
  });

  test("secret: a create refused because another stack holds the generated name, that answer lost, takes nothing over", async () => {
    const program = { __scope: "shop/prod" };
    const theirs = await checkAndCreate(createSecretProvider(context), "twinsecret", {
      ...program,
      value: "theirs",
      description: "theirs",
    });
    const seen: string[] = [];
    const lost = onOperation("secretCreate", 1, { lose: 503 });
    rule = (hit) => {
      seen.push(hit.body);
      return lost(hit);
    };
    const failure = await checkAndCreate(createSecretProvider(context), "twinsecret", {
      ...program,
      value: "ours",
      description: "ours",
    }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "SERVICE", field: "name" });
    expect(String((failure as Error).message)).toContain(`adoptId (adoptId: "${theirs.id}")`);
    expect(seen.some((body) => body.includes("secretValueUpdate"))).toBe(false);
    const secrets = (await h.graphql.listSecrets()).filter((s) => s.name.startsWith("twinsecret-"));
    expect(secrets.map((s) => [s.id, s.description])).toEqual([[theirs.id, "theirs"]]);
  });

  test("a name the program chose stays its own claim: the secret a lost create made is taken over, one of it", async () => {
    rule = onOperation("secretCreate", 1, { lose: 503 });
    const made = await checkAndCreate(createSecretProvider(context), "chosen", {
      name: "chosen_token",
      value: "v1",
    });
    expect((await h.graphql.listSecrets()).filter((s) => s.name === "chosen_token").map((s) => s.id)).toEqual(
      [made.id],
    );
  });
});

/** `times` POSTs to the REST collection `path` (e.g. "/v1/pods") get the verdict; the rest pass. */
function onPost(path: string, times: number, verdict: ReturnType<Rule>): Rule {
  let left = times;
  return (hit) => {
    if (left <= 0 || hit.method !== "POST" || hit.url.split("?")[0] !== path) return undefined;
    left--;
    return verdict;
  };
}

describe("Pod against a busy service (names repeat)", () => {
  const POD = { imageName: "runpod/pytorch:2.4", gpuTypeIds: ["NVIDIA GeForce RTX 4090"], gpuCount: 1 };
  const podsNamed = async (name: unknown) =>
    (await h.rest.pods.list()).filter((p) => p.name === name).map((p) => p.id);

  test("two stacks of the same project and stack names: a lost create does not take over the other stack's pod", async () => {
    const program = { ...POD, __scope: "shop/prod" };
    const theirs = await checkAndCreate(createPodProvider(context), "twinpod", program);
    // Refused before it reaches the service: nothing made, which the provider cannot tell from a lost answer.
    rule = onPost("/v1/pods", 1, { refuse: 503 });
    const ours = await checkAndCreate(createPodProvider(context), "twinpod", {
      ...program,
      env: { MODE: "ours" },
    });
    expect(ours.outs.name).toBe(theirs.outs.name);
    expect(ours.id).not.toBe(theirs.id);
    expect((await podsNamed(theirs.outs.name)).sort()).toEqual([ours.id, theirs.id].sort());
    // The other stack's pod keeps its env; this one's outputs do not show the mark.
    expect((await h.rest.pods.get(theirs.id)).env).not.toHaveProperty("MODE");
    expect(ours.outs.env).toEqual({ MODE: "ours" });
  });

  test("beside the other stack's pod of the same generated name, a create carried out whose answer was lost takes over its own", async () => {
    const program = { ...POD, __scope: "shop/staging" };
    const theirs = await checkAndCreate(createPodProvider(context), "twinlostpod", program);
    rule = onPost("/v1/pods", 1, { lose: 503 });
    const provider = createPodProvider(context);
    const ours = await checkAndCreate(provider, "twinlostpod", { ...program, env: { MODE: "a" } });
    expect(ours.id).not.toBe(theirs.id);
    // One each: the lost create was not sent again.
    expect((await podsNamed(theirs.outs.name)).sort()).toEqual([ours.id, theirs.id].sort());
    expect(ours.outs.env).toEqual({ MODE: "a" });
    // The mark stays on the pod as a key set elsewhere would, outside the outputs: the next up is no change.
    expect(Object.keys((await h.rest.pods.get(ours.id)).env ?? {}).sort()).toEqual(["MODE", CREATE_MARK]);
    const checked = await provider.check(ours.outs, ours.inputs);
    expect((await provider.diff(ours.id, ours.outs, checked.inputs)).changes).toBe(false);
  });
});

describe("NetworkVolume against a busy service (names repeat, no field for a mark)", () => {
  const VOLUME = { size: 10, dataCenterId: "EU-RO-1" };
  const volumesNamed = async (name: unknown) =>
    (await h.rest.networkVolumes.list()).filter((v) => v.name === name).map((v) => v.id);

  test("a lost create beside another stack's volume of its generated name takes nothing over: the error names it and adoptId", async () => {
    const program = { ...VOLUME, __scope: "shop/prod" };
    const theirs = await checkAndCreate(createNetworkVolumeProvider(context), "twinvol", program);
    rule = onPost("/v1/networkvolumes", 1, { refuse: 503 });
    const failure = await checkAndCreate(createNetworkVolumeProvider(context), "twinvol", {
      ...program,
      size: 20,
    }).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "SERVICE", field: "name" });
    const message = String((failure as Error).message);
    expect(message).toContain(
      `the service may have created the network volume all the same: one network volume named "${theirs.outs.name}" exists now (id ${theirs.id}). Its name is generated`,
    );
    expect(message).toContain(`take it over with adoptId (adoptId: "${theirs.id}") and run up again`);
    expect(message).not.toContain(h.settings.apiKey);
    // The other stack's volume is untouched, and no second one was made.
    expect(await volumesNamed(theirs.outs.name)).toEqual([theirs.id]);
    expect(await h.rest.networkVolumes.get(theirs.id)).toMatchObject({ size: 10 });
  });

  test("a lost create with none of its name made is sent again: one volume", async () => {
    rule = onPost("/v1/networkvolumes", 1, { refuse: 503 });
    const made = await checkAndCreate(createNetworkVolumeProvider(context), "lonevol", VOLUME);
    expect(await volumesNamed(made.outs.name)).toEqual([made.id]);
  });
});
