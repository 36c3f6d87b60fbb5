import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ConnectionError,
  errorForStatus,
  NotFoundError,
  RateLimitedError,
  TimeoutError,
  ValidationError,
} from "../../sdk/errors";
import { JobClient } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";
import { type TestService, withService } from "../helpers/service";
import { holdPort } from "../helpers/tcp-relay";
import { failure } from "./support";

/** `error.retryable`: whether a caller's own retry of the same call may succeed, read off real failures. */

let service: TestService;
let rest: RestClient;

beforeAll(async () => {
  service = await withService();
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl, retries: 0 });
});
afterAll(async () => {
  await rest?.close();
  await service?.close();
});

async function jobClient(): Promise<JobClient> {
  const template = await rest.templates.create({
    name: `retryable-${Date.now()}`,
    imageName: "runpodkit/echo",
    isServerless: true,
  });
  const endpoint = await rest.endpoints.create({ templateId: template.id, name: "retryable", workersMax: 1 });
  return new JobClient({
    apiKey: service.apiKey,
    endpointId: endpoint.id,
    baseUrl: `${service.queueUrl}/v2`,
    retries: 0,
  });
}

describe("error.retryable", () => {
  it("is true for a 429 and false for an unknown job or a bad input, and is in toJSON()", async () => {
    const jobs = await jobClient();
    try {
      // The service allows 2 /purge-queue per 10 s per endpoint: the third is a 429.
      await jobs.purgeQueue();
      await jobs.purgeQueue();
      const limited = await failure(jobs.purgeQueue());
      expect(limited).toBeInstanceOf(RateLimitedError);
      expect(limited.retryable).toBe(true);
      expect(limited.toJSON()).toMatchObject({ code: "RATE_LIMITED", status: 429, retryable: true });

      const unknown = await failure(jobs.status("no-such-job"));
      expect(unknown).toBeInstanceOf(NotFoundError);
      expect(unknown.retryable).toBe(false);
      expect(unknown.toJSON()).toMatchObject({ code: "NOT_FOUND", retryable: false });

      const refused = await failure(jobs.runSync({ input: {} }, { wait: 5 }));
      expect(refused).toBeInstanceOf(ValidationError);
      expect(refused.retryable).toBe(false);
    } finally {
      await jobs.close();
    }
  });

  it("is true when the service cannot be reached or does not answer in time", async () => {
    // Nothing listens on one port (held, so no other process gets it meanwhile); on the other a
    // server takes the connection and never answers.
    const nothing = holdPort();
    const refusedUrl = `http://127.0.0.1:${nothing.port}/v1`;
    const held = new Set<Socket>();
    const silent = createServer((socket) => held.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    const unreachable = new RestClient({ apiKey: service.apiKey, baseUrl: refusedUrl, retries: 0 });
    const stalled = new RestClient({
      apiKey: service.apiKey,
      baseUrl: `http://127.0.0.1:${port}/v1`,
      retries: 0,
      timeoutMs: 200,
    });
    try {
      const refused = await failure(unreachable.templates.list());
      expect(refused).toBeInstanceOf(ConnectionError);
      expect(refused.retryable).toBe(true);
      const late = await failure(stalled.templates.list());
      expect(late).toBeInstanceOf(TimeoutError);
      expect(late.retryable).toBe(true);
    } finally {
      await unreachable.close();
      nothing.close();
      await stalled.close({ force: true });
      for (const socket of held) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it("is false for a job submission cut off after it was sent, true for one never sent", async () => {
    const jobs = await jobClient();
    const endpointId = jobs.endpointId;
    await jobs.close();
    // A relay in front of the job API whose connections (both sides) are cut while the service holds a /runsync.
    const sockets = new Set<Socket>();
    const target = new URL(service.queueUrl);
    const relay = createServer((socket) => {
      const upstream = connect(Number(target.port), target.hostname);
      sockets.add(socket).add(upstream);
      socket.pipe(upstream).pipe(socket);
      socket.on("error", () => upstream.destroy());
      upstream.on("error", () => socket.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
    const relayUrl = `http://127.0.0.1:${(relay.address() as AddressInfo).port}/v2`;
    const through = new JobClient({ apiKey: service.apiKey, endpointId, baseUrl: relayUrl, retries: 0 });
    const direct = new JobClient({ apiKey: service.apiKey, endpointId, baseUrl: `${service.queueUrl}/v2` });
    const nothing = holdPort();
    const never = new JobClient({
      apiKey: service.apiKey,
      endpointId,
      baseUrl: `http://127.0.0.1:${nothing.port}/v2`,
      retries: 0,
    });
    try {
      // No worker runs (workersMax 0 below): the /runsync is held until the cut.
      await rest.endpoints.update(endpointId, { workersMax: 0 });
      const held = failure(through.runSync({ input: {} }, { wait: 60_000 }));
      await expect.poll(async () => (await direct.health()).jobs.inQueue).toBe(1);
      for (const socket of sockets) socket.destroy();
      const cut = await held;
      expect(cut).toBeInstanceOf(ConnectionError);
      expect(cut.retryable).toBe(false);
      // The job was submitted: sending it again would run it twice.
      expect((await direct.health()).jobs.inQueue).toBe(1);

      const refused = await failure(never.run({ input: {} }));
      expect(refused).toBeInstanceOf(ConnectionError);
      expect(refused.retryable).toBe(true);
    } finally {
      await through.close({ force: true });
      await direct.close();
      await never.close();
      nothing.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    }
  });

  it("is true for a 5xx, except a 501 (the call is not implemented: it will not pass)", () => {
    expect(errorForStatus(503, { operation: "op", message: "m" }).retryable).toBe(true);
    expect(errorForStatus(500, { operation: "op", message: "m", serviceCode: "INTERNAL" }).retryable).toBe(
      true,
    );
    expect(errorForStatus(501, { operation: "op", message: "m" }).retryable).toBe(false);
    expect(
      errorForStatus(400, { operation: "op", message: "m", serviceCode: "NOT_IMPLEMENTED" }).retryable,
    ).toBe(false);
    expect(errorForStatus(409, { operation: "op", message: "m" }).retryable).toBe(false);
    // A call that may have taken effect (a create, a mutation): its 5xx is not, its 429 still is.
    expect(errorForStatus(503, { operation: "op", message: "m", repeatable: false }).retryable).toBe(false);
    expect(errorForStatus(429, { operation: "op", message: "m", repeatable: false }).retryable).toBe(true);
  });
});
