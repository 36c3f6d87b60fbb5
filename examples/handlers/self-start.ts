import { serverless } from "../../service/jobs/workers/runtime";

/**
 * A worker that starts itself, as Python workers call `runpod.serverless.start`: run it with
 * `npx tsx examples/handlers/self-start.ts` and the RUNPOD_WEBHOOK_* environment of an endpoint (here
 * or on the real service), or map an image to it. Up to two jobs run at once; the stream handler
 * yields one chunk per word.
 */
async function* handler(job: { input: unknown }) {
  const { text = "" } = (job.input ?? {}) as { text?: string };
  for (const word of text.split(/\s+/).filter(Boolean)) yield { word };
}

void serverless.start({ handler, concurrency: 2, returnAggregateStream: true });
