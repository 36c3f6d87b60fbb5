import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CREATE_MARK, CREATE_MARK_BYTES } from "../../provider/create-mark";
import { createEndpointProvider } from "../../provider/endpoint";
import { createPodProvider } from "../../provider/pod";
import { createTemplateProvider } from "../../provider/template";
import { ENV_LIMITS } from "../../sdk/schemas";
import { checkAndCreate, type Harness, startHarness } from "./support";

/**
 * The create's mark (RUNPODKIT_CREATE_MARK) at the edges: an env with no room left for it, and a
 * program that sets the key itself.
 */

let h: Harness;
let templateId: string;

beforeAll(async () => {
  h = await startHarness();
  templateId = (
    await h.rest.templates.create({ name: "mark-base", imageName: "runpodkit/echo:1.0", isServerless: true })
  ).id;
});

afterAll(async () => {
  await h?.close();
});

/** An env of ENV_LIMITS.totalBytes less `spare` bytes, as the SDK counts them (`NAME=value` and its end). */
function envLeaving(spare: number): Record<string, string> {
  const big = ENV_LIMITS.valueBytes;
  const rest = ENV_LIMITS.totalBytes - spare - 2 * (1 + big + 2) - (1 + 2);
  return { A: "a".repeat(big), B: "b".repeat(big), C: "c".repeat(rest) };
}

const POD = { imageName: "runpod/pytorch:2.4", gpuTypeIds: ["NVIDIA GeForce RTX 4090"], gpuCount: 1 };

describe("an env with no room left for the create's mark", () => {
  test("the mark is the 59 bytes the docs say", () => {
    expect(CREATE_MARK_BYTES).toBe(59);
  });

  test("an endpoint, a pod and a template of a generated name are created as the program wrote them, without the mark", async () => {
    const env = envLeaving(CREATE_MARK_BYTES - 1);
    const endpoint = await checkAndCreate(createEndpointProvider(h.context), "full", { templateId, env });
    expect(endpoint.outs.env).toEqual(env);
    const endpointEnv = (await h.graphql.getEndpoint(endpoint.id))?.env ?? [];
    expect(endpointEnv.map(({ key }) => key).sort()).toEqual(["A", "B", "C"]);

    const pod = await checkAndCreate(createPodProvider(h.context), "full", { ...POD, env });
    expect(Object.keys((await h.rest.pods.get(pod.id)).env ?? {}).sort()).toEqual(["A", "B", "C"]);

    const template = await checkAndCreate(createTemplateProvider(h.context), "full", {
      imageName: "runpodkit/echo:1.0",
      env,
    });
    expect(Object.keys((await h.rest.templates.get(template.id)).env).sort()).toEqual(["A", "B", "C"]);
  });

  test("with room for it to the byte, the mark is set", async () => {
    const env = envLeaving(CREATE_MARK_BYTES);
    const made = await checkAndCreate(createTemplateProvider(h.context), "just", {
      imageName: "runpodkit/echo:1.0",
      env,
    });
    expect(Object.keys((await h.rest.templates.get(made.id)).env).sort()).toEqual([
      "A",
      "B",
      "C",
      CREATE_MARK,
    ]);
    expect(made.outs.env).toEqual(env);
  });

  test("an update that grows the env into the mark's room drops the mark instead of failing", async () => {
    const provider = createEndpointProvider(h.context);
    const made = await checkAndCreate(provider, "grows", { templateId, env: { MODE: "a" } });
    const program = { __logicalName: "grows", templateId, env: envLeaving(10) };
    const checked = await provider.check(made.outs, program);
    expect(checked.failures).toEqual([]);
    const updated = await provider.update(made.id, made.outs, checked.inputs);
    expect(updated.outs.env).toEqual(program.env);
    const live = (await h.graphql.getEndpoint(made.id))?.env ?? [];
    expect(live.map(({ key }) => key).sort()).toEqual(["A", "B", "C"]);
  });

  test("a template's and a pod's update keep the mark while it fits, and drop it once the env grows into its room", async () => {
    const templates = createTemplateProvider(h.context);
    const pods = createPodProvider(h.context);
    const cases = [
      {
        provider: templates,
        program: { __logicalName: "tgrow", imageName: "runpodkit/echo:1.0" },
        live: async (id: string) => (await h.rest.templates.get(id)).env,
      },
      {
        provider: pods,
        program: { __logicalName: "pgrow", ...POD },
        live: async (id: string) => (await h.rest.pods.get(id)).env ?? {},
      },
    ];
    for (const { provider, program, live } of cases) {
      const created = await provider.check({}, { ...program, env: { MODE: "a" } });
      const made = await provider.create(created.inputs);
      // A small change: the mark stays, outside the outputs.
      const small = await provider.check(made.outs, { ...program, env: { MODE: "b" } });
      const kept = await provider.update(made.id, made.outs, small.inputs);
      expect(kept.outs.env).toEqual({ MODE: "b" });
      expect(Object.keys(await live(made.id)).sort()).toEqual(["MODE", CREATE_MARK]);
      // A refresh reads it as it was applied: the mark is no drift.
      const read: { props: Record<string, unknown>; inputs?: Record<string, unknown> } = await provider.read(
        made.id,
        kept.outs,
      );
      expect(read.props.env).toEqual({ MODE: "b" });
      expect(read.inputs?.env).toEqual({ MODE: "b" });
      // Grown into the mark's room: the program's env is applied, the mark dropped.
      const full = envLeaving(10);
      const grown = await provider.check(kept.outs, { ...program, env: full });
      expect(grown.failures).toEqual([]);
      const updated = await provider.update(made.id, kept.outs, grown.inputs);
      expect(updated.outs.env).toEqual(full);
      expect(Object.keys(await live(made.id)).sort()).toEqual(["A", "B", "C"]);
    }
  });
});

describe("a program that sets RUNPODKIT_CREATE_MARK itself", () => {
  const env = { MODE: "a", [CREATE_MARK]: "mine" };
  const failure = {
    property: `env.${CREATE_MARK}`,
    reason: `env.${CREATE_MARK}: is reserved for runpodkit, which sets it to a random value when it creates a resource of a generated name (to find its own after a lost answer); rename the key`,
  };

  test("check refuses the key on an endpoint, a pod and a template, named or not, before any call", async () => {
    const before = h.apiRequests();
    const checks = [
      createEndpointProvider(h.context).check({}, { __logicalName: "own", templateId, env }),
      createEndpointProvider(h.context).check({}, { __logicalName: "own", name: "own", templateId, env }),
      createPodProvider(h.context).check({}, { __logicalName: "own", ...POD, env }),
      createTemplateProvider(h.context).check({}, { __logicalName: "own", imageName: "img:1", env }),
    ];
    for (const { failures } of await Promise.all(checks)) expect(failures).toEqual([failure]);
    expect(h.apiRequests()).toBe(before);
  });
});
