import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AbortedError,
  JobFailedError,
  NotFoundError,
  RateLimitedError,
  TimeoutError,
  UnauthorizedError,
  ValidationError,
} from "../../sdk/errors";
import { JobClient, type JobClientOptions } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";
import type { StreamChunk } from "../../sdk/schemas/job";
import { type TestService, withService } from "../helpers/service";
import { everyStringOf, json, startScriptedServer } from "./scripted-server";
import { failure } from "./support";

/** The job client against the local service's job plane (real queue, real worker processes). */

let service: TestService;
let rest: RestClient;
const clients: JobClient[] = [];

beforeAll(async () => {
  service = await withService();
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
});
afterAll(async () => {
  for (const client of clients) await client.close();
  await rest?.close();
  await service?.close();
});

let unique = 0;

/** An endpoint running one of the service's built-in handlers, and a job client for it. */
async function endpointFor(image: string, workersMax = 1, options: Partial<JobClientOptions> = {}) {
  const n = ++unique;
  const template = await rest.templates.create({ name: `jobs-${n}`, imageName: image, isServerless: true });
  const endpoint = await rest.endpoints.create({
    templateId: template.id,
    name: `jobs-ep-${n}`,
    workersMin: 0,
    workersMax,
  });
  const client = new JobClient({
    apiKey: service.apiKey,
    endpointId: endpoint.id,
    baseUrl: `${service.queueUrl}/v2`,
    ...options,
  });
  clients.push(client);
  return client;
}

async function collect(stream: AsyncIterable<StreamChunk>): Promise<unknown[]> {
  const outputs: unknown[] = [];
  for await (const chunk of stream) outputs.push(chunk.output);
  return outputs;
}

const fast = { pollIntervalMs: 20, timeoutMs: 20_000 };

describe("JobClient submit and wait", () => {
  it("runs a job, waits for it and reads its status and the endpoint's health", async () => {
    const jobs = await endpointFor("runpodkit/echo");
    const accepted = await jobs.run({ input: { hello: "world" } });
    expect(accepted.status).toBe("IN_QUEUE");
    const done = await jobs.waitFor(accepted.id, fast);
    expect(done).toMatchObject({ id: accepted.id, status: "COMPLETED", output: { hello: "world" } });
    expect(await jobs.status(accepted.id)).toMatchObject({ id: accepted.id, status: "COMPLETED" });
    const health = await jobs.health();
    expect(health.jobs.completed).toBeGreaterThanOrEqual(1);
  });

  it("runSync answers the result when the job finishes within wait", async () => {
    const jobs = await endpointFor("runpodkit/echo");
    const result = await jobs.runSync({ input: { n: 1 } }, { wait: 20_000 });
    expect(result).toMatchObject({ status: "COMPLETED", output: { n: 1 } });
    expect(result.id).toMatch(/^sync-/);
  });

  it("runSync hands back the id when the job outlives wait, so waitFor can pick it up", async () => {
    const jobs = await endpointFor("runpodkit/sleep");
    const pending = await jobs.runSync({ input: { ms: 1_500 } }, { wait: 1_000 });
    expect(["IN_QUEUE", "IN_PROGRESS"]).toContain(pending.status);
    const done = await jobs.waitFor(pending.id, fast);
    expect(done).toMatchObject({ id: pending.id, status: "COMPLETED", output: { slept: 1_500 } });
  });

  it("waitFor gives up with a TimeoutError carrying the job id; the job stays queued", async () => {
    const jobs = await endpointFor("runpodkit/echo", 0);
    const { id } = await jobs.run({ input: {} });
    // The job never runs (no worker): the budget only has to let a /status poll come back on a loaded
    // machine, so the error can say where the job was (150 ms did not, once, at a load average of 12).
    const error = await failure(jobs.waitFor(id, { timeoutMs: 1500, pollIntervalMs: 20 }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.toJSON()).toMatchObject({
      code: "TIMEOUT",
      operation: "jobs.waitFor",
      jobId: id,
      jobStatus: "IN_QUEUE",
    });
    expect(error.message).toContain("IN_QUEUE");
    expect((await jobs.status(id)).status).toBe("IN_QUEUE");
  });

  it("waitFor on an unknown job is a NotFoundError of jobs.waitFor, with the job id", async () => {
    const jobs = await endpointFor("runpodkit/echo", 0);
    const error = await failure(jobs.waitFor("no-such-job", fast));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.toJSON()).toMatchObject({
      code: "NOT_FOUND",
      operation: "jobs.waitFor",
      jobId: "no-such-job",
    });
    expect(error.message).toMatch(/^jobs\.waitFor: /);
  });

  it("waitFor stops at once when the caller aborts, keeping the job id", async () => {
    const jobs = await endpointFor("runpodkit/echo", 0);
    const { id } = await jobs.run({ input: {} });
    const controller = new AbortController();
    const waiting = failure(jobs.waitFor(id, { signal: controller.signal, pollIntervalMs: 60_000 }));
    controller.abort();
    const error = await waiting;
    expect(error).toBeInstanceOf(AbortedError);
    expect(error.jobId).toBe(id);
  });

  it("statusSync (runpod-sdk's name) holds the call until the job finishes, then answers its result", async () => {
    const jobs = await endpointFor("runpodkit/sleep");
    const { id } = await jobs.run({ input: { ms: 300 } });
    const done = await jobs.statusSync(id, { wait: 30_000 });
    expect(done).toMatchObject({ id, status: "COMPLETED", output: { slept: 300 } });
  });

  it("statusSync answers the job's status when wait passes first; a failure names the job", async () => {
    const jobs = await endpointFor("runpodkit/echo", 0);
    const { id } = await jobs.run({ input: {} });
    expect(await jobs.statusSync(id, { wait: 1_000 })).toMatchObject({ id, status: "IN_QUEUE" });
    const unknown = await failure(jobs.statusSync("no-such-job", { wait: 1_000 }));
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect(unknown.toJSON()).toMatchObject({ operation: "jobs.statusSync", jobId: "no-such-job" });
    const refused = await failure(jobs.statusSync(id, { wait: 5 }));
    expect(refused).toBeInstanceOf(ValidationError);
    expect(refused.toJSON()).toMatchObject({ operation: "jobs.statusSync", field: "wait" });
  });
});

describe("JobClient stream", () => {
  it("yields every chunk and ends when the job completes", async () => {
    const jobs = await endpointFor("runpodkit/stream");
    const { id } = await jobs.run({ input: { text: "one two three" } });
    const outputs = await collect(jobs.stream(id, { pollIntervalMs: 20 }));
    expect(outputs).toEqual([
      { text: "one", index: 0 },
      { text: "two", index: 1 },
      { text: "three", index: 2 },
    ]);
  });

  it("throws a JobFailedError with the job id when the job fails", async () => {
    const jobs = await endpointFor("runpodkit/stream");
    const { id } = await jobs.run({ input: { count: 3, failAt: 1 } });
    const outputs: unknown[] = [];
    const error = await failure(
      (async () => {
        for await (const chunk of jobs.stream(id, { pollIntervalMs: 20 })) outputs.push(chunk.output);
      })(),
    );
    expect(error).toBeInstanceOf(JobFailedError);
    expect(error.code).toBe("JOB_FAILED");
    expect(error.jobId).toBe(id);
    expect(error.message).toContain("stream failed at chunk 1");
    expect(outputs).toEqual([{ text: "token-0", index: 0 }]);
  });

  it("throws a JobFailedError naming CANCELLED when the job is cancelled, so no loop mistakes it for success", async () => {
    const jobs = await endpointFor("runpodkit/sleep");
    const { id } = await jobs.run({ input: { ms: 60_000 } });
    const streamed = failure(collect(jobs.stream(id, { pollIntervalMs: 20 })));
    expect(await jobs.cancel(id)).toMatchObject({ id, status: "CANCELLED" });
    const error = await streamed;
    expect(error).toBeInstanceOf(JobFailedError);
    expect(error.toJSON()).toMatchObject({ code: "JOB_FAILED", jobId: id, jobStatus: "CANCELLED" });
    expect((await jobs.waitFor(id, fast)).status).toBe("CANCELLED");
  });
});

describe("JobClient queue operations", () => {
  it("retries a failed job under the same id", async () => {
    const jobs = await endpointFor("runpodkit/fail");
    const { id } = await jobs.run({ input: { message: "boom" } });
    const failed = await jobs.waitFor(id, fast);
    expect(failed).toMatchObject({ status: "FAILED" });
    expect(failed.error).toContain("boom");
    const retried = await jobs.retry(id);
    expect(retried.id).toBe(id);
    // the spec's transition: FAILED -> IN_QUEUE, even when a warm worker takes it at once
    expect(retried.status).toBe("IN_QUEUE");
    expect((await jobs.waitFor(id, fast)).status).toBe("FAILED");
  });

  it("purges queued jobs, which are then gone", async () => {
    const jobs = await endpointFor("runpodkit/echo", 0);
    const a = await jobs.run({ input: { a: 1 } });
    await jobs.run({ input: { b: 2 } });
    expect(await jobs.purgeQueue()).toMatchObject({ removed: 2 });
    const error = await failure(jobs.status(a.id));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.jobId).toBe(a.id);
  });

  it("backs off on 429 as Retry-After says, then hands back a RateLimitedError", async () => {
    const delays: number[] = [];
    const jobs = await endpointFor("runpodkit/echo", 0, {
      retries: 2,
      retry: {
        schedule: (run, ms) => {
          delays.push(ms);
          return setImmediate(run);
        },
      },
    });
    // purge-queue allows 2 calls per 10 s: the third is refused, and so are its immediate retries
    await jobs.purgeQueue();
    await jobs.purgeQueue();
    const error = await failure(jobs.purgeQueue());
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error.retryAfterMs).toBeGreaterThan(0);
    expect(delays).toHaveLength(2);
    for (const delay of delays) expect(delay).toBeGreaterThanOrEqual(1_000);
  });
});

describe("JobClient input and keys", () => {
  it("validates the submission before sending", async () => {
    const jobs = await endpointFor("runpodkit/echo", 0);
    const bad = await failure(jobs.run({ input: "text" } as never));
    expect(bad).toBeInstanceOf(ValidationError);
    expect(bad.field).toBe("input");
    const ttl = await failure(jobs.run({ input: {}, policy: { ttl: 5 } }));
    expect(ttl.field).toBe("policy.ttl");
    const wait = await failure(jobs.runSync({ input: {} }, { wait: 10 }));
    expect(wait.field).toBe("wait");
    expect((await jobs.health()).jobs.inQueue).toBe(0);
  });

  it("maps a wrong key to UNAUTHORIZED and never shows it", async () => {
    const wrongKey = "rpk_wrong_jobs_key_00000000";
    const jobs = new JobClient({ apiKey: wrongKey, endpointId: "any", baseUrl: `${service.queueUrl}/v2` });
    clients.push(jobs);
    const error = await failure(jobs.run({ input: {} }));
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(everyStringOf(error)).not.toContain(wrongKey);
  });
});

describe("JobClient baseUrl", () => {
  it("keeps the endpoint id in the path when the baseUrl has a query, a fragment or a trailing slash", async () => {
    const server = await startScriptedServer((_hit, res) => json(res, 200, { jobs: {}, workers: {} }));
    try {
      for (const suffix of ["/v2?trace=1", "/v2/?trace=1", "/v2#top", "/v2//"]) {
        const jobs = new JobClient({
          apiKey: service.apiKey,
          endpointId: "ep 1",
          baseUrl: `${server.url}${suffix}`,
        });
        await jobs.health().catch(() => undefined);
        await jobs.close();
      }
      expect(server.hits.map((hit) => hit.url)).toEqual([
        "/v2/ep%201/health?trace=1",
        "/v2/ep%201/health?trace=1",
        "/v2/ep%201/health",
        "/v2/ep%201/health",
      ]);
    } finally {
      await server.close();
    }
  });
});
