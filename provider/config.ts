import { z } from "zod";
import { ProviderError } from "./errors";

/** The real service's addresses, used when neither config nor environment names another. */
export const DEFAULT_URLS = {
  restUrl: "https://rest.runpod.io/v1",
  graphqlUrl: "https://api.runpod.io/graphql",
  queueUrl: "https://api.runpod.ai",
} as const;

export const DEFAULT_DELETE_TIMEOUT_SECONDS = 300;

/**
 * Pulumi config keys (namespace `runpodkit`) and their environment fallbacks. Pulumi config wins;
 * the environment serves programs that set no config (and CI).
 */
export const CONFIG_KEYS = {
  apiKey: { key: "runpodkit:apiKey", env: "RUNPOD_API_KEY", secret: true },
  restUrl: { key: "runpodkit:restUrl", env: "RUNPODKIT_REST_URL", secret: false },
  graphqlUrl: { key: "runpodkit:graphqlUrl", env: "RUNPODKIT_GRAPHQL_URL", secret: false },
  queueUrl: { key: "runpodkit:queueUrl", env: "RUNPODKIT_QUEUE_URL", secret: false },
  deleteTimeout: { key: "runpodkit:deleteTimeout", env: "RUNPODKIT_DELETE_TIMEOUT", secret: false },
} as const;

export type SettingName = keyof typeof CONFIG_KEYS;

export interface ProviderSettings {
  apiKey: string;
  restUrl: string;
  graphqlUrl: string;
  queueUrl: string;
  /**
   * How long a delete waits out refusals (an endpoint still scaling down, a template or volume still
   * in use) before it fails, in milliseconds.
   */
  deleteTimeoutMs: number;
}

/** What Pulumi's provider host hands to `configure`: a lookup of the stack's config. */
export interface ConfigLookup {
  get(key: string): string | undefined;
}

const Url = z.url({ protocol: /^https?$/ });
const Seconds = z.coerce.number().int().min(0).max(86_400);

/** Builds the settings from Pulumi config, then the environment, then the defaults. */
export function resolveSettings(config: ConfigLookup | undefined, env: NodeJS.ProcessEnv): ProviderSettings {
  /**
   * The value and where it came from: a CI job that sets only the environment variable must be told
   * about that variable, not about a config key it never set.
   */
  const setting = (name: SettingName): { value: string; from: string } | undefined => {
    const { key, env: variable } = CONFIG_KEYS[name];
    const fromConfig = config?.get(key);
    if (fromConfig !== undefined && fromConfig !== "") return { value: fromConfig, from: key };
    const fromEnv = env[variable];
    return fromEnv === undefined || fromEnv === ""
      ? undefined
      : { value: fromEnv, from: `the environment variable ${variable} (read since ${key} is not set)` };
  };
  const keySetting = setting("apiKey");
  // A secret pasted with its line end (or a key file's newline) is the same key: keys hold no
  // whitespace, and a newline in the Authorization header fails every REST call as "no service answered".
  const apiKey = keySetting?.value.trim() || undefined;
  if (keySetting !== undefined && apiKey !== undefined && !/^[\x21-\x7e]+$/.test(apiKey)) {
    throw new ProviderError(
      "CONFIG",
      `${keySetting.from} holds spaces or control characters inside the API key: set the key alone`,
      { operation: "configure", field: CONFIG_KEYS.apiKey.key },
    );
  }
  if (apiKey === undefined) {
    throw new ProviderError(
      "CONFIG",
      `no API key: set the secret config ${CONFIG_KEYS.apiKey.key} (pulumi config set --secret ${CONFIG_KEYS.apiKey.key} ...) or the environment variable ${CONFIG_KEYS.apiKey.env}`,
      { operation: "configure", field: CONFIG_KEYS.apiKey.key },
    );
  }
  const url = (name: "restUrl" | "graphqlUrl" | "queueUrl"): string => {
    const given = setting(name);
    const raw = given?.value ?? DEFAULT_URLS[name];
    const from = given?.from ?? CONFIG_KEYS[name].key;
    const parsed = Url.safeParse(raw);
    if (!parsed.success) {
      throw new ProviderError("CONFIG", `${from} is not an http(s) URL`, {
        operation: "configure",
        field: CONFIG_KEYS[name].key,
      });
    }
    const trimmed = raw.replace(/\/+$/, "");
    // The job API's base as the SDK and the real clients take it (`.../v2`) is a natural mistake here:
    // an endpoint's url would come out as .../v2/v2/{id}, which answers 404.
    if (name === "queueUrl" && /\/v2$/.test(new URL(trimmed).pathname)) {
      throw new ProviderError(
        "CONFIG",
        `${from} is the job API's host, without /v2 (an endpoint's url is {queueUrl}/v2/{id}): set ${trimmed.slice(0, -"/v2".length)}`,
        { operation: "configure", field: CONFIG_KEYS.queueUrl.key },
      );
    }
    return trimmed;
  };
  const delay = setting("deleteTimeout");
  const timeout = Seconds.safeParse(delay?.value ?? DEFAULT_DELETE_TIMEOUT_SECONDS);
  if (!timeout.success) {
    throw new ProviderError(
      "CONFIG",
      `${delay?.from ?? CONFIG_KEYS.deleteTimeout.key} must be whole seconds from 0 to 86400`,
      {
        operation: "configure",
        field: CONFIG_KEYS.deleteTimeout.key,
      },
    );
  }
  return {
    apiKey,
    restUrl: url("restUrl"),
    graphqlUrl: url("graphqlUrl"),
    queueUrl: url("queueUrl"),
    deleteTimeoutMs: timeout.data * 1000,
  };
}

/**
 * The config the provider host passed to `configure`. Module state on purpose: the host loads the
 * implementation once per process and calls `configure` once per provider, before any other method;
 * keeping it here (not in the serialized provider) is what keeps the key out of the state file.
 */
let hostConfig: ConfigLookup | undefined;

export function configureFromHost(config: ConfigLookup | undefined): void {
  // Copy the values: the host's object may be replaced, and only our keys are needed.
  const copy = new Map<string, string>();
  for (const { key } of Object.values(CONFIG_KEYS)) {
    const value = config?.get(key);
    if (value !== undefined) copy.set(key, value);
  }
  hostConfig = { get: (key) => copy.get(key) };
}

/** Settings for a call made in the provider host: host config, then the environment. */
export function hostSettings(): ProviderSettings {
  return resolveSettings(hostConfig, process.env);
}
