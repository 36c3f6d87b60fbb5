/**
 * The private-model example: a network volume, registry credentials whose password comes from a secret
 * config value, a private-image template and a model-caching endpoint on the volume. Then the
 * scenarios that matter for it: secrets kept out of state and logs, a no-op up, a volume moved to
 * another data center (replaced, the endpoint follows), and destroy leaving nothing behind.
 */
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { outputString, type Scenario } from "./scenario";

const registryPassword = `ghp_${randomBytes(18).toString("hex")}`;
const MODEL = "https://huggingface.co/Qwen/Qwen2.5-7B-Instruct";

export const privateModelScenario: Scenario = {
  example: "private-model",
  config: () => ({
    registryUsername: { value: "deploy-bot" },
    registryPassword: { value: registryPassword, secret: true },
  }),
  steps: [
    {
      name: "up creates the volume, the credentials, the private template and the endpoint using both",
      async run(ctx) {
        const { outputs, changes } = await ctx.driver.up();
        expect(changes).toEqual({ create: 5 });
        ctx.outputs = outputs;
        const endpointId = outputString(outputs, "endpointId");
        const volumeId = outputString(outputs, "volumeId");
        const registryAuthId = outputString(outputs, "registryAuthId");
        const templateId = outputString(outputs, "templateId");
        expect(outputs.jobUrl?.value).toBe(`${ctx.svc.service.queueUrl}/v2/${endpointId}`);

        expect(await ctx.svc.rest.networkVolumes.get(volumeId)).toMatchObject({
          size: 50,
          dataCenterId: "EU-RO-1",
        });
        // Next-gen storage, set through GraphQL (REST has no such field), reported back as an output.
        expect((await ctx.svc.graphql.listNetworkVolumes()).find((v) => v.id === volumeId)?.storageType).toBe(
          "VAST",
        );
        expect(outputs.storageType?.value).toBe("VAST");
        expect(await ctx.svc.rest.containerRegistryAuths.get(registryAuthId)).toMatchObject({
          id: registryAuthId,
          name: expect.stringMatching(/^ghcr/),
        });
        expect(await ctx.svc.rest.templates.get(templateId)).toMatchObject({
          imageName: "ghcr.io/acme/llm-worker:2.1",
          containerRegistryAuthId: registryAuthId,
          volumeMountPath: "/runpod-volume",
          // dockerArgs read with shell quoting into the argv.
          dockerStartCmd: ["python", "-u", "/app/serve.py", "--model-dir", "/runpod-volume/models"],
        });
        expect((await ctx.svc.graphql.listTemplates()).find((t) => t.id === templateId)).toMatchObject({
          startSsh: true,
          startJupyter: false,
          dockerArgs: "python -u /app/serve.py --model-dir /runpod-volume/models",
        });
        expect(await ctx.svc.rest.endpoints.get(endpointId)).toMatchObject({
          templateId,
          networkVolumeId: volumeId,
          flashboot: true,
          executionTimeoutMs: 300_000,
          env: { MAX_MODEL_LEN: "8192" },
        });
        expect(ctx.svc.endpoint(endpointId)).toMatchObject({
          modelName: MODEL,
          gpuIds: "AMPERE_48,ADA_48_PRO",
        });
      },
    },
    {
      name: "the registry password and the API key appear nowhere in the state or the logs",
      async run({ driver, svc }) {
        const state = await driver.exportState();
        // Booleans, so a failure never prints what it found.
        expect(state.includes(registryPassword)).toBe(false);
        expect(state.includes(svc.apiKey)).toBe(false);
        expect(driver.logText().includes(registryPassword)).toBe(false);
        expect(driver.logText().includes(svc.apiKey)).toBe(false);
        expect(state.includes('"ciphertext"')).toBe(true);
      },
    },
    {
      name: "a second up with nothing changed writes nothing",
      async run({ driver, svc }) {
        const writes = driver.providerWrites();
        const events = svc.events.length;
        const { changes } = await driver.up();
        expect(changes).toEqual({ same: 5 });
        if (writes !== undefined) expect(driver.providerWrites()).toBe(writes);
        expect(svc.events.length).toBe(events);
      },
    },
    {
      name: "turning next-gen storage off shows the volume replaced in preview (storage cannot be converted)",
      async run({ driver, svc }) {
        const writes = driver.providerWrites();
        await driver.setConfig("nextGenStorage", { value: "false" });
        // The volume is replaced; the endpoint is updated to the new volume's id.
        expect(await driver.preview()).toEqual({ same: 3, replace: 1, update: 1 });
        if (writes !== undefined) expect(driver.providerWrites()).toBe(writes);
        await driver.setConfig("nextGenStorage", { value: "true" });
        expect(await driver.preview()).toEqual({ same: 5 });
        expect(await svc.rest.networkVolumes.list()).toHaveLength(1);
      },
    },
    {
      name: "a new data center replaces the volume; the endpoint moves to the new one; the old is deleted",
      async run(ctx) {
        const endpointId = outputString(ctx.outputs, "endpointId");
        const oldVolume = outputString(ctx.outputs, "volumeId");
        await ctx.driver.setConfig("dataCenterId", { value: "US-TX-3" });
        expect(await ctx.driver.preview()).toMatchObject({ replace: 1 });

        const { outputs, changes } = await ctx.driver.up();
        expect(changes).toEqual({ same: 3, replace: 1, update: 1 });
        const newVolume = outputString(outputs, "volumeId");
        expect(newVolume).not.toBe(oldVolume);
        expect(outputString(outputs, "endpointId")).toBe(endpointId);
        expect(await ctx.svc.rest.networkVolumes.get(newVolume)).toMatchObject({
          dataCenterId: "US-TX-3",
          size: 50,
        });
        expect(outputs.storageType?.value).toBe("VAST");
        await expect(ctx.svc.rest.networkVolumes.get(oldVolume)).rejects.toMatchObject({ code: "NOT_FOUND" });
        expect((await ctx.svc.rest.endpoints.get(endpointId)).networkVolumeId).toBe(newVolume);
        ctx.outputs = outputs;
      },
    },
    {
      name: "destroy removes every resource from the service",
      async run({ driver, svc }) {
        expect(await driver.destroy()).toEqual({ delete: 5 });
        expect(await svc.rest.endpoints.list()).toEqual([]);
        expect(await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).toEqual([]);
        expect(await svc.rest.networkVolumes.list()).toEqual([]);
        expect(await svc.rest.containerRegistryAuths.list()).toEqual([]);
      },
    },
  ],
};

export const hubReleaseScenario: Scenario = {
  example: "hub-release",
  config: () => ({ hubReleaseId: { value: "hub-release-vllm-2-7-0" } }),
  steps: [
    {
      name: "up deploys an endpoint from a preconfigured repository release",
      async run(ctx) {
        const { outputs, changes } = await ctx.driver.up();
        expect(changes).toEqual({ create: 3 });
        const endpointId = outputString(outputs, "endpointId");
        expect(outputs.hubReleaseId?.value).toBe("hub-release-vllm-2-7-0");
        expect(ctx.svc.endpoint(endpointId)).toMatchObject({
          hubReleaseId: "hub-release-vllm-2-7-0",
          workersMax: 1,
        });
      },
    },
    {
      name: "destroy removes it",
      async run({ driver, svc }) {
        expect(await driver.destroy()).toEqual({ delete: 3 });
        expect(await svc.rest.endpoints.list()).toEqual([]);
      },
    },
  ],
};
