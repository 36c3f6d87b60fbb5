/**
 * The secrets-cpu example: a Secret whose value comes from secret config, referenced from a CPU
 * endpoint's and a CPU pod's env. Shows the value staying out of every configuration, the state and
 * the logs; rotation in place; the pod stopped by config; the lookup output; destroy.
 */
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { CREATE_MARK } from "../../../provider/endpoint";
import { outputString, type Scenario } from "./scenario";

const token = `tok_${randomBytes(16).toString("hex")}`;
const rotated = `tok_${randomBytes(16).toString("hex")}`;

export const secretsCpuScenario: Scenario = {
  example: "secrets-cpu",
  config: () => ({ apiToken: { value: token, secret: true } }),
  steps: [
    {
      name: "up creates the secret, the CPU endpoint and the CPU pod, both referencing the secret by name",
      async run(ctx) {
        const { outputs, changes } = await ctx.driver.up();
        expect(changes).toEqual({ create: 5 });
        ctx.outputs = outputs;
        // No secretName: the provider names it after the resource, unique in the account.
        const name = outputString(outputs, "secretName");
        expect(name).toMatch(/^api-token-[0-9a-f]{7}$/);
        expect((await ctx.svc.graphql.listSecrets()).map((s) => s.name)).toEqual([name]);
        expect(outputs.cpuFlavors?.value).toEqual(expect.arrayContaining(["cpu3c", "cpu5c"]));
        const endpoint = ctx.svc.endpoint(outputString(outputs, "endpointId"));
        expect(endpoint).toMatchObject({ computeType: "CPU", instanceIds: ["cpu3c-2-4"] });
        expect(endpoint?.env).toEqual({
          API_TOKEN: `{{ RUNPOD_SECRET_${name} }}`,
          [CREATE_MARK]: expect.any(String),
        });
        const pod = await ctx.svc.rest.pods.get(outputString(outputs, "podId"));
        expect(pod).toMatchObject({ desiredStatus: "RUNNING", cpuFlavorId: "cpu3c" });
        expect(pod.env).toEqual({
          API_TOKEN: `{{ RUNPOD_SECRET_${name} }}`,
          [CREATE_MARK]: expect.any(String),
        });
        expect(outputs.podCostPerHr?.value).toBeGreaterThan(0);
      },
    },
    {
      name: "the secret's value is in no reply, no state and no log",
      async run({ driver, svc }) {
        const state = await driver.exportState();
        expect(state.includes(token)).toBe(false);
        expect(driver.logText().includes(token)).toBe(false);
        const pods = JSON.stringify(await svc.rest.pods.list());
        const endpoints = JSON.stringify(await svc.rest.endpoints.list());
        expect(pods.includes(token) || endpoints.includes(token)).toBe(false);
      },
    },
    {
      // Before, the fixed default name "api_token" made the second stack's create fail: secret names
      // are unique in the account.
      name: "a second stack of the program (prod beside dev) deploys in the same account with its own secret",
      async run({ openStack, svc, outputs }) {
        const prod = await openStack("prod");
        await prod.setAllConfig({ ...svc.stackConfig(), apiToken: { value: rotated, secret: true } });
        const up = await prod.up();
        expect(up.changes).toEqual({ create: 5 });
        const devName = outputString(outputs, "secretName");
        const prodName = outputString(up.outputs, "secretName");
        expect(prodName).not.toBe(devName);
        expect(svc.endpoint(outputString(up.outputs, "endpointId"))?.env).toEqual({
          API_TOKEN: `{{ RUNPOD_SECRET_${prodName} }}`,
          [CREATE_MARK]: expect.any(String),
        });
        expect((await svc.graphql.listSecrets()).map((s) => s.name).sort()).toEqual(
          [devName, prodName].sort(),
        );
        expect(await prod.destroy()).toEqual({ delete: 5 });
        expect((await svc.graphql.listSecrets()).map((s) => s.name)).toEqual([devName]);
      },
    },
    {
      name: "a new value rotates the secret in place; stopping the pod by config updates it in place",
      async run({ driver, svc, outputs }) {
        await driver.setConfig("apiToken", { value: rotated, secret: true });
        await driver.setConfig("podStopped", { value: "true" });
        const { changes } = await driver.up();
        expect(changes).toMatchObject({ update: 2 });
        expect((await svc.rest.pods.get(outputString(outputs, "podId"))).desiredStatus).toBe("EXITED");
        expect((await driver.exportState()).includes(rotated)).toBe(false);
      },
    },
    {
      name: "secretName set in config replaces the secret under that name; the endpoint and the pod follow it",
      async run(ctx) {
        await ctx.driver.setConfig("secretName", { value: "upstream_token" });
        const { outputs, changes } = await ctx.driver.up();
        expect(changes).toEqual({ same: 2, replace: 1, update: 2 });
        expect(outputs.secretName?.value).toBe("upstream_token");
        const reference = { API_TOKEN: "{{ RUNPOD_SECRET_upstream_token }}" };
        expect(ctx.svc.endpoint(outputString(outputs, "endpointId"))?.env).toEqual({
          ...reference,
          [CREATE_MARK]: expect.any(String),
        });
        // The update of the pod's env keeps its create's mark, as it keeps any key set elsewhere.
        expect((await ctx.svc.rest.pods.get(outputString(outputs, "podId"))).env).toEqual({
          ...reference,
          [CREATE_MARK]: expect.any(String),
        });
        // The old name is gone from the account.
        expect((await ctx.svc.graphql.listSecrets()).map((s) => s.name)).toEqual(["upstream_token"]);
        ctx.outputs = outputs;
      },
    },
    {
      name: "destroy removes the pod, the endpoint, the template and the secret",
      async run({ driver, svc, outputs }) {
        expect(await driver.destroy()).toEqual({ delete: 5 });
        expect(await svc.graphql.listSecrets()).toEqual([]);
        await expect(svc.rest.pods.get(outputString(outputs, "podId"))).rejects.toMatchObject({
          code: "NOT_FOUND",
        });
        expect(await svc.rest.endpoints.list()).toEqual([]);
        expect(await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).toEqual([]);
      },
    },
  ],
};
