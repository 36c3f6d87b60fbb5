import type { ServerResponse } from "node:http";
import { afterAll, beforeAll, expect, test } from "vitest";
import { endpointForwarder } from "../../provider/endpoint";
import { networkVolumeForwarder } from "../../provider/network-volume";
import { podForwarder } from "../../provider/pod";
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
import { type Hit, sendOn, startScriptedServer } from "../sdk/scripted-server";

/**
 * An `up` killed while a create runs (a CI job cancelled, a runner lost), through Pulumi's own
 * provider host: the first host reaches the service through a relay that carries the create out and
 * never answers it, and is killed meanwhile; a second host (the next up) then creates the same
 * resource, as Pulumi's engine asks it to (a pending create is never handed to a provider).
 */

/** A kind whose names repeat, so the next up's create is accepted beside the leftover. */
interface Kind {
  type: "Endpoint" | "Pod" | "NetworkVolume";
  /** As the warning spells it, article included. */
  noun: string;
  /** The create request the relay carries out and never answers. */
  isCreate(hit: Hit): boolean;
  program(): Record<string, unknown>;
  /** The ids of the kind's resources named `name`, as the service holds them. */
  named(name: string): Promise<string[]>;
}

let service: TestService;
let rest: RestClient;
let graphql: GraphQLClient;
let relay: Awaited<ReturnType<typeof startScriptedServer>>;
const text: Record<string, string> = {};
let templateId: string;
/** The create the relay holds the answer of; none: every request is answered. */
let held: ((hit: Hit) => boolean) | undefined;
/** Resolved once the service carried out a create the relay holds the answer of. */
let acted: Promise<void>;
let onActed: () => void = () => undefined;

const restPost = (path: string) => (hit: Hit) =>
  hit.method === "POST" && new URL(hit.url, "http://relay").pathname.endsWith(path);

const kinds: Kind[] = [
  {
    type: "Endpoint",
    noun: "an endpoint",
    isCreate: (hit) => hit.body.includes("saveEndpoint"),
    program: () => ({ templateId, workersMin: 1, workersMax: 2 }),
    named: async (name) => (await graphql.listEndpoints()).filter((e) => e.name === name).map((e) => e.id),
  },
  {
    type: "Pod",
    noun: "a pod",
    isCreate: restPost("/pods"),
    program: () => ({ imageName: "img:1", gpuTypeIds: ["NVIDIA GeForce RTX 4090"], gpuCount: 1 }),
    named: async (name) => (await rest.pods.list()).filter((p) => p.name === name).map((p) => p.id),
  },
  {
    type: "NetworkVolume",
    noun: "a network volume",
    isCreate: restPost("/networkvolumes"),
    program: () => ({ size: 10, dataCenterId: "EU-RO-1" }),
    named: async (name) => (await rest.networkVolumes.list()).filter((v) => v.name === name).map((v) => v.id),
  },
];

async function relayHit(hit: Hit, res: ServerResponse): Promise<void> {
  const reply = await sendOn(new URL(service.restUrl).origin, hit);
  const body = await reply.text();
  // The create was carried out; its answer never leaves the relay (the host dies waiting for it).
  if (held?.(hit)) {
    onActed();
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
    relayHit(hit, res).catch(() => res.writeHead(502).end());
  });
  text.Endpoint = await serializeProvider(endpointForwarder);
  text.Pod = await serializeProvider(podForwarder);
  text.NetworkVolume = await serializeProvider(networkVolumeForwarder);
  templateId = (await rest.templates.create({ name: "worker", imageName: "img:1", isServerless: true })).id;
});

afterAll(async () => {
  await relay?.close();
  await Promise.all([rest?.close(), graphql?.close()]);
  await service?.close();
});

async function checked(host: DynamicProviderHost, kind: Kind, name: string, parent?: string) {
  const urn = dynamicUrn(kind.type, name);
  const result = await host.check(
    urn,
    {},
    {
      ...kind.program(),
      __logicalName: name,
      ...(parent === undefined ? {} : { __parent: parent }),
      __provider: text[kind.type],
    },
  );
  expect(result.failures).toEqual([]);
  return { urn, inputs: result.inputs };
}

test.each(kinds)(
  "$type: the up after one killed during its create warns naming what it left and the adoptId",
  async (kind) => {
    const swap = (url: string) => `${relay.url}${new URL(url).pathname}`;
    const killed = await startCheckoutHost();
    let next: DynamicProviderHost | undefined;
    // The next up's engine, as the CLI gives it to the provider host: the warning arrives as one.
    const engine = await startEngineLog();
    held = kind.isCreate;
    try {
      await killed.configure(
        stackConfig(
          {
            restUrl: swap(service.restUrl),
            graphqlUrl: swap(service.graphqlUrl),
            queueUrl: service.queueUrl,
          },
          service.apiKey,
        ),
      );
      acted = new Promise((resolve) => {
        onActed = resolve;
      });
      const logical = `killed-${kind.type.toLowerCase()}`;
      const first = await checked(killed, kind, logical);
      const lost = killed.create(first.urn, first.inputs).then(
        () => "answered",
        () => "lost",
      );
      await acted;
      await killed.close();
      expect(await lost).toBe("lost");
      const name = String(first.inputs.name);
      const left = await kind.named(name);
      expect(left).toHaveLength(1);
      const leftover = left[0] ?? "";

      next = await startCheckoutHost({ engineAddress: engine.address });
      await next.configure(stackConfig(service, service.apiKey));
      const again = await checked(next, kind, logical);
      expect(again.inputs.name).toBe(name);
      const made = await next.create(again.urn, again.inputs);
      expect(made.id).not.toBe(leftover);
      const warnings = engine.entries.filter((e) => e.severity === "warning").map((e) => e.message);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(
        `: ${kind.noun} named "${name}" already exists in the account (id ${leftover}), and this create makes another.`,
      );
      expect(warnings[0]).toContain(`adoptId: "${leftover}"`);
      expect(warnings[0]).not.toContain(service.apiKey);
      expect(next.stderr).not.toContain(service.apiKey);
      // Both exist now: the warning tells of the leftover, it does not take it over.
      expect((await kind.named(name)).sort()).toEqual([leftover, made.id].sort());
    } finally {
      held = undefined;
      await Promise.all([killed.close(), next?.close()]);
      await engine.close();
    }
  },
);

test("two creates of one up that each find a leftover warn apart, each naming its own resource as the program declared it", async () => {
  const pod = kinds.find((kind) => kind.type === "Pod");
  if (pod === undefined) throw new Error("no Pod kind");
  // Two components' children of one logical name: their generated names differ only in the digest.
  const parents = ["acme:index:Worker::a", "acme:index:Worker::b"];
  const engine = await startEngineLog();
  const host = await startCheckoutHost({ engineAddress: engine.address });
  try {
    await host.configure(stackConfig(service, service.apiKey));
    const steps = await Promise.all(parents.map((parent) => checked(host, pod, "gpu", parent)));
    const names = steps.map((step) => String(step.inputs.name));
    expect(new Set(names).size).toBe(2);
    const leftovers: string[] = [];
    for (const name of names) {
      leftovers.push(
        (
          await rest.pods.create({
            name,
            imageName: "img:1",
            gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
            gpuCount: 1,
          })
        ).id,
      );
    }
    // In parallel, as the engine runs independent steps.
    await Promise.all(steps.map((step) => host.create(step.urn, step.inputs)));
    const warnings = engine.entries.filter((e) => e.severity === "warning").map((e) => e.message);
    expect(warnings).toHaveLength(2);
    parents.forEach((parent, i) => {
      const subject = `create pod ${names[i]} (resource Pod "gpu" in ${parent})`;
      const own = warnings.filter((w) => w.startsWith(`${subject}: `));
      expect(own, parent).toHaveLength(1);
      expect(own[0]).toContain(
        `: a pod named "${names[i]}" already exists in the account (id ${leftovers[i]})`,
      );
      expect(own[0]).toContain(`adoptId: "${leftovers[i]}"`);
    });
  } finally {
    await host.close();
    await engine.close();
  }
});
