/**
 * The smoke test the program runs after each deploy (`npx tsx smoke-test.ts`): submits one job to the
 * endpoint and checks that it completes with the greeting of worker/handler.ts and the commit the image
 * was built from. Exit 0 and one line on success; exit 1 with the reason otherwise (which fails the
 * `pulumi up`). Reads:
 *   ENDPOINT_URL      the endpoint's job API address, {queueUrl}/v2/{endpoint id}
 *   EXPECT_COMMIT     the commit the endpoint should be running
 *   RUNPOD_API_KEY    the service's key
 *   SMOKE_TIMEOUT_MS  longest wait for the job, cold start included (default 600000)
 */
import { JobClient } from "runpodkit/sdk";
import { z } from "zod";

const Env = z.object({
  ENDPOINT_URL: z.url(),
  EXPECT_COMMIT: z.string().trim().min(1),
  RUNPOD_API_KEY: z.string().trim().min(1, "RUNPOD_API_KEY is required"),
  SMOKE_TIMEOUT_MS: z.coerce.number().int().positive().default(600_000),
});

/** What worker/handler.ts answers. */
const Answer = z.object({ greeting: z.string(), commit: z.string() });

const NAME = "smoke-test";

async function main(): Promise<void> {
  const env = Env.parse(process.env);
  const url = new URL(env.ENDPOINT_URL);
  const segments = url.pathname.split("/").filter(Boolean);
  const endpointId = segments.pop();
  if (!endpointId) throw new Error(`ENDPOINT_URL has no endpoint id: ${url.origin}${url.pathname}`);
  const jobs = new JobClient({
    apiKey: env.RUNPOD_API_KEY,
    endpointId,
    baseUrl: `${url.origin}/${segments.join("/")}`,
  });
  try {
    const { id } = await jobs.run({ input: { name: NAME } });
    const done = await jobs.waitFor(id, { timeoutMs: env.SMOKE_TIMEOUT_MS });
    if (done.status !== "COMPLETED") {
      throw new Error(`job ${id} ended ${done.status}: ${JSON.stringify(done.error ?? done.output ?? null)}`);
    }
    const answer = Answer.safeParse(done.output);
    if (!answer.success) throw new Error(`job ${id} answered ${JSON.stringify(done.output)}`);
    if (answer.data.greeting !== `hello ${NAME}`) {
      throw new Error(`job ${id} greeted ${JSON.stringify(answer.data.greeting)}`);
    }
    if (answer.data.commit !== env.EXPECT_COMMIT) {
      throw new Error(`job ${id} ran commit ${answer.data.commit}, expected ${env.EXPECT_COMMIT}`);
    }
    process.stdout.write(`smoke test passed: job ${id} COMPLETED on commit ${answer.data.commit}\n`);
  } finally {
    await jobs.close();
  }
}

main().catch((error: unknown) => {
  // SDK errors carry a stable code and never the API key.
  const code = (error as { code?: unknown }).code;
  process.stderr.write(
    `smoke test failed${typeof code === "string" ? ` (${code})` : ""}: ${String(error)}\n`,
  );
  process.exit(1);
});
