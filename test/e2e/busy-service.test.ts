/**
 * A stack deployed through a service that is busy for a while, on Pulumi's wire path (the program
 * runner and the dynamic-provider host, with wall-clock waits): the local service behind a relay that
 * refuses some requests with 429 before they reach it, or forwards one and then answers 503 as a
 * gateway that timed out would (the service acted, the answer was lost).
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LocalStack } from "../../engine/engine";
import { type Hit, json, sendOn, startScriptedServer } from "../sdk/scripted-server";
import { type FixtureStack, openFixtureStack } from "./support/fixture-stack";
import type { ServiceFixture } from "./support/service";

const FIXTURE = join(__dirname, "fixtures", "busy");

/** cut: the connection breaks before the request reaches the service; cut-after: once it acted. */
type Verdict = "refuse" | "lose" | "cut" | "cut-after" | undefined;

describe("a stack through a busy service, through the engine", () => {
  let fixture: FixtureStack | undefined;
  let svc: ServiceFixture;
  let stack: LocalStack;
  let relay: Awaited<ReturnType<typeof startScriptedServer>> | undefined;
  let rule: (hit: Hit) => Verdict = () => undefined;
  const seen: string[] = [];

  beforeAll(async () => {
    fixture = await openFixtureStack(FIXTURE);
    ({ svc, stack } = fixture);
    const origin = new URL(svc.service.graphqlUrl).origin;
    relay = await startScriptedServer((hit, res) => {
      const verdict = rule(hit);
      const operation = /\b(saveEndpoint|deleteEndpoint)\b/.exec(hit.body)?.[1];
      if (operation) seen.push(`${operation}:${verdict ?? "pass"}`);
      if (verdict === "refuse") {
        json(res, 429, { message: "too many requests" });
        return;
      }
      if (verdict === "cut") {
        res.socket?.destroy();
        return;
      }
      sendOn(origin, hit)
        .then(async (reply) => {
          const text = await reply.text();
          if (verdict === "lose") return json(res, 503, { message: "upstream request timeout" });
          if (verdict === "cut-after") return res.socket?.destroy();
          res.writeHead(reply.status, { "content-type": "application/json" }).end(text);
        })
        .catch(() => res.writeHead(502).end());
    });
    const graphqlUrl = new URL(svc.service.graphqlUrl);
    stack.setConfig("runpodkit:graphqlUrl", {
      value: `${relay.url}${graphqlUrl.pathname}${graphqlUrl.search}`,
    });
  }, 300_000);

  afterAll(async () => {
    await relay?.close();
    await fixture?.close();
  });

  /** The first `times` requests naming `operation` get `verdict`. */
  const first = (operation: string, times: number, verdict: Verdict) => {
    let left = times;
    return (hit: Hit): Verdict => {
      if (left <= 0 || !hit.body.includes(operation)) return undefined;
      left--;
      return verdict;
    };
  };

  test("up makes one endpoint though its create was refused and then its answer lost; the next up does nothing; destroy waits out 429s", async () => {
    let calls = 0;
    const refuseThenLose = first("saveEndpoint", 2, "refuse");
    rule = (hit) => {
      const verdict = refuseThenLose(hit);
      if (verdict !== undefined || !hit.body.includes("saveEndpoint")) return verdict;
      return calls++ === 0 ? "lose" : undefined;
    };
    const up = await stack.up();
    const endpointId = String(up.outputs.endpointId?.value);
    const name = String(up.outputs.endpointName?.value);
    expect(up.steps.map((s) => s.op)).toEqual(["create", "create", "create"]);
    // Two refusals waited out, the create the service carried out, then the take-over of what it
    // made (the program's configuration saved onto it, as adoption does); no second create.
    expect(seen).toEqual([
      "saveEndpoint:refuse",
      "saveEndpoint:refuse",
      "saveEndpoint:lose",
      "saveEndpoint:pass",
    ]);
    const named = (await svc.graphql.listEndpoints()).filter((e) => e.name === name);
    expect(named.map((e) => e.id)).toEqual([endpointId]);
    expect(svc.endpoint(endpointId)?.workersMax).toBe(2);
    expect(up.outputs.endpointUrl).toEqual({
      value: `${svc.service.queueUrl}/v2/${endpointId}`,
      secret: false,
    });

    rule = () => undefined;
    const again = await stack.up();
    expect(again.steps.filter((s) => s.op !== "same")).toEqual([]);

    seen.length = 0;
    rule = first("deleteEndpoint", 2, "refuse");
    await stack.destroy();
    expect(seen.filter((s) => s.startsWith("deleteEndpoint"))).toEqual([
      "deleteEndpoint:refuse",
      "deleteEndpoint:refuse",
      "deleteEndpoint:pass",
    ]);
    expect(svc.endpoint(endpointId)).toBeUndefined();
    expect(await svc.graphql.listEndpoints()).toEqual([]);
  }, 300_000);

  test("a create whose connection broke after the service acted, in a network outage that outlasts the client's retries, makes one endpoint; the next up does nothing", async () => {
    seen.length = 0;
    const lost = first("saveEndpoint", 1, "cut-after");
    // The lookups that follow break too for a while (each is retried by the SDK first).
    const outage = first("listEndpoints", 6, "cut");
    rule = (hit) => lost(hit) ?? outage(hit);
    const up = await stack.up();
    const endpointId = String(up.outputs.endpointId?.value);
    const name = String(up.outputs.endpointName?.value);
    expect(seen.filter((s) => s.startsWith("saveEndpoint"))).toEqual([
      "saveEndpoint:cut-after",
      "saveEndpoint:pass",
    ]);
    expect((await svc.graphql.listEndpoints()).map((e) => [e.id, e.name])).toEqual([[endpointId, name]]);

    rule = () => undefined;
    const again = await stack.up();
    expect(again.steps.filter((s) => s.op !== "same")).toEqual([]);
    expect((await svc.graphql.listEndpoints()).map((e) => e.id)).toEqual([endpointId]);
    await stack.destroy();
    expect(await svc.graphql.listEndpoints()).toEqual([]);
  }, 300_000);

  test("refresh through a service busy past the client's own retries waits it out: nothing changes, nothing dropped", async () => {
    rule = () => undefined;
    const up = await stack.up();
    const endpointId = String(up.outputs.endpointId?.value);
    seen.length = 0;
    rule = first("getEndpoint", 6, "refuse");
    const refreshed = await stack.refresh();
    expect(refreshed.steps.filter((s) => s.op !== "same")).toEqual([]);
    rule = () => undefined;
    const again = await stack.up();
    expect(again.steps.filter((s) => s.op !== "same")).toEqual([]);
    expect(again.outputs.endpointId?.value).toBe(endpointId);
    await stack.destroy();
    expect(await svc.graphql.listEndpoints()).toEqual([]);
  }, 300_000);

  test("a destroy whose deleteEndpoint fails past the bound leaves the endpoint's workers as they were; the next up has nothing to put back; destroy again works", async () => {
    rule = () => undefined;
    const up = await stack.up();
    const endpointId = String(up.outputs.endpointId?.value);
    expect(svc.endpoint(endpointId)?.workersMax).toBe(2);
    stack.setConfig("runpodkit:deleteTimeout", { value: "2" });
    try {
      rule = (hit) => (hit.body.includes("deleteEndpoint") ? "refuse" : undefined);
      const failed = await stack.destroy().then(
        () => "destroyed",
        (error: unknown) => String(error),
      );
      expect(failed).toContain(`delete endpoint ${String(up.outputs.endpointName?.value)}`);
      expect(failed).toContain("bound of 2s");
      // The scale-down that came first is undone: the endpoint serves as before.
      expect(svc.endpoint(endpointId)?.workersMax).toBe(2);
      expect(failed).toContain("its worker counts were put back");
    } finally {
      stack.setConfig("runpodkit:deleteTimeout", { value: "60" });
    }
    rule = () => undefined;
    const again = await stack.up();
    expect(again.steps.filter((s) => s.op !== "same")).toEqual([]);
    expect(svc.endpoint(endpointId)?.workersMax).toBe(2);
    await stack.destroy();
    expect(await svc.graphql.listEndpoints()).toEqual([]);
  }, 300_000);

  test("an update and a delete whose connection broke are sent again: up puts the drift back, destroy removes the endpoint", async () => {
    rule = () => undefined;
    const up = await stack.up();
    const endpointId = String(up.outputs.endpointId?.value);
    await svc.rest.endpoints.update(endpointId, { workersMax: 5 });
    await stack.refresh();
    seen.length = 0;
    rule = first("saveEndpoint", 1, "cut");
    const again = await stack.up();
    expect(again.steps.filter((s) => s.op !== "same").map((s) => s.op)).toEqual(["update"]);
    expect(seen).toEqual(["saveEndpoint:cut", "saveEndpoint:pass"]);
    expect(svc.endpoint(endpointId)?.workersMax).toBe(2);

    rule = first("deleteEndpoint", 1, "cut-after");
    await stack.destroy();
    expect(await svc.graphql.listEndpoints()).toEqual([]);
  }, 300_000);
});
