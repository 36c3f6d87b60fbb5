import { resolve } from "node:path";
import type { BrowserContext } from "playwright-core";
import { accountIdOf } from "../../service/edge/auth";
import type { EndpointRecord } from "../../service/management/model/endpoint";
import { type TestService, withService } from "../helpers/service";

/** One job through the job API's /runsync, as a client of the console's service sends it. */
export async function runsyncOn(
  service: TestService,
  endpointId: string,
  input: object,
): Promise<{ id: string; status: string }> {
  const reply = await fetch(`${service.queueUrl}/v2/${endpointId}/runsync`, {
    method: "POST",
    headers: { authorization: service.apiKey, "content-type": "application/json" },
    body: JSON.stringify({ input }),
  });
  return (await reply.json()) as { id: string; status: string };
}

/** The console tests' service settings: workers start at once, their output kept off the test's terminal. */
export function consoleConfig(handlers: Record<string, string>) {
  return { jobs: { coldStartMs: 0, flashBootColdStartMs: 0, workerOutput: "ignore" as const, handlers } };
}

/** The console tests' service (consoleConfig), in memory. */
export function consoleService(handlers: Record<string, string>): Promise<TestService> {
  return withService({ config: consoleConfig(handlers) });
}

/** The app handler (test/console/fixtures/app-handler.ts) under the image the "orders" endpoint runs. */
export const ORDERS_HANDLER = { "acme/orders": resolve("test/console/fixtures/app-handler.ts") };

/** The "orders" template and endpoint (one worker at most), with one job already completed on it. */
export async function ordersEndpoint(service: TestService): Promise<EndpointRecord> {
  const account = accountIdOf(service.apiKey);
  const template = service.management.templates.create(account, {
    name: "orders",
    imageName: "acme/orders",
    isServerless: true,
  });
  const endpoint = service.management.endpoints.create(account, {
    name: "orders",
    templateId: template.id,
    workersMin: 0,
    workersMax: 1,
    idleTimeout: 60,
  });
  const first = await runsyncOn(service, endpoint.id, { order: 1 });
  if (first.status !== "COMPLETED") throw new Error(`the first orders job ended ${first.status}`);
  return endpoint;
}

/** The page script that signs a console tab in with `apiKey` before the console's own script runs. */
export function signInScript(apiKey: string): string {
  return `sessionStorage.setItem("runpodkit.apiKey", ${JSON.stringify(apiKey)});`;
}

/** Every page `context` opens from now on starts signed in with `apiKey`. */
export async function signIn(context: BrowserContext, apiKey: string): Promise<void> {
  await context.addInitScript({ content: signInScript(apiKey) });
}
