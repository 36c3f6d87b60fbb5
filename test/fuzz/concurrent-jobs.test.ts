import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY } from "../service/jobs/harness";
import {
  type FuzzReply,
  type FuzzService,
  fuzzParameters,
  fuzzSeed,
  send,
  startFuzzService,
} from "./support";

/*
 * Concurrent users of one endpoint, as a CI farm produces them: batches of /run, cancel, retry,
 * purge-queue, status and workers' job-take and job-done (success or failure) sent at once, in any
 * order. After them: no 5xx; every job is in one state (or gone, purged); /health's counts equal
 * what /status says of the jobs, and `retried` the sum of their retries.
 */
let service: FuzzService;
const seed = fuzzSeed("concurrent-jobs");

beforeAll(async () => {
  service = await startFuzzService();
});
afterAll(async () => service.h.close());

type Op =
  | { kind: "run" }
  | { kind: "cancel" | "retry" | "status"; job: number }
  | { kind: "purge" }
  | { kind: "take"; worker: number; max: number }
  | { kind: "done"; worker: number; job: number; failed: boolean };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: "run" as const }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constantFrom("cancel" as const, "retry" as const, "status" as const),
      job: fc.nat(40),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "purge" as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("take" as const),
      worker: fc.nat(2),
      max: fc.integer({ min: 1, max: 4 }),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("done" as const),
      worker: fc.nat(2),
      job: fc.nat(40),
      failed: fc.boolean(),
    }),
  },
);

describe("jobs of one endpoint under concurrent clients and workers", () => {
  it("end in one state each, with /health counting what /status shows", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(op, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 6 }),
        async (batches) => {
          const { h } = service;
          // A fresh endpoint per run: its counts start at zero.
          const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
          const ids: string[] = [];
          const call = (method: string, path: string, body?: unknown): Promise<FuzzReply> =>
            send(service, {
              method,
              path: `/v2/${ep.id}/${path}`,
              headers: { authorization: KEY, "content-type": "application/json" },
              ...(body !== undefined && { body: JSON.stringify(body) }),
            });
          const job = (n: number) => ids[n % Math.max(1, ids.length)] ?? "none";
          const worker = (n: number) => `w-concurrent-${n}`;
          const perform = async (o: Op): Promise<FuzzReply> => {
            switch (o.kind) {
              case "run": {
                const reply = await call("POST", "run", { input: { n: ids.length } });
                if (reply.status === 200) ids.push((JSON.parse(reply.text) as { id: string }).id);
                return reply;
              }
              case "cancel":
              case "retry":
                return call("POST", `${o.kind}/${job(o.job)}`);
              case "status":
                return call("GET", `status/${job(o.job)}`);
              case "purge":
                return call("POST", "purge-queue");
              case "take":
                return call(
                  "GET",
                  `job-take-batch/${worker(o.worker)}?batch_size=${o.max}&job_in_progress=0`,
                );
              case "done":
                return call(
                  "POST",
                  `job-done/${worker(o.worker)}/${job(o.job)}`,
                  o.failed ? { error: "failed on purpose" } : { output: { ok: true } },
                );
            }
          };
          for (const batch of batches) {
            const replies = await Promise.all(batch.map(perform));
            replies.forEach((reply, i) => {
              if (reply.status >= 500)
                throw new Error(`${JSON.stringify(batch[i])}: ${reply.status} ${reply.text}`);
            });
          }
          const tally = {
            COMPLETED: 0,
            FAILED: 0,
            IN_PROGRESS: 0,
            IN_QUEUE: 0,
            CANCELLED: 0,
            TIMED_OUT: 0,
            gone: 0,
          };
          let retries = 0;
          for (const id of ids) {
            const status = await call("GET", `status/${id}`);
            if (status.status === 404) {
              tally.gone++;
              continue;
            }
            expect(status.status).toBe(200);
            tally[(JSON.parse(status.text) as { status: keyof typeof tally }).status]++;
            const view = await call("GET", `jobs?job=${id}&summary=true`);
            retries += (JSON.parse(view.text) as { jobs: { retries: number }[] }).jobs[0]?.retries ?? 0;
          }
          const health = JSON.parse((await call("GET", "health")).text) as { jobs: Record<string, number> };
          expect(health.jobs).toEqual({
            completed: tally.COMPLETED,
            // /health counts a TIMED_OUT job in `failed` (service/jobs/book/book.ts).
            failed: tally.FAILED + tally.TIMED_OUT,
            inProgress: tally.IN_PROGRESS,
            inQueue: tally.IN_QUEUE,
            retried: retries,
          });
        },
      ),
      fuzzParameters(seed, 25),
    );
  }, 120_000);
});
