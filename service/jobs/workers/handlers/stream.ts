import { setTimeout as sleep } from "node:timers/promises";
import type { HandlerContext, WorkerJob } from "../runtime/types";

/**
 * runpodkit/stream: yields the words of `input.text` (or `input.count` numbered tokens), one chunk
 * each, `input.delayMs` apart; `input.failAt` makes it throw at that chunk index.
 */
export async function* handler(job: WorkerJob, context: HandlerContext): AsyncGenerator<unknown> {
  const input = (job.input ?? {}) as { text?: string; count?: number; delayMs?: number; failAt?: number };
  const tokens = input.text
    ? input.text.split(/\s+/).filter(Boolean)
    : Array.from({ length: input.count ?? 5 }, (_, i) => `token-${i}`);
  for (const [index, token] of tokens.entries()) {
    if (input.failAt === index) throw new Error(`stream failed at chunk ${index}`);
    if (input.delayMs) await sleep(input.delayMs, undefined, { signal: context.signal });
    yield { text: token, index };
  }
}
