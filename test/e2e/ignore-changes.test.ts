import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { LocalStack } from "../../engine/engine";
import { recordAsDesired, toSaveInput } from "../../provider/endpoint";
import { type FixtureStack, openFixtureStack } from "./support/fixture-stack";
import type { ServiceFixture } from "./support/service";

const FIXTURE = join(__dirname, "fixtures", "ignore-changes");
const STEP_TIMEOUT = 180_000;
const TOKEN = "tok-applied-3f9c1e";
const VOLUME_NAME = "vol-secret-8d21aa";

describe("ignoreChanges on an Endpoint, through the engine", () => {
  let fixture: FixtureStack | undefined;
  let svc: ServiceFixture;
  let stack: LocalStack;
  let endpointId: string;

  const live = () => {
    const record = svc.endpoint(endpointId);
    return {
      idleTimeout: record?.idleTimeout,
      scalerValue: record?.scalerValue,
      workersMax: record?.workersMax,
      env: record?.env,
    };
  };

  beforeAll(async () => {
    fixture = await openFixtureStack(FIXTURE, {
      token: { value: TOKEN, secret: true },
      volumeName: { value: VOLUME_NAME, secret: true },
    });
    ({ svc, stack } = fixture);
    endpointId = String((await stack.up()).outputs.endpointId?.value);
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test(
    "an update of another field keeps the ignored fields' live values, and the next run has nothing to do",
    async () => {
      // An operator scales the endpoint and rotates its token elsewhere.
      const record = await svc.graphql.getEndpoint(endpointId);
      if (record === null) throw new Error(`endpoint ${endpointId} is missing`);
      const current = recordAsDesired(record);
      await svc.graphql.saveEndpoint(
        toSaveInput({ ...current, scalerValue: 9, workersMax: 7, env: { TOKEN: "rotated" } }, endpointId),
      );
      // The program's own values of the ignored fields change too: still nothing to do.
      stack.setConfig("scalerValue", { value: "6" });
      stack.setConfig("workersMax", { value: "5" });
      stack.setConfig("token", { value: "tok-new", secret: true });
      expect((await stack.preview()).steps.filter((s) => s.op !== "same")).toEqual([]);

      stack.setConfig("idleTimeout", { value: "30" });
      const up = await stack.up();
      expect(up.steps.filter((s) => s.op !== "same").map((s) => [s.op, s.keys])).toEqual([
        ["update", ["idleTimeout"]],
      ]);
      expect(live()).toEqual({
        idleTimeout: 30,
        scalerValue: 9,
        workersMax: 7,
        env: { TOKEN: "rotated" },
      });
      expect((await stack.up()).changes).toEqual({ same: 4 });
      // A refresh reads the live values; ignored, they still cause no change.
      await stack.refresh();
      expect((await stack.up()).changes).toEqual({ same: 4 });
      expect(live()).toEqual({
        idleTimeout: 30,
        scalerValue: 9,
        workersMax: 7,
        env: { TOKEN: "rotated" },
      });
      // The applied inputs the provider keeps hold env: the state stores them encrypted.
      const state = await stack.exportState();
      expect(state).toContain("__runpodkitApplied");
      expect(state.includes(TOKEN) || state.includes("rotated")).toBe(false);
      // The volume has no secret field, yet its secret name is sealed in the applied copy as well.
      expect(state).not.toContain(VOLUME_NAME);
    },
    STEP_TIMEOUT,
  );
  test(
    "an update that overwrites a field changed outside Pulumi is logged as a warning through the engine",
    async () => {
      // An operator sets idleTimeout elsewhere; the program then sets its own value: the program's wins.
      const record = await svc.graphql.getEndpoint(endpointId);
      if (record === null) throw new Error(`endpoint ${endpointId} is missing`);
      await svc.graphql.saveEndpoint(
        toSaveInput({ ...recordAsDesired(record), idleTimeout: 45 }, endpointId),
      );
      stack.setConfig("idleTimeout", { value: "60" });
      const up = await stack.up();
      expect(live().idleTimeout).toBe(60);
      // The provider host is given the engine's address, as the CLI gives its own: the warning arrives
      // through the Engine Log RPC with severity warning, not as the host's printed output.
      const warnings = up.logs.filter((entry) => entry.message.includes("overwrote"));
      expect(warnings.map((entry) => [entry.source, entry.severity])).toEqual([["program", "warning"]]);
      expect(warnings[0]?.message).toContain("idleTimeout");
      expect(
        up.logs.filter((entry) => entry.source === "provider" && entry.message.includes("overwrote")),
      ).toEqual([]);
    },
    STEP_TIMEOUT,
  );
});

describe("ignoreChanges on one env key (a nested path), through the engine", () => {
  let fixture: FixtureStack | undefined;
  let svc: ServiceFixture;
  let stack: LocalStack;
  let templateId: string;
  let endpointId: string;

  const liveEnv = async () => ({
    template: (await svc.rest.templates.get(templateId)).env,
    endpoint: svc.endpoint(endpointId)?.env,
  });

  beforeAll(async () => {
    fixture = await openFixtureStack(join(__dirname, "fixtures", "ignore-nested"), {
      token: { value: TOKEN, secret: true },
    });
    ({ svc, stack } = fixture);
    const { outputs } = await stack.up();
    templateId = String(outputs.templateId?.value);
    endpointId = String(outputs.endpointId?.value);
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test(
    "an update of another env key keeps the ignored key's value set elsewhere, and the next run has nothing to do",
    async () => {
      // An operator rotates TOKEN on both resources; the program's own TOKEN changes too (ignored).
      await svc.rest.templates.update(templateId, { env: { TOKEN: "rotated", MODE: "fast" } });
      const record = await svc.graphql.getEndpoint(endpointId);
      if (record === null) throw new Error(`endpoint ${endpointId} is missing`);
      await svc.graphql.saveEndpoint(
        toSaveInput({ ...recordAsDesired(record), env: { TOKEN: "rotated", MODE: "fast" } }, endpointId),
      );
      stack.setConfig("token", { value: "tok-new", secret: true });
      expect((await stack.preview()).steps.filter((s) => s.op !== "same")).toEqual([]);

      stack.setConfig("mode", { value: "safe" });
      const up = await stack.up();
      expect(up.steps.filter((s) => s.op !== "same").map((s) => [s.op, s.keys])).toEqual([
        ["update", ["env"]],
        ["update", ["env"]],
      ]);
      // The operator's full save above replaced the whole env, the create's mark (CREATE_MARK) with it.
      const rotated = { TOKEN: "rotated", MODE: "safe" };
      expect(await liveEnv()).toEqual({ template: rotated, endpoint: rotated });
      expect((await stack.up()).changes).toEqual({ same: 3 });
      await stack.refresh();
      expect((await stack.up()).changes).toEqual({ same: 3 });
      expect(await liveEnv()).toEqual({ template: rotated, endpoint: rotated });
    },
    STEP_TIMEOUT,
  );
});

describe('ignoreChanges: ["gpuIds"] on an Endpoint whose GPU types were set through REST, through the engine', () => {
  let fixture: FixtureStack | undefined;
  let svc: ServiceFixture;
  let stack: LocalStack;
  let endpointId: string;

  beforeAll(async () => {
    fixture = await openFixtureStack(join(__dirname, "fixtures", "ignore-gpu"));
    ({ svc, stack } = fixture);
    endpointId = String((await stack.up()).outputs.endpointId?.value);
  }, 300_000);

  afterAll(async () => {
    await fixture?.close();
  });

  test(
    "an update of another field and a refresh keep the operator's GPU types; preview and up keep passing",
    async () => {
      // An operator picks GPU types no pool describes (gpuIds reads "").
      await svc.rest.endpoints.update(endpointId, { gpuTypeIds: ["NVIDIA B200"] });
      stack.setConfig("idleTimeout", { value: "30" });
      const up = await stack.up();
      expect(up.steps.filter((s) => s.op !== "same").map((s) => [s.op, s.keys])).toEqual([
        ["update", ["idleTimeout"]],
      ]);
      expect(await svc.rest.endpoints.get(endpointId)).toMatchObject({
        idleTimeout: 30,
        gpuTypeIds: ["NVIDIA B200"],
      });
      // The refresh stores gpuIds "" in the inputs; ignoreChanges carries it into the next check.
      await stack.refresh();
      expect((await stack.preview()).steps.filter((s) => s.op !== "same")).toEqual([]);
      stack.setConfig("idleTimeout", { value: "40" });
      await stack.up();
      expect(await svc.rest.endpoints.get(endpointId)).toMatchObject({
        idleTimeout: 40,
        gpuTypeIds: ["NVIDIA B200"],
      });
      expect((await stack.up()).changes).toEqual({ same: 3 });
      // A replacement is a new endpoint: it is checked with the program's inputs, as Pulumi does
      // (goal.Properties), not the "" ignoreChanges carried, which check refuses.
      stack.setConfig("replaceOnIdle", { value: "true" });
      stack.setConfig("idleTimeout", { value: "50" });
      const replaced = await stack.up();
      expect(replaced.steps.filter((s) => s.op !== "same").map((s) => [s.op, s.keys])).toEqual([
        ["replace", ["idleTimeout"]],
      ]);
      const newId = String(replaced.outputs.endpointId?.value);
      expect(newId).not.toBe(endpointId);
      const created = await svc.rest.endpoints.get(newId);
      expect(created).toMatchObject({ idleTimeout: 50 });
      expect(created.gpuTypeIds).not.toContain("NVIDIA B200");
    },
    STEP_TIMEOUT,
  );
});
