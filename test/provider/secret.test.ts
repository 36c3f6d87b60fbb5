import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { inputFields } from "../../provider/check";
import { createSecretProvider, secretSpec } from "../../provider/secret";
import {
  checkAndCreate,
  expectPlainJson,
  generatedNameOf,
  type Harness,
  inputsOf,
  startHarness,
} from "./support";

let h: Harness;
let provider: ReturnType<typeof createSecretProvider>;
let valueWrites: string[];

beforeEach(async () => {
  h = await startHarness({ deleteTimeoutMs: 20_000 });
  provider = createSecretProvider(h.context);
  valueWrites = [];
  h.intercept((api) => ({
    ...api,
    secrets: {
      ...api.secrets,
      create: (input) => {
        valueWrites.push(input.value);
        return api.secrets.create(input);
      },
      updateValue: (input) => {
        valueWrites.push(input.value);
        return api.secrets.updateValue(input);
      },
    },
  }));
});
afterEach(async () => {
  await h.close();
});

const fields = inputFields(secretSpec);
const HF = generatedNameOf(secretSpec, "hf", {});
const up = (news: Record<string, unknown>) => checkAndCreate(provider, "hf", news);

describe("Secret check", () => {
  test("refuses names the service refuses and empty values, naming each, without a call", async () => {
    const { failures } = await provider.check({}, { __logicalName: "hf", name: "RUNPOD_X", value: "" });
    expect(failures.map((f) => f.property).sort()).toEqual(["name", "value"]);
    const bad = await provider.check({}, { __logicalName: "hf", name: "1abc", value: "v" });
    expect(bad.failures.map((f) => f.property)).toEqual(["name"]);
    expect(h.apiRequests()).toBe(0);
  });
});

describe("Secret lifecycle", () => {
  test("create: the service keeps the value write-only; the outputs keep it and give the reference", async () => {
    const created = await up({ value: "hf_abc123", description: "Hugging Face token" });
    expect(created.outs).toMatchObject({
      name: HF,
      value: "hf_abc123",
      description: "Hugging Face token",
      reference: `{{ RUNPOD_SECRET_${HF} }}`,
    });
    expectPlainJson(created.outs);
    const listed = await h.graphql.listSecrets();
    expect(listed).toEqual([
      expect.objectContaining({ id: created.id, name: HF, description: "Hugging Face token" }),
    ]);
    expect(JSON.stringify(listed).includes("hf_abc123")).toBe(false);

    const next = await provider.check(inputsOf(created.outs, fields), {
      __logicalName: "hf",
      value: "hf_abc123",
      description: "Hugging Face token",
    });
    expect(await provider.diff(created.id, created.outs, next.inputs)).toEqual({
      changes: false,
      replaces: [],
      deleteBeforeReplace: false,
    });
  });

  test("a new value or description updates in place; a new name replaces", async () => {
    const created = await up({ name: "hf_token", value: "v1" });
    const rotated = (
      await provider.check(created.inputs, { name: "hf_token", value: "v2", description: "rotated" })
    ).inputs;
    expect(await provider.diff(created.id, created.outs, rotated)).toMatchObject({
      changes: true,
      replaces: [],
    });
    const updated = await provider.update(created.id, created.outs, rotated);
    expect(updated.outs).toMatchObject({ value: "v2", description: "rotated" });
    expect(valueWrites).toEqual(["v1", "v2"]);
    expect((await h.graphql.listSecrets())[0]).toMatchObject({ id: created.id, description: "rotated" });

    // A description-only change does not rewrite the value.
    const described = (await provider.check(rotated, { name: "hf_token", value: "v2", description: "again" }))
      .inputs;
    await provider.update(created.id, updated.outs, described);
    expect(valueWrites).toEqual(["v1", "v2"]);

    const renamed = (await provider.check(described, { name: "hf_token_2", value: "v2" })).inputs;
    expect(await provider.diff(created.id, updated.outs, renamed)).toMatchObject({ replaces: ["name"] });
  });

  test("read keeps the value it cannot see, reports a changed description, and a blank id once deleted", async () => {
    const created = await up({ value: "v1" });
    await h.graphql.updateSecretDescription({ id: created.id, description: "edited elsewhere" });
    const read = await provider.read(created.id, created.outs);
    expect(read.props).toMatchObject({ value: "v1", description: "edited elsewhere" });
    await provider.delete(created.id, created.outs);
    expect(await h.graphql.listSecrets()).toEqual([]);
    expect(await provider.read(created.id, created.outs)).toEqual({ id: "", props: {} });
  });

  test("adoption sets the value of the existing secret, which cannot be read to compare", async () => {
    const existing = await h.graphql.createSecret({ name: "shared", value: "old" });
    const adopted = await up({ name: "shared", value: "new", adoptId: existing.id });
    expect(adopted.id).toBe(existing.id);
    expect(valueWrites).toEqual(["new"]);
  });
});
