/**
 * The quickstart example's life, asserted on the service after every step: preview, up, a no-op up,
 * an in-place update, refresh after an out-of-band change, a replacement, and destroy of a running
 * endpoint (scaled to zero first).
 */
import { expect } from "vitest";
import { PROJECT_ROOT } from "../../../engine/package";
import { holdPort } from "../../helpers/tcp-relay";
import { outputString, type Scenario } from "./scenario";

const IMAGE = "runpodkit/echo:1.0";

export const quickstartScenario: Scenario = {
  example: "quickstart",
  config: () => ({}),
  steps: [
    {
      name: "preview plans the template and the endpoint and creates nothing on the service",
      async run({ driver, svc }) {
        const changes = await driver.preview();
        expect(changes).toEqual({ create: 3 });
        expect(await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).toEqual([]);
        expect(await svc.rest.endpoints.list()).toEqual([]);
      },
    },
    {
      name: "up creates the template and the endpoint as declared",
      async run(ctx) {
        const { outputs, changes } = await ctx.driver.up();
        expect(changes).toEqual({ create: 3 });
        ctx.outputs = outputs;
        const endpointId = outputString(outputs, "endpointId");
        const templateId = outputString(outputs, "templateId");
        expect(outputs.endpointUrl).toEqual({
          value: `${ctx.svc.service.queueUrl}/v2/${endpointId}`,
          secret: false,
        });
        expect(await ctx.svc.rest.endpoints.get(endpointId)).toMatchObject({
          templateId,
          workersMin: 0,
          workersMax: 2,
          idleTimeout: 5,
          env: { LOG_LEVEL: "info" },
        });
        expect(ctx.svc.endpoint(endpointId)?.gpuIds).toBe("AMPERE_16,AMPERE_24");
        expect(await ctx.svc.rest.templates.get(templateId)).toMatchObject({
          imageName: IMAGE,
          category: "NVIDIA",
          isServerless: true,
          containerDiskInGb: 10,
          env: { GREETING: "hello" },
        });
      },
    },
    {
      name: "a second up with nothing changed writes nothing",
      async run({ driver, svc, outputs }) {
        const endpointId = outputString(outputs, "endpointId");
        const before = await svc.rest.endpoints.get(endpointId);
        const writes = driver.providerWrites();
        const events = svc.events.length;
        const { changes } = await driver.up();
        expect(changes).toEqual({ same: 3 });
        if (writes !== undefined) expect(driver.providerWrites()).toBe(writes);
        expect(svc.events.length).toBe(events);
        expect(await svc.rest.endpoints.get(endpointId)).toEqual(before);
      },
    },
    {
      name: "new workersMax and env value are previewed, then applied in place",
      async run(ctx) {
        const endpointId = outputString(ctx.outputs, "endpointId");
        const before = await ctx.svc.rest.endpoints.get(endpointId);
        await ctx.driver.setConfig("workersMax", { value: "4" });
        await ctx.driver.setConfig("logLevel", { value: "debug" });
        expect(await ctx.driver.preview()).toEqual({ same: 2, update: 1 });
        expect(await ctx.svc.rest.endpoints.get(endpointId)).toEqual(before);

        const { outputs, changes } = await ctx.driver.up();
        expect(changes).toEqual({ same: 2, update: 1 });
        expect(outputString(outputs, "endpointId")).toBe(endpointId);
        const after = await ctx.svc.rest.endpoints.get(endpointId);
        expect(after).toMatchObject({
          workersMax: 4,
          env: { LOG_LEVEL: "debug" },
          templateId: before.templateId,
        });
        // An env change is a new release of the endpoint.
        expect(after.version).toBeGreaterThan(before.version);
        ctx.outputs = outputs;
      },
    },
    {
      name: "refresh picks up a change made outside Pulumi; the next up restores the program's value",
      async run({ driver, svc, outputs }) {
        const endpointId = outputString(outputs, "endpointId");
        await svc.rest.endpoints.update(endpointId, { workersMax: 7 });
        const refreshed = await driver.refresh();
        expect(refreshed.update).toBe(1);
        expect(await driver.preview()).toEqual({ same: 2, update: 1 });

        expect((await driver.up()).changes).toEqual({ same: 2, update: 1 });
        expect((await svc.rest.endpoints.get(endpointId)).workersMax).toBe(4);
      },
    },
    {
      name: "a new template category replaces the template and moves the endpoint to it in place",
      async run(ctx) {
        const endpointId = outputString(ctx.outputs, "endpointId");
        const oldTemplate = outputString(ctx.outputs, "templateId");
        await ctx.driver.setConfig("category", { value: "AMD" });
        const { outputs, changes } = await ctx.driver.up();
        expect(changes).toEqual({ same: 1, replace: 1, update: 1 });
        const newTemplate = outputString(outputs, "templateId");
        expect(newTemplate).not.toBe(oldTemplate);
        expect(outputString(outputs, "endpointId")).toBe(endpointId);
        expect(await ctx.svc.rest.templates.get(newTemplate)).toMatchObject({
          category: "AMD",
          imageName: IMAGE,
        });
        await expect(ctx.svc.rest.templates.get(oldTemplate)).rejects.toMatchObject({ code: "NOT_FOUND" });
        expect((await ctx.svc.rest.endpoints.get(endpointId)).templateId).toBe(newTemplate);
        ctx.outputs = outputs;
      },
    },
    {
      name: "the API key appears nowhere in the state or the logs; secret env is encrypted",
      async run({ driver, svc }) {
        const state = await driver.exportState();
        // Booleans, so a failure never prints what it found.
        expect(state.includes(svc.apiKey)).toBe(false);
        expect(driver.logText().includes(svc.apiKey)).toBe(false);
        expect(state.includes('"ciphertext"')).toBe(true);
        expect(state.includes("LOG_LEVEL")).toBe(false);
      },
    },
    {
      name: "the provider code in the state loads the installed package by package path, not by a local path",
      async run({ driver }) {
        const state = await driver.exportState();
        expect(state).toContain("runpodkit/dist/provider/endpoint-provider");
        expect(state).toContain("runpodkit/dist/provider/template-provider");
        expect(state.includes(PROJECT_ROOT)).toBe(false);
      },
    },
    {
      name: "destroy scales a running endpoint to zero, then deletes it and the template",
      async run({ driver, svc, outputs }) {
        const endpointId = outputString(outputs, "endpointId");
        await driver.setConfig("workersMin", { value: "1" });
        expect((await driver.up()).changes).toEqual({ same: 2, update: 1 });
        expect((await svc.rest.endpoints.get(endpointId)).workersMin).toBe(1);

        const mark = svc.events.length;
        expect(await driver.destroy()).toEqual({ delete: 3 });
        const events = svc.events.slice(mark).filter((e) => e.endpointId === endpointId);
        expect(events.at(-1)).toEqual({ kind: "deleted", endpointId });
        expect(events.at(-2)).toEqual({ kind: "saved", endpointId, workersMin: 0, workersMax: 0 });
        expect(await svc.rest.endpoints.list()).toEqual([]);
        expect(await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).toEqual([]);
      },
    },
    {
      name: "up with a key the service does not know fails naming where the key comes from, never the key",
      async run({ driver, svc }) {
        const wrong = "rpk_not_this_services_key_0123456789";
        await driver.setConfig("runpodkit:apiKey", { value: wrong, secret: true });
        const failure = await driver.up().then(
          () => null,
          (error: unknown) => String(error instanceof Error ? error.message : error),
        );
        expect(failure).toContain("Unauthorized");
        expect(failure).toContain(
          "the service does not know this API key: check that the secret config runpodkit:apiKey (else the environment variable RUNPOD_API_KEY)",
        );
        // Booleans, so a failure never prints what it found.
        expect(failure?.includes(wrong)).toBe(false);
        expect(driver.logText().includes(wrong)).toBe(false);
        expect(await svc.rest.templates.list({ includeEndpointBoundTemplates: true })).toEqual([]);
      },
    },
    {
      name: "up against an address where no service runs fails saying so and what to check",
      async run({ driver, svc }) {
        // A port nothing listens on: the kernel refuses the connection at once. Held through the
        // deploy (a port released at once could go to another fork's server meanwhile).
        const closed = holdPort();
        const { port } = closed;
        await driver.setAllConfig({
          ...svc.stackConfig(),
          "runpodkit:restUrl": { value: `http://127.0.0.1:${port}/v1` },
        });
        const failure = await driver
          .up()
          .then(
            () => null,
            (error: unknown) => String(error instanceof Error ? error.message : error),
          )
          .finally(() => closed.close());
        expect(failure).toContain(`ECONNREFUSED 127.0.0.1:${port}`);
        expect(failure).toContain(
          "no service answered there: check that it runs (the local one: npm run serve, or runpodkit serve) and that the runpodkit:restUrl, graphqlUrl and queueUrl settings point at it",
        );
        expect(failure?.includes(svc.apiKey)).toBe(false);
      },
    },
  ],
};
