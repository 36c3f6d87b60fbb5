import { describe, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import type { JobFailedError } from "../../sdk/errors";
import type { JobClient, JobInput } from "../../sdk/jobs";
import type * as schemas from "../../sdk/schemas/job";
import type {
  HealthReply,
  JobAccepted,
  JobEnvelope,
  JobResult,
  JobStatus,
  JobSubmission,
  PurgeReply,
  StreamChunk,
} from "../../sdk/schemas/job";

/**
 * Type-level checks of the job client's submissions: `tsc -p tsconfig.json` (which includes test/)
 * fails on a `@ts-expect-error` line that type-checks, so these hold only while run() and runSync()
 * are typed by the shared schema.
 */

/** Never called: the lines only need to compile (or, marked, to fail to). */
async function misuses(jobs: JobClient): Promise<void> {
  // @ts-expect-error a submission is an object with `input`, not a number
  await jobs.run(42);
  // @ts-expect-error a misspelt `input`
  await jobs.run({ inpt: { prompt: "hi" } });
  // @ts-expect-error `input` is the handler's object, not a string
  await jobs.runSync({ input: "hello" });
  // @ts-expect-error a bare string is no submission
  await jobs.runSync("hello");
  // @ts-expect-error the policy's fields are typed too
  await jobs.run({ input: {}, policy: { ttl: "10s" } });
  // What the README writes compiles.
  await jobs.run({ input: { prompt: "hi" }, policy: { executionTimeout: 60_000 } });
  await jobs.runSync({ input: { n: 1 } }, { wait: 5_000 });
}

describe("JobClient submission types", () => {
  it("run() and runSync() take the shared JobSubmission schema's input type", () => {
    expectTypeOf<JobInput>().toEqualTypeOf<z.input<typeof JobSubmission>>();
    expectTypeOf<Parameters<JobClient["run"]>[0]>().toEqualTypeOf<JobInput>();
    expectTypeOf<Parameters<JobClient["runSync"]>[0]>().toEqualTypeOf<JobInput>();
    expectTypeOf<JobInput>().not.toBeUnknown();
    expectTypeOf(misuses).toBeFunction();
  });
});

describe("JobFailedError's status", () => {
  it("is one of the three final statuses other than success, so a switch over it is exhaustive", () => {
    expectTypeOf<JobFailedError["jobStatus"]>().toEqualTypeOf<"FAILED" | "CANCELLED" | "TIMED_OUT">();
  });
});

describe("a job's status envelope (status, statusSync, waitFor, runSync)", () => {
  type Of<S extends JobStatus> = Extract<JobResult, { status: S }>;

  it("is a JobResult: checking `status` narrows `error` (COMPLETED none, FAILED a string)", () => {
    expectTypeOf<Awaited<ReturnType<JobClient["status"]>>>().toEqualTypeOf<JobResult>();
    expectTypeOf<Awaited<ReturnType<JobClient["statusSync"]>>>().toEqualTypeOf<JobResult>();
    expectTypeOf<Awaited<ReturnType<JobClient["waitFor"]>>>().toEqualTypeOf<JobResult>();
    expectTypeOf<Awaited<ReturnType<JobClient["runSync"]>>>().toEqualTypeOf<JobResult>();
    expectTypeOf<Of<"FAILED">["error"]>().toEqualTypeOf<string>();
    expectTypeOf<Of<"COMPLETED">["error"]>().toEqualTypeOf<undefined>();
    expectTypeOf<Of<"TIMED_OUT">["error"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Of<"COMPLETED">["output"]>().toEqualTypeOf<unknown>();
  });

  it("has one member per status and stays assignable to the loose wire envelope", () => {
    expectTypeOf<JobResult["status"]>().toEqualTypeOf<JobStatus>();
    expectTypeOf<JobResult>().toExtend<JobEnvelope>();
  });
});

describe("the job client's types, written out so a checker that cannot reach zod still sees them", () => {
  it("each equals its schema's zod type", () => {
    expectTypeOf<JobStatus>().toEqualTypeOf<z.infer<typeof schemas.JobStatus>>();
    expectTypeOf<JobInput>().toEqualTypeOf<z.input<typeof schemas.JobSubmission>>();
    expectTypeOf<JobAccepted>().toEqualTypeOf<z.infer<typeof schemas.JobAccepted>>();
    expectTypeOf<StreamChunk>().toEqualTypeOf<z.infer<typeof schemas.StreamChunk>>();
    expectTypeOf<HealthReply>().toEqualTypeOf<z.infer<typeof schemas.HealthReply>>();
    expectTypeOf<PurgeReply>().toEqualTypeOf<z.infer<typeof schemas.PurgeReply>>();
  });
});
