import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AbortedError, ValidationError } from "../../sdk/errors";
import { GraphQLClient } from "../../sdk/graphql";
import { JobClient } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";
import { type TestService, withService } from "../helpers/service";
import { failure } from "./support";

/**
 * close({ force: true }) ends the calls in flight at once, against the real service: a /runsync it
 * holds (up to `wait`, longer than the test's time), a /stream poll it holds, a waitFor between polls.
 * A plain close() would wait for each, so these tests would time out.
 */

let service: TestService;
let rest: RestClient;
let endpointId: string;
const dirs: string[] = [];

beforeAll(async () => {
  service = await withService();
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
  const template = await rest.templates.create({
    name: "close-force",
    imageName: "runpodkit/echo",
    isServerless: true,
  });
  // No workers: every job stays IN_QUEUE, so the service holds each /runsync and /stream.
  const endpoint = await rest.endpoints.create({
    templateId: template.id,
    name: "close-force",
    workersMin: 0,
    workersMax: 0,
  });
  endpointId = endpoint.id;
});
afterAll(async () => {
  await rest?.close();
  await service?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const jobClient = () =>
  new JobClient({ apiKey: service.apiKey, endpointId, baseUrl: `${service.queueUrl}/v2` });

describe("close({ force: true })", () => {
  it("ends a held /runsync, a held /stream poll and a waitFor's pause with AbortedErrors naming each operation", async () => {
    const client = jobClient();
    const queued = await client.run({ input: { n: 1 } });
    const runSync = failure(client.runSync({ input: { n: 2 } }, { wait: 300_000 }));
    const stream = client.stream(queued.id)[Symbol.asyncIterator]();
    const streamed = failure(stream.next());
    // One poll answers IN_QUEUE, then it pauses for longer than the test may take.
    const waited = failure(client.waitFor(queued.id, { pollIntervalMs: 300_000, timeoutMs: 600_000 }));
    // The waitFor's first poll is answered (the job is queued) before the close, so it is in its pause.
    await expect.poll(async () => (await client.health()).jobs.inQueue).toBe(2);
    await client.close({ force: true });

    for (const [error, operation] of [
      [await runSync, "jobs.runSync"],
      [await streamed, "jobs.stream"],
      [await waited, "jobs.waitFor"],
    ] as const) {
      expect(error).toBeInstanceOf(AbortedError);
      expect(error.operation).toBe(operation);
      expect(error.code).toBe("ABORTED");
      expect(error.message).toContain("close({ force: true })");
      expect(error.message).not.toContain(service.apiKey);
    }
    expect((await waited).jobId).toBe(queued.id);
    // Closed: a second close (plain or forced) resolves, a later call is refused as a closed client's.
    await client.close();
    await client.close({ force: true });
    const later = await failure(client.status(queued.id));
    expect(later).toBeInstanceOf(ValidationError);
    expect(later.message).toContain("the client was closed");
  });

  it("ends a plain close() already waiting for a held call", async () => {
    const client = jobClient();
    const runSync = failure(client.runSync({ input: { n: 3 } }, { wait: 300_000 }));
    let gracefulDone = false;
    const graceful = client.close().then(() => {
      gracefulDone = true;
    });
    // The plain close waits for the held /runsync...
    await new Promise((resolve) => setImmediate(resolve));
    expect(gracefulDone).toBe(false);
    // ...until a forced one ends it.
    await client.close({ force: true });
    await graceful;
    expect(await runSync).toBeInstanceOf(AbortedError);
  });

  it("RestClient and GraphQLClient take it too", async () => {
    const r = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
    const g = new GraphQLClient({ apiKey: service.apiKey, baseUrl: service.graphqlUrl });
    await r.close({ force: true });
    await g.close({ force: true });
    expect(await failure(r.templates.list())).toBeInstanceOf(ValidationError);
  });

  it("leaves no socket or timer: a process that closes with force during a held /runsync exits by itself", async () => {
    const dir = mkdtempSync(join(tmpdir(), "runpodkit-close-force-"));
    dirs.push(dir);
    const script = join(dir, "close-force.ts");
    writeFileSync(
      script,
      `import { JobClient } from ${JSON.stringify(join(__dirname, "../../sdk/jobs"))};
const client = new JobClient({ apiKey: process.env.KEY, endpointId: process.env.EP, baseUrl: process.env.URL });
void (async () => {
  const held = client.runSync({ input: {} }, { wait: 300_000 }).catch((e) => e);
  const { id } = await client.run({ input: {} });
  const stream = client.stream(id)[Symbol.asyncIterator]().next().catch((e) => e);
  // A client of a port nobody listens on: its polls are retried with backoff, then polled through
  // as an outage for a minute; the close ends that too, wherever it is (a backoff, an attempt, a pause).
  const dead = new JobClient({ apiKey: process.env.KEY, endpointId: process.env.EP, baseUrl: "http://127.0.0.1:1/v2" });
  const outage = dead.waitFor(id).catch((e) => e);
  await new Promise((resolve) => setTimeout(resolve, 300));
  await Promise.all([client.close({ force: true }), dead.close({ force: true })]);
  for (const error of [await held, await stream, await outage]) console.log(error.constructor.name, error.operation);
  // No process.exit: the process ends only if nothing of the client is left.
})();
`,
    );
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", script], {
      cwd: join(__dirname, "../.."),
      env: { ...process.env, KEY: service.apiKey, EP: endpointId, URL: `${service.queueUrl}/v2` },
      timeout: 20_000,
    });
    expect(stdout.trim().split("\n")).toEqual([
      "AbortedError jobs.runSync",
      "AbortedError jobs.stream",
      "AbortedError jobs.waitFor",
    ]);
  });
});

describe("close()", () => {
  it("waits for a call in its retry backoff, which then ends with the service's answer", async () => {
    // The backoff runs when the test says (the injectable schedule), so close() is called during it.
    const backoffs: Array<() => void> = [];
    const jobs = new JobClient({
      apiKey: service.apiKey,
      endpointId,
      baseUrl: `${service.queueUrl}/v2`,
      retries: 1,
      retry: { schedule: (run) => backoffs.push(run) },
    });
    // The service allows 2 /purge-queue per 10 s per endpoint: the third answers 429, and is retried.
    await jobs.purgeQueue();
    await jobs.purgeQueue();
    const call = failure(jobs.purgeQueue());
    await expect.poll(() => backoffs.length).toBe(1);
    let closed = false;
    const closing = jobs.close().then(() => {
      closed = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    backoffs[0]?.();
    // The retry reached the service (another 429, its last): not "The client is destroyed".
    const error = await call;
    expect(error.toJSON()).toMatchObject({ code: "RATE_LIMITED", status: 429, operation: "jobs.purgeQueue" });
    await closing;
    expect(closed).toBe(true);
  });
});
