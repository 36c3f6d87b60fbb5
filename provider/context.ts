import { createManagementApi } from "./clients";
import { hostSettings, type ProviderSettings } from "./config";
import { hostEngineLog } from "./engine-log";
import type { ManagementApi } from "./management-api";
import { type Pause, wallClock } from "./retry";

export type { ManagementApi } from "./management-api";

/** Everything a provider implementation depends on; the host uses `hostContext`, tests build their own. */
export interface ProviderContext {
  settings(): ProviderSettings;
  api(settings: ProviderSettings): ManagementApi;
  pause: Pause;
  /**
   * A warning for the user about an operation that succeeded (an update that overwrote changes made
   * outside Pulumi), said before the operation answers. Absent: not said.
   */
  warn?(message: string): void | Promise<void>;
}

/**
 * The context inside Pulumi's provider host: settings from `configure` (or the environment), one set
 * of clients (kept while the settings stay the same), wall-clock waits.
 */
export function hostContext(): ProviderContext {
  const engineLog = hostEngineLog();
  let last: { settings: ProviderSettings; api: ManagementApi } | undefined;
  return {
    settings: hostSettings,
    api: (settings) => {
      const same =
        last &&
        last.settings.apiKey === settings.apiKey &&
        last.settings.restUrl === settings.restUrl &&
        last.settings.graphqlUrl === settings.graphqlUrl;
      if (!same || !last) last = { settings, api: createManagementApi(settings) };
      return last.api;
    },
    pause: wallClock,
    // Through the engine's Log RPC, so the CLI shows a warning (see engine-log.ts); printed when
    // there is no engine to call or it does not take it (the CLI shows the host's output as info).
    warn: async (message) => {
      if (engineLog === undefined || !(await engineLog.warn(message))) console.warn(`warning: ${message}`);
    },
  };
}
