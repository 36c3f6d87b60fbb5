/**
 * Where the jobs example sends its jobs, read from the environment. Each refusal names the variable
 * and how to set it: `export RUNPOD_ENDPOINT_URL=$(pulumi stack output endpointUrl)` sets it to ""
 * when that command fails (no stack, run from another folder), which zod alone reported as "Invalid
 * URL" inside a JSON dump.
 */
import { z } from "zod";

const BASE_EXAMPLE = "https://api.runpod.ai/v2, or http://127.0.0.1:8080/v2 for the local service";

const Env = z.object({
  RUNPOD_API_KEY: z
    .string({ error: "RUNPOD_API_KEY is not set: export the API key (the stack's runpodkit:apiKey)" })
    .trim()
    .min(1, "RUNPOD_API_KEY is empty: export the API key (the stack's runpodkit:apiKey)"),
  RUNPOD_ENDPOINT_URL: z
    .string()
    .min(
      1,
      "RUNPOD_ENDPOINT_URL is empty (did `pulumi stack output endpointUrl` fail? run it in examples/quickstart): set it to the quickstart's endpointUrl output, or unset it and set RUNPOD_ENDPOINT_ID",
    )
    .pipe(
      z.url({
        protocol: /^https?$/,
        error:
          "RUNPOD_ENDPOINT_URL is not an http(s) URL: set it to the quickstart's endpointUrl output (…/v2/<endpoint id>)",
      }),
    )
    .optional(),
  RUNPOD_ENDPOINT_ID: z
    .string()
    .trim()
    .min(1, "RUNPOD_ENDPOINT_ID is empty: set it to the quickstart's endpointId output")
    .optional(),
  RUNPOD_BASE_URL: z
    .url({
      protocol: /^https?$/,
      error: `RUNPOD_BASE_URL is not an http(s) URL: the job API base, e.g. ${BASE_EXAMPLE}`,
    })
    .optional(),
});

export interface JobsTarget {
  apiKey: string;
  endpointId: string;
  /** The job API base, without the endpoint id (undefined: the real service's). */
  baseUrl: string | undefined;
}

/** `http://host/v2/abc123` -> base `http://host/v2`, endpoint `abc123`. */
function splitEndpointUrl(url: string): { baseUrl: string; endpointId: string } {
  const parsed = new URL(url);
  const segments = parsed.pathname.split("/").filter(Boolean);
  const endpointId = segments.pop();
  // The job API base alone (…/v2) would be taken as an endpoint named "v2": every call a 404 "no route".
  if (!endpointId || endpointId === "v2")
    throw new Error(
      `RUNPOD_ENDPOINT_URL has no endpoint id: ${parsed.origin}${parsed.pathname} (the endpointUrl output ends in /v2/<endpoint id>)`,
    );
  return { baseUrl: `${parsed.origin}/${segments.join("/")}`, endpointId };
}

/** The target the environment names; an Error listing every problem, one a line, when it names none. */
export function targetFromEnv(env: Record<string, string | undefined>): JobsTarget {
  const parsed = Env.safeParse(env);
  if (!parsed.success) throw new Error(parsed.error.issues.map((issue) => issue.message).join("\n"));
  const { RUNPOD_API_KEY: apiKey, RUNPOD_ENDPOINT_URL: url, RUNPOD_ENDPOINT_ID: endpointId } = parsed.data;
  if (url) return { apiKey, ...splitEndpointUrl(url) };
  if (!endpointId)
    throw new Error(
      "set RUNPOD_ENDPOINT_URL (the quickstart's endpointUrl output), or RUNPOD_ENDPOINT_ID (its endpointId output) and RUNPOD_BASE_URL (the job API base)",
    );
  return { apiKey, endpointId, baseUrl: parsed.data.RUNPOD_BASE_URL };
}
