import fc from "fast-check";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STREAM_POSITION_HEADER } from "../../sdk/schemas/job";
import { KEY } from "../service/jobs/harness";
import {
  expectServed,
  type FuzzReply,
  type FuzzRequest,
  type FuzzService,
  fuzzParameters,
  fuzzSeed,
  hostileString,
  startFuzzService,
} from "./support";

/*
 * The job API's /stream with `received` (the reader's stream position) and the position header. A
 * reader that follows the protocol (sends the position of the last reply it read; a reply it lost
 * leaves its position where it was) reads every chunk once, in order, whatever replies it loses and
 * however the worker's chunks fall between its polls. Arbitrary `received` values never answer 5xx;
 * malformed ones are refused with 400 naming `received`.
 */
let service: FuzzService;
const seed = fuzzSeed("stream");
const LONG = { executionTimeout: 7 * 24 * 3_600_000, ttl: 7 * 24 * 3_600_000 };
const W = "w-stream";
let workerN = 0;

beforeAll(async () => {
  service = await startFuzzService();
});
afterAll(async () => service.h.close());

interface Reply extends FuzzReply {
  position: string | undefined;
}

/** One request; a held /stream has the ManualClock moved until it is answered. */
async function call(req: FuzzRequest): Promise<Reply> {
  let answered = false;
  const reply = request(`${service.h.url}${req.path}`, {
    method: req.method as "GET",
    headers: req.headers ?? { authorization: KEY },
    body: req.body,
  }).then(async (r) => ({
    status: r.statusCode,
    text: await r.body.text(),
    position: r.headers[STREAM_POSITION_HEADER] as string | undefined,
  }));
  const settled = reply.finally(() => {
    answered = true;
  });
  while (!answered) {
    await Promise.race([settled.catch(() => {}), new Promise((resolve) => setTimeout(resolve, 5))]);
    if (!answered) await service.clock.advance(60_000);
  }
  return reply;
}

const post = (path: string, body: unknown): FuzzRequest => ({
  method: "POST",
  path,
  headers: { authorization: KEY, "content-type": "application/json" },
  body: JSON.stringify(body),
});

/** A job taken by a worker of its own (each job its own worker id); its id and worker. */
async function runningJob(): Promise<{ id: string; worker: string }> {
  const ep = service.endpoint.id;
  const run = await call(post(`/v2/${ep}/run`, { input: { n: 1 }, policy: LONG }));
  expect(run.status, run.text).toBe(200);
  const id = (JSON.parse(run.text) as { id: string }).id;
  const worker = `${W}-${++workerN}`;
  const taken = await call({
    method: "GET",
    path: `/v2/${ep}/job-take-batch/${worker}?batch_size=1&job_in_progress=0`,
  });
  expect((JSON.parse(taken.text) as { id: string }[]).map((j) => j.id)).toEqual([id]);
  return { id, worker };
}

/** A step of a run: the worker streams chunks, or the reader polls (and reads or loses the reply). */
const step = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("chunks" as const), n: fc.integer({ min: 1, max: 3 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("poll" as const),
      lost: fc.boolean(),
      method: fc.constantFrom("GET", "POST"),
    }),
  },
);

describe("fuzz: /stream with `received`", () => {
  it("a reader that follows the protocol reads every chunk once, in order, whatever replies it loses", {
    timeout: 120_000,
  }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
        const ep = service.endpoint.id;
        const { id, worker } = await runningJob();
        let sent = 0;
        const read: string[] = [];
        // Every poll says its position, the first one too (0), as the SDK's stream() does.
        let position = 0;
        let done = false;
        const poll = async (method: string, lost: boolean) => {
          const reply = await call({ method, path: `/v2/${ep}/stream/${id}?received=${position}` });
          expect(reply.status, reply.text).toBe(200);
          const body = JSON.parse(reply.text) as { status: string; stream: { output: string }[] };
          const at = Number(reply.position);
          // The header counts the chunks handed out up to and including this reply.
          expect(at - body.stream.length, reply.text).toBe(position);
          if (lost) return body;
          read.push(...body.stream.map((c) => c.output));
          position = at;
          return body;
        };
        for (const s of steps) {
          if (s.kind === "chunks") {
            for (let i = 0; i < s.n; i++) {
              const chunk = await call(
                post(`/v2/${ep}/job-stream/${worker}/${id}?isStream=true`, { output: `c${sent}` }),
              );
              expect(chunk.status, chunk.text).toBe(200);
              sent++;
            }
          } else await poll(s.method, s.lost);
        }
        const finished = await call(
          post(`/v2/${ep}/job-done/${worker}/${id}?isStream=true`, { output: "end" }),
        );
        expect(finished.status, finished.text).toBe(200);
        for (let polls = 0; !done && polls < 10; polls++) {
          const body = await poll("GET", false);
          done = body.status === "COMPLETED" && body.stream.length === 0;
        }
        expect(done).toBe(true);
        expect(read).toEqual(Array.from({ length: sent }, (_, i) => `c${i}`));
      }),
      fuzzParameters(seed, 60),
    );
  });

  it("arbitrary `received` values never answer 5xx; malformed ones are refused naming `received`", {
    timeout: 120_000,
  }, async () => {
    const { id: otherJob } = await runningJob();
    const digits = fc.oneof(
      fc.nat().map(String),
      fc.constantFrom("0", "9007199254740991", "9007199254740992", "99999999999999999999", "00", "007"),
    );
    const malformed = fc.oneof(
      fc.constantFrom("-1", "", "1e3", "0x10", "1.0", "+1", " 1", "NaN", "Infinity", "١"),
      hostileString.map((s) => s.slice(0, 200)),
    );
    const received = fc.oneof(
      { weight: 2, arbitrary: digits.map((v) => [v]) },
      { weight: 2, arbitrary: malformed.map((v) => [v]) },
      { weight: 1, arbitrary: fc.array(fc.oneof(digits, malformed), { minLength: 2, maxLength: 3 }) },
    );
    const ownJob = await runningJob();
    await fc.assert(
      fc.asyncProperty(
        received,
        fc.constantFrom("GET", "POST"),
        fc.boolean(),
        async (values, method, other) => {
          const ep = service.endpoint.id;
          const id = other ? otherJob : ownJob.id;
          const query = values.map(
            (v) => `received=${encodeURIComponent(v.replace(/[\ud800-\udfff]/gu, "\ufffd"))}`,
          );
          // Chunks for the reply to hand out.
          await call(
            post(`/v2/${ep}/job-stream/${ownJob.worker}/${ownJob.id}?isStream=true`, { output: "x" }),
          );
          const req: FuzzRequest = {
            method,
            path: `/v2/${ep}/stream/${id}?${query.join("&")}`,
            headers: { authorization: KEY },
          };
          const reply = await call(req);
          await expectServed(service, req, reply);
          const valid =
            values.length === 1 &&
            /^\d{1,16}$/.test(values[0] as string) &&
            Number(values[0]) <= Number.MAX_SAFE_INTEGER;
          if (valid) {
            expect(reply.status, reply.text).toBe(200);
            expect(reply.position, reply.text).toMatch(/^\d+$/);
          } else {
            expect(reply.status, reply.text).toBe(400);
            expect(JSON.parse(reply.text), reply.text).toMatchObject({
              code: "VALIDATION",
              field: "received",
            });
          }
        },
      ),
      fuzzParameters(seed, 150),
    );
  });
});
