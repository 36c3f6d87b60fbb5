import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { endpointForwarder } from "../../provider/endpoint";
import { templateForwarder } from "../../provider/template";
import { GraphQLClient } from "../../sdk/graphql";
import { ManualClock } from "../../service/clock";
import {
  type DynamicProviderHost,
  dynamicUrn,
  type Props,
  serializeProvider,
  stackConfig,
  startCheckoutHost,
} from "../helpers/pulumi-host";
import { type TestService, withService } from "../helpers/service";

/**
 * A stack whose provider configuration changes between runs (each run is a new provider host, which
 * Configure gives the stack's config): the outputs the config derives must follow it.
 */

let service: TestService;
let graphql: GraphQLClient;
const hosts: DynamicProviderHost[] = [];
const text: Record<string, string> = {};

beforeAll(async () => {
  service = await withService({ clock: new ManualClock() });
  graphql = new GraphQLClient({ apiKey: service.apiKey, baseUrl: service.graphqlUrl });
  text.Endpoint = await serializeProvider(endpointForwarder);
  text.Template = await serializeProvider(templateForwarder);
});

afterAll(async () => {
  await Promise.all(hosts.map((h) => h.close()));
  await graphql?.close();
  await service?.close();
});

/** A provider host configured as a run of the stack with this queueUrl would be. */
async function run(queueUrl: string): Promise<DynamicProviderHost> {
  const host = await startCheckoutHost();
  hosts.push(host);
  await host.configure(stackConfig(service, service.apiKey, { "runpodkit:queueUrl": queueUrl }));
  return host;
}

async function up(host: DynamicProviderHost, type: string, name: string, props: Props) {
  const urn = dynamicUrn(type, name);
  const checked = await host.check(urn, {}, { ...props, __logicalName: name, __provider: text[type] });
  expect(checked.failures).toEqual([]);
  return { urn, inputs: checked.inputs, ...(await host.create(urn, checked.inputs)) };
}

describe("a new runpodkit:queueUrl on an existing stack", () => {
  test("the next up updates each endpoint's url (no service change, no replacement); the run after has nothing to do", async () => {
    const first = await run(service.queueUrl);
    const t = await up(first, "Template", "tpl", { imageName: "runpodkit/echo:1.0", isServerless: true });
    const queue = await up(first, "Endpoint", "queue", { templateId: t.id, workersMax: 1 });
    const lb = await up(first, "Endpoint", "lb", { templateId: t.id, workersMax: 1, type: "LB" });
    const port = new URL(service.queueUrl).port;
    expect(queue.properties.url).toBe(`${service.queueUrl}/v2/${queue.id}`);
    expect(lb.properties.url).toBe(`http://${lb.id}.localhost:${port}`);
    const versions = async () =>
      Object.fromEntries(
        await Promise.all(
          [queue.id, lb.id].map(async (id) => [id, (await graphql.getEndpoint(id))?.version]),
        ),
      );
    const before = await versions();
    expect(Object.values(before).every((v) => typeof v === "number")).toBe(true);

    // The same service behind another address (a gateway, a proxy): what the program's users call.
    const moved = service.queueUrl.replace("127.0.0.1", "gateway.localhost");
    const second = await run(moved);
    for (const [e, url] of [
      [queue, `${moved}/v2/${queue.id}`],
      [lb, `http://${lb.id}.gateway.localhost:${port}`],
    ] as const) {
      const again = await second.check(e.urn, e.inputs, e.inputs);
      expect(again.failures).toEqual([]);
      expect(await second.diff(e.urn, e.id, e.properties, again.inputs, e.inputs)).toEqual({
        changes: "some",
        replaces: [],
        deleteBeforeReplace: false,
      });
      const updated = await second.update(e.urn, e.id, e.properties, again.inputs);
      expect(updated.properties.url).toBe(url);
      expect(await second.diff(e.urn, e.id, updated.properties, again.inputs, again.inputs)).toEqual({
        changes: "none",
        replaces: [],
        deleteBeforeReplace: false,
      });
    }
    // Only the outputs were rewritten: the service saw no save (its version counts them).
    expect(await versions()).toEqual(before);
    // The template has no output the settings derive: still nothing to do.
    const tAgain = await second.check(t.urn, t.inputs, t.inputs);
    expect((await second.diff(t.urn, t.id, t.properties, tAgain.inputs, t.inputs)).changes).toBe("none");
  });
});
