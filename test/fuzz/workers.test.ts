import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EndpointRecord } from "../../service/management/model/endpoint";
import { KEY, OTHER_KEY } from "../service/jobs/harness";
import {
  expectServed,
  type FuzzRequest,
  type FuzzService,
  fuzzParameters,
  fuzzSeed,
  hostileValue,
  send,
  startFuzzService,
} from "./support";

/**
 * Hostile workers: a handler is user code, and a worker run by hand names its own id, so a worker of
 * another endpoint (of the same account or of another) can send job-done, progress and stream chunks
 * naming a job it was never handed, under the id of the worker that holds it. None of it may touch
 * the job: it answers as an unknown job (404, or the refusal of its body), the job stays as its own
 * worker left it, and its own worker's result is the one kept.
 */
let service: FuzzService;
/** A second endpoint of the first account. */
let sibling: EndpointRecord;
const seed = fuzzSeed("workers");
/** Small, so a too-large result (413, which ends the job it names) is cheap to send. */
const WORKER_BODY_LIMIT = 8 * 1024;
const OWN = "w-own";

beforeAll(async () => {
  service = await startFuzzService({ workerBodyLimit: WORKER_BODY_LIMIT });
  sibling = service.h.endpoint("runpodkit/echo", { workersMax: 0 });
});
afterAll(async () => service.h.close());

/** Who sends it: a worker of the sibling endpoint, or of the other account's; the holder's id or another. */
const party = fc.record({
  foreign: fc.constantFrom("sibling endpoint", "other account"),
  workerId: fc.oneof(fc.constant(OWN), fc.constantFrom("w-other", "w-1", OWN.toUpperCase())),
});

const resultBody = fc.record(
  { output: hostileValue, error: hostileValue, stopPod: fc.boolean() },
  { requiredKeys: [] },
);

const action = fc.record({
  party,
  kind: fc.constantFrom("done", "progress", "stream", "too large"),
  body: resultBody,
});

type Action = typeof action extends fc.Arbitrary<infer T> ? T : never;

/** The request a foreign worker sends about `jobId`. */
function foreignRequest(a: Action, jobId: string): FuzzRequest {
  const ep = a.party.foreign === "sibling endpoint" ? sibling.id : service.otherEndpoint.id;
  const key = a.party.foreign === "sibling endpoint" ? KEY : OTHER_KEY;
  const base = `/v2/${ep}`;
  const w = a.party.workerId;
  const headers = { authorization: key, "content-type": "application/json" };
  switch (a.kind) {
    case "progress":
      return {
        method: "POST",
        path: `${base}/job-done/${w}/${jobId}?isStream=false`,
        headers,
        body: JSON.stringify({ ...a.body, status: "IN_PROGRESS" }),
      };
    case "stream":
      return {
        method: "POST",
        path: `${base}/job-stream/${w}/${jobId}?isStream=true`,
        headers,
        body: JSON.stringify(a.body),
      };
    case "too large":
      return {
        method: "POST",
        path: `${base}/job-done/${w}/${jobId}?isStream=false`,
        headers,
        body: JSON.stringify({ output: "x".repeat(WORKER_BODY_LIMIT + 1) }),
      };
    default:
      return {
        method: "POST",
        path: `${base}/job-done/${w}/${jobId}?isStream=false`,
        headers,
        body: JSON.stringify(a.body),
      };
  }
}

const own = (path: string, body?: unknown): FuzzRequest => {
  const req: FuzzRequest = {
    method: body === undefined ? "GET" : "POST",
    path,
    headers: { authorization: KEY },
  };
  if (body !== undefined) {
    req.headers = { ...req.headers, "content-type": "application/json" };
    req.body = JSON.stringify(body);
  }
  return req;
};

/** The clock moves a minute per held request (send): the job must outlive a run's requests. */
const LONG = { executionTimeout: 7 * 24 * 3_600_000, ttl: 7 * 24 * 3_600_000 };

/** Submits a job on the first endpoint and has OWN take it; its id. */
async function runningJob(): Promise<string> {
  const ep = service.endpoint.id;
  const run = await send(service, own(`/v2/${ep}/run`, { input: { n: 1 }, policy: LONG }));
  expect(run.status).toBe(200);
  const id = (JSON.parse(run.text) as { id: string }).id;
  const taken = await send(service, own(`/v2/${ep}/job-take-batch/${OWN}?batch_size=1&job_in_progress=0`));
  expect(taken.status).toBe(200);
  expect((JSON.parse(taken.text) as { id: string }[]).map((j) => j.id)).toEqual([id]);
  return id;
}

describe("fuzz: hostile workers of other endpoints and accounts", () => {
  it("never finish, fail, stream into or set the progress of a job they were not handed", {
    timeout: 120_000,
  }, async () => {
    const ep = service.endpoint.id;
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 5 }), async (actions) => {
        const id = await runningJob();
        for (const a of actions) {
          const req = foreignRequest(a, id);
          const reply = await send(service, req).catch((error: unknown) => {
            // A too-large body may be cut off once the 413 is sent: refused all the same.
            if (a.kind === "too large") return { status: 413, text: String(error) };
            throw error;
          });
          await expectServed(service, req, reply);
          // As an id no job has (or its body refused first): the job's existence does not leak.
          const answer =
            reply.status === 400 ? (JSON.parse(reply.text) as { code: string }).code : reply.status;
          expect(
            [404, 413, "VALIDATION"],
            `${a.party.foreign} ${a.kind}: ${reply.text.slice(0, 200)}`,
          ).toContain(answer);
        }
        const status = await send(service, own(`/v2/${ep}/status/${id}`));
        expect(JSON.parse(status.text), status.text).toMatchObject({
          id,
          status: "IN_PROGRESS",
          workerId: OWN,
        });
        expect(JSON.parse(status.text)).not.toHaveProperty("output");
        const stream = await send(service, own(`/v2/${ep}/stream/${id}`));
        expect(JSON.parse(stream.text), stream.text).toMatchObject({ status: "IN_PROGRESS", stream: [] });
        // The worker that holds it finishes it, with its own output.
        const done = await send(
          service,
          own(`/v2/${ep}/job-done/${OWN}/${id}?isStream=false`, { output: "mine" }),
        );
        expect(done.status).toBe(200);
        const final = await send(service, own(`/v2/${ep}/status/${id}`));
        expect(JSON.parse(final.text)).toMatchObject({ id, status: "COMPLETED", output: "mine" });
      }),
      fuzzParameters(seed, 60),
    );
  });

  it("two results for one job, in parallel with foreign ones: one winner, kept", {
    timeout: 60_000,
  }, async () => {
    const ep = service.endpoint.id;
    await fc.assert(
      fc.asyncProperty(fc.array(party, { minLength: 1, maxLength: 3 }), async (parties) => {
        const id = await runningJob();
        const doneOf = (output: string) =>
          send(service, own(`/v2/${ep}/job-done/${OWN}/${id}?isStream=false`, { output }));
        const replies = await Promise.all([
          doneOf("first"),
          ...parties.map((p) =>
            send(service, foreignRequest({ party: p, kind: "done", body: { output: "theirs" } }, id)),
          ),
          doneOf("second"),
        ]);
        expect(replies[0]?.status).toBe(200);
        expect(replies.at(-1)?.status).toBe(200);
        for (const reply of replies.slice(1, -1)) expect(reply.status).toBe(404);
        const final = JSON.parse((await send(service, own(`/v2/${ep}/status/${id}`))).text);
        expect(final).toMatchObject({ id, status: "COMPLETED" });
        expect(["first", "second"]).toContain(final.output);
        // Read again: the store agrees with itself.
        const again = JSON.parse((await send(service, own(`/v2/${ep}/status/${id}`))).text);
        expect(again).toEqual(final);
      }),
      fuzzParameters(seed, 20),
    );
  });

  it("HEAD on the routes that hand out work or drain chunks: 405, nothing handed out or drained", async () => {
    const ep = service.endpoint.id;
    const head = async (path: string) => {
      const reply = await send(service, { method: "HEAD", path, headers: { authorization: KEY } });
      return reply.status;
    };
    const run = await send(service, own(`/v2/${ep}/run`, { input: { n: 2 }, policy: LONG }));
    const id = (JSON.parse(run.text) as { id: string }).id;
    for (const path of [
      `/v2/${ep}/job-take/w-head?job_in_progress=0`,
      `/v2/${ep}/job-take-batch/w-head?batch_size=5&job_in_progress=0`,
      `/v2/${ep}/job-stop/w-head`,
      `/v2/${ep}/ping/w-head`,
    ]) {
      expect(await head(path), path).toBe(405);
    }
    const queued = JSON.parse((await send(service, own(`/v2/${ep}/status/${id}`))).text);
    expect(queued).toMatchObject({ id, status: "IN_QUEUE" });
    expect(queued).not.toHaveProperty("workerId");
    // Taken by a GET, it streams a chunk; a HEAD of the stream leaves it for the GET.
    const taken = await send(service, own(`/v2/${ep}/job-take-batch/${OWN}?batch_size=1&job_in_progress=0`));
    expect((JSON.parse(taken.text) as { id: string }[]).map((j) => j.id)).toEqual([id]);
    const chunk = await send(
      service,
      own(`/v2/${ep}/job-stream/${OWN}/${id}?isStream=true`, { output: "c1" }),
    );
    expect(chunk.status).toBe(200);
    expect(await head(`/v2/${ep}/stream/${id}`)).toBe(405);
    const stream = await send(service, own(`/v2/${ep}/stream/${id}`));
    expect(JSON.parse(stream.text)).toMatchObject({ status: "IN_PROGRESS", stream: [{ output: "c1" }] });
    const done = await send(service, own(`/v2/${ep}/job-done/${OWN}/${id}?isStream=false`, { output: "ok" }));
    expect(done.status).toBe(200);
    // HEAD of a read-only route is still served.
    expect(await head(`/v2/${ep}/health`)).toBe(200);
  });
});
