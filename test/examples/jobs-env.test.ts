/**
 * examples/jobs reads its target from the environment as its README sets it. A newcomer's likely
 * slips (the key not exported, `$(pulumi stack output endpointUrl)` failing and leaving "", a host
 * without a scheme) are each named by the variable with what to set, one line each; before, they
 * came as zod's JSON dump ("Invalid input: expected string, received undefined", "Invalid URL").
 */
import { describe, expect, test } from "vitest";
import { targetFromEnv } from "../../examples/jobs/env";

const URL_OUTPUT = "http://127.0.0.1:8080/v2/abc123";

describe("examples/jobs: the target from the environment", () => {
  test("the README's variables: the endpoint URL output, or the id and the base", () => {
    expect(targetFromEnv({ RUNPOD_API_KEY: "k\n", RUNPOD_ENDPOINT_URL: URL_OUTPUT })).toEqual({
      apiKey: "k",
      endpointId: "abc123",
      baseUrl: "http://127.0.0.1:8080/v2",
    });
    expect(
      targetFromEnv({
        RUNPOD_API_KEY: "k",
        RUNPOD_ENDPOINT_ID: "abc123",
        RUNPOD_BASE_URL: "http://127.0.0.1:8080/v2",
      }),
    ).toEqual({ apiKey: "k", endpointId: "abc123", baseUrl: "http://127.0.0.1:8080/v2" });
    expect(targetFromEnv({ RUNPOD_API_KEY: "k", RUNPOD_ENDPOINT_ID: "abc123" })).toEqual({
      apiKey: "k",
      endpointId: "abc123",
      baseUrl: undefined,
    });
  });

  test("each slip is one line naming the variable and what to set", () => {
    const problems = (env: Record<string, string | undefined>) => {
      try {
        targetFromEnv(env);
      } catch (error) {
        return (error as Error).message.split("\n");
      }
      throw new Error("accepted");
    };
    expect(problems({ RUNPOD_ENDPOINT_URL: URL_OUTPUT })).toEqual([
      "RUNPOD_API_KEY is not set: export the API key (the stack's runpodkit:apiKey)",
    ]);
    // `export RUNPOD_ENDPOINT_URL=$(cd ../quickstart && pulumi stack output endpointUrl)` that failed.
    expect(problems({ RUNPOD_API_KEY: "k", RUNPOD_ENDPOINT_URL: "" })).toEqual([
      "RUNPOD_ENDPOINT_URL is empty (did `pulumi stack output endpointUrl` fail? run it in examples/quickstart): set it to the quickstart's endpointUrl output, or unset it and set RUNPOD_ENDPOINT_ID",
    ]);
    expect(problems({ RUNPOD_API_KEY: "k", RUNPOD_ENDPOINT_URL: "localhost:8080/v2/abc123" })).toEqual([
      "RUNPOD_ENDPOINT_URL is not an http(s) URL: set it to the quickstart's endpointUrl output (…/v2/<endpoint id>)",
    ]);
    expect(problems({ RUNPOD_API_KEY: "k", RUNPOD_ENDPOINT_URL: "http://127.0.0.1:8080/" })).toEqual([
      "RUNPOD_ENDPOINT_URL has no endpoint id: http://127.0.0.1:8080/ (the endpointUrl output ends in /v2/<endpoint id>)",
    ]);
    // The job API base where the endpoint's URL belongs: before, "v2" was taken as the endpoint id
    // and the first call failed with "no route POST /v2/run (HTTP 404)".
    expect(problems({ RUNPOD_API_KEY: "k", RUNPOD_ENDPOINT_URL: "http://127.0.0.1:8080/v2/" })).toEqual([
      "RUNPOD_ENDPOINT_URL has no endpoint id: http://127.0.0.1:8080/v2/ (the endpointUrl output ends in /v2/<endpoint id>)",
    ]);
    expect(problems({ RUNPOD_API_KEY: "k" })).toEqual([
      "set RUNPOD_ENDPOINT_URL (the quickstart's endpointUrl output), or RUNPOD_ENDPOINT_ID (its endpointId output) and RUNPOD_BASE_URL (the job API base)",
    ]);
    // Several at once: every one, each on its own line.
    expect(problems({ RUNPOD_ENDPOINT_ID: "abc", RUNPOD_BASE_URL: "127.0.0.1:8080" })).toEqual([
      "RUNPOD_API_KEY is not set: export the API key (the stack's runpodkit:apiKey)",
      "RUNPOD_BASE_URL is not an http(s) URL: the job API base, e.g. https://api.runpod.ai/v2, or http://127.0.0.1:8080/v2 for the local service",
    ]);
  });
});
