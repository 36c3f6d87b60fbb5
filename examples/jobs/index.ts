/**
 * Sends jobs to the endpoint the quickstart deployed (run, stream, cancel). Reads:
 *   RUNPOD_API_KEY        the API key (the one in `runpodkit:apiKey`)
 *   RUNPOD_ENDPOINT_URL   the quickstart's `endpointUrl` output (…/v2/<endpoint id>), or else
 *   RUNPOD_ENDPOINT_ID    its `endpointId` output, with
 *   RUNPOD_BASE_URL       the job API base (default https://api.runpod.ai/v2; local: http://127.0.0.1:8080/v2)
 */
import { z } from "zod";
import { sendJobs } from "./send-jobs";

const Env = z.object({
  RUNPOD_API_KEY: z.string().trim().min(1, "RUNPOD_API_KEY is required"),
  RUNPOD_ENDPOINT_URL: z.url().optional(),
  RUNPOD_ENDPOINT_ID: z.string().trim().min(1).optional(),
  RUNPOD_BASE_URL: z.url().optional(),
});

/** `http://host/v2/abc123` -> base `http://host/v2`, endpoint `abc123`. */
function splitEndpointUrl(url: string): { baseUrl: string; endpointId: string } {
  const parsed = new URL(url);
  const segments = parsed.pathname.split("/").filter(Boolean);
  const endpointId = segments.pop();
  if (!endpointId)
    throw new Error(`RUNPOD_ENDPOINT_URL has no endpoint id: ${parsed.origin}${parsed.pathname}`);
  return { baseUrl: `${parsed.origin}/${segments.join("/")}`, endpointId };
}

async function main(): Promise<void> {
  const env = Env.parse(process.env);
  const target = env.RUNPOD_ENDPOINT_URL
    ? splitEndpointUrl(env.RUNPOD_ENDPOINT_URL)
    : { baseUrl: env.RUNPOD_BASE_URL, endpointId: env.RUNPOD_ENDPOINT_ID };
  if (!target.endpointId)
    throw new Error("set RUNPOD_ENDPOINT_URL, or RUNPOD_ENDPOINT_ID (and RUNPOD_BASE_URL)");
  await sendJobs({ apiKey: env.RUNPOD_API_KEY, endpointId: target.endpointId, baseUrl: target.baseUrl });
}

main().catch((error: unknown) => {
  // SDK errors carry a stable code and never the API key.
  const code = (error as { code?: unknown }).code;
  process.stderr.write(
    `jobs example failed${typeof code === "string" ? ` (${code})` : ""}: ${String(error)}\n`,
  );
  process.exit(1);
});
