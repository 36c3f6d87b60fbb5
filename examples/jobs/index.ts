/**
 * Sends jobs to the endpoint the quickstart deployed (run, stream, cancel). Reads:
 *   RUNPOD_API_KEY        the API key (the one in `runpodkit:apiKey`)
 *   RUNPOD_ENDPOINT_URL   the quickstart's `endpointUrl` output (…/v2/<endpoint id>), or else
 *   RUNPOD_ENDPOINT_ID    its `endpointId` output, with
 *   RUNPOD_BASE_URL       the job API base (default https://api.runpod.ai/v2; local: http://127.0.0.1:8080/v2)
 */
import { targetFromEnv } from "./env";
import { sendJobs } from "./send-jobs";

async function main(): Promise<void> {
  await sendJobs(targetFromEnv(process.env));
}

main().catch((error: unknown) => {
  // SDK errors carry a stable code and never the API key; the environment's problems, one a line.
  const code = (error as { code?: unknown }).code;
  const message =
    error instanceof Error && error.name !== "Error"
      ? `${error.name}: ${error.message}`
      : error instanceof Error
        ? error.message
        : String(error);
  process.stderr.write(`jobs example failed${typeof code === "string" ? ` (${code})` : ""}: ${message}\n`);
  process.exit(1);
});
