/**
 * The worker this example builds into an image: it greets `input.name` and says which commit it was
 * built from (GIT_COMMIT, baked into the image by the Dockerfile), so the smoke test can tell that
 * the endpoint runs the image of this commit. Node 24 runs this file as is (type stripping).
 */
import { serverless } from "runpodkit/worker";

interface Input {
  name?: unknown;
}

async function handler(job: { input: unknown }): Promise<{ greeting: string; commit: string }> {
  const { name } = (job.input ?? {}) as Input;
  if (typeof name !== "string" || name.length === 0 || name.length > 200) {
    throw new Error("input.name must be a string of 1 to 200 characters");
  }
  return { greeting: `hello ${name}`, commit: process.env.GIT_COMMIT ?? "unknown" };
}

void serverless.start({ handler });
