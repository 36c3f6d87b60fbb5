import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProtocolError } from "../../sdk/errors";
import { JobClient } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";
import type { JobResult } from "../../sdk/schemas/job";
import { type TestService, withService } from "../helpers/service";
import { json, startScriptedServer } from "./scripted-server";
import { failure } from "./support";

/**
 * A job's status envelope is a JobResult: one member per status (COMPLETED carries no `error`, FAILED
 * carries it as a string). The local service's envelopes are each their status's member, and the SDK
 * refuses a reply that is not, so the narrowed type a caller reads holds.
 */

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

async function endpointFor(image: string, workersMax = 1): Promise<JobClient> {
  const n = ++unique;
  const template = await rest.templates.create({ name: `result-${n}`, imageName: image, isServerless: true });
  const endpoint = await rest.endpoints.create({
    templateId: template.id,
    name: `result-ep-${n}`,
    workersMax,
  });
  const client = new JobClient({
    apiKey: service.apiKey,
    endpointId: endpoint.id,
    baseUrl: `${service.queueUrl}/v2`,
  });
  clients.push(client);
  return client;
}

/** The fields that say what a job ended with, as the caller reads them after narrowing. */
function outcome(result: JobResult): { status: string; output?: unknown; error?: string; hasError: boolean } {
  switch (result.status) {
    case "COMPLETED":
      return { status: result.status, output: result.output, hasError: "error" in result };
    case "FAILED":
      return { status: result.status, error: result.error.slice(0, 40), hasError: true };
    default:
      return { status: result.status, hasError: "error" in result };
  }
}

const fast = { pollIntervalMs: 20, timeoutMs: 20_000 };

describe("the local service's envelopes, status by status", () => {
  it("COMPLETED has the output and no error; FAILED has the error as a string", async () => {
    const echo = await endpointFor("runpodkit/echo");
    const done = await echo.runSync({ input: { n: 1 } });
    expect(outcome(done)).toEqual({ status: "COMPLETED", output: { n: 1 }, hasError: false });
    const fail = await endpointFor("runpodkit/fail");
    const { id } = await fail.run({ input: { message: "boom" } });
    const failed = await fail.waitFor(id, fast);
    expect(outcome(failed)).toMatchObject({ status: "FAILED", hasError: true });
    expect(failed.error).toContain("boom");
  });

  it("IN_QUEUE and CANCELLED carry no error", async () => {
    const idle = await endpointFor("runpodkit/echo", 0);
    const { id } = await idle.run({ input: {} });
    expect(outcome(await idle.status(id))).toEqual({ status: "IN_QUEUE", hasError: false });
    await idle.cancel(id);
    expect(outcome(await idle.status(id))).toEqual({ status: "CANCELLED", hasError: false });
  });
});

describe("a reply that breaks its status's shape", () => {
  const scripted = async (body: unknown) => {
    const server = await startScriptedServer((_hit, res) => json(res, 200, body));
    const jobs = new JobClient({
      apiKey: "rpa_RESULTKEY0123456789abcdef",
      endpointId: "ep",
      baseUrl: `${server.url}/v2`,
    });
    const close = async () => {
      await jobs.close();
      await server.close();
    };
    return { jobs, close };
  };

  it("a FAILED job without its error is a ProtocolError naming `error` and the job, not a FAILED without a reason", async () => {
    const { jobs, close } = await scripted({ id: "j1", status: "FAILED" });
    try {
      const error = await failure(jobs.status("j1"));
      expect(error).toBeInstanceOf(ProtocolError);
      expect({ operation: error.operation, field: error.field, jobId: error.jobId }).toEqual({
        operation: "jobs.status",
        field: "error",
        jobId: "j1",
      });
      expect(error.message).toContain("a FAILED job's status names its error");
    } finally {
      await close();
    }
  });

  it("a COMPLETED job with an error is a ProtocolError of the call that read it", async () => {
    const { jobs, close } = await scripted({ id: "j2", status: "COMPLETED", output: 1, error: "odd" });
    try {
      const error = await failure(jobs.waitFor("j2", fast));
      expect(error).toBeInstanceOf(ProtocolError);
      expect({ operation: error.operation, field: error.field, jobId: error.jobId }).toEqual({
        operation: "jobs.waitFor",
        field: "error",
        jobId: "j2",
      });
      expect(error.message).toContain("a COMPLETED job carries no error");
    } finally {
      await close();
    }
  });

  it("a TIMED_OUT job may name its error or not", async () => {
    const { jobs, close } = await scripted({ id: "j3", status: "TIMED_OUT" });
    try {
      expect(await jobs.status("j3")).toEqual({ id: "j3", status: "TIMED_OUT" });
    } finally {
      await close();
    }
  });
});
