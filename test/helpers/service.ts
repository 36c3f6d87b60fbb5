import { type RunningService, type StartServiceOptions, startService } from "../../service/index";

export interface TestService extends RunningService {
  /** The first account's key. */
  apiKey: string;
  /** A second account's key, for isolation tests. */
  otherApiKey: string;
  keys: string[];
}

export const TEST_KEYS = ["rpk_test_alpha_0123456789", "rpk_test_beta_9876543210"] as const;

/**
 * Starts the whole service in-process on 127.0.0.1 (any free port, in-memory store unless `data`
 * is given) with two accounts. Call close() in afterAll/afterEach.
 */
export async function withService(options: Partial<StartServiceOptions> = {}): Promise<TestService> {
  const keys = options.apiKeys ?? [...TEST_KEYS];
  const service = await startService({ ...options, apiKeys: keys });
  return { ...service, apiKey: keys[0] ?? "", otherApiKey: keys[1] ?? keys[0] ?? "", keys };
}
