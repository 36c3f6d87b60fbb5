import { expect } from "vitest";
import { type CheckFailure, checkInputs, type InputSpec, type Props } from "../../provider/check";
import { createManagementApi } from "../../provider/clients";
import type { ProviderSettings } from "../../provider/config";
import type { ManagementApi, ProviderContext } from "../../provider/context";
import type { Pause } from "../../provider/retry";
import { GraphQLClient } from "../../sdk/graphql";
import { RestClient } from "../../sdk/rest";
import { ManualClock } from "../../service/clock";
import { type TestService, withService } from "../helpers/service";

/** Time that passes only when the provider sleeps; `onSleep` lets a test act "meanwhile". */
export interface VirtualPause extends Pause {
  slept: number[];
  onSleep: ((ms: number) => Promise<void> | void) | undefined;
}

export function virtualPause(): VirtualPause {
  let now = 0;
  const pause: VirtualPause = {
    slept: [],
    onSleep: undefined,
    now: () => now,
    sleep: async (ms) => {
      pause.slept.push(ms);
      now += ms;
      await pause.onSleep?.(ms);
    },
  };
  return pause;
}

export interface Harness {
  service: TestService;
  settings: ProviderSettings;
  context: ProviderContext;
  pause: VirtualPause;
  /** Clients of the service for arranging and observing, apart from the provider's own. */
  rest: RestClient;
  graphql: GraphQLClient;
  /** How many times a provider asked for its clients (check and diff must not). */
  apiRequests: () => number;
  /** Replaces the provider's clients (to act between two of its calls, as another writer would). */
  intercept: (wrap: (api: ManagementApi) => ManagementApi) => void;
  close(): Promise<void>;
}

/**
 * The service in-process (its clock manual, so nothing happens on its own) and a provider context
 * pointing at it, with virtual waits.
 */
export async function startHarness(options: { deleteTimeoutMs?: number } = {}): Promise<Harness> {
  const service = await withService({ clock: new ManualClock() });
  const settings: ProviderSettings = {
    apiKey: service.apiKey,
    restUrl: service.restUrl,
    graphqlUrl: service.graphqlUrl,
    queueUrl: service.queueUrl,
    deleteTimeoutMs: options.deleteTimeoutMs ?? 60_000,
  };
  const pause = virtualPause();
  const real = createManagementApi(settings);
  let current = real;
  let requests = 0;
  const context: ProviderContext = {
    settings: () => settings,
    api: () => {
      requests++;
      return current;
    },
    pause,
  };
  const rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
  const graphql = new GraphQLClient({ apiKey: service.apiKey, baseUrl: service.graphqlUrl });
  return {
    service,
    settings,
    context,
    pause,
    rest,
    graphql,
    apiRequests: () => requests,
    intercept: (wrap) => {
      current = wrap(real);
    },
    close: async () => {
      await Promise.all([rest.close(), graphql.close()]);
      await service.close();
    },
  };
}

/** The name check generates for a resource of this logical name and these inputs (no old inputs). */
export function generatedNameOf(spec: InputSpec, logicalName: string, news: Props = {}): string {
  const name = checkInputs(spec, undefined, { ...news, __logicalName: logicalName }).inputs.name;
  expect(name).toMatch(new RegExp(`^${logicalName}-[0-9a-f]{7}$`));
  return String(name);
}

/** The part of a provider that creates a resource. */
interface Creating {
  check(olds: Props, news: Props): Promise<{ inputs: Props; failures: CheckFailure[] }>;
  create(inputs: Props): Promise<{ id: string; outs: Props }>;
}

/** check then create, as the engine does for a new resource; the check must pass. */
export async function checkAndCreate(provider: Creating, logicalName: string, news: Props) {
  const checked = await provider.check({}, { __logicalName: logicalName, ...news });
  expect(checked.failures).toEqual([]);
  return { inputs: checked.inputs, ...(await provider.create(checked.inputs)) };
}

/** Asserts a value is plain JSON all the way down: no undefined, function, Date or class instance. */
export function expectPlainJson(value: unknown, path = "outputs"): void {
  if (value === null || typeof value === "string" || typeof value === "boolean") return;
  if (typeof value === "number") {
    expect(Number.isFinite(value), path).toBe(true);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      expectPlainJson(item, `${path}[${i}]`);
    });
    return;
  }
  expect(typeof value, path).toBe("object");
  expect(Object.getPrototypeOf(value), `${path} is a plain object`).toBe(Object.prototype);
  for (const [key, item] of Object.entries(value as Props)) {
    expect(item, `${path}.${key}`).not.toBeUndefined();
    expectPlainJson(item, `${path}.${key}`);
  }
}

/** The input part of outputs, as the engine would keep them for the next check. */
export function inputsOf(outputs: Props, fields: readonly string[]): Props {
  const out: Props = {};
  for (const field of [...fields, "__logicalName", "__autoNamed"]) {
    if (outputs[field] !== undefined && outputs[field] !== null) out[field] = outputs[field];
  }
  return out;
}
