import { connect, type Socket } from "node:net";
import { request } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../service/clock";
import { type Answer, fieldOf, messageOf, send } from "./answers";
import { type Harness, KEY, restartableHarnesses, startHarness } from "./jobs/harness";
import { ProtocolWorker } from "./jobs/protocol-worker";

/*
 * Rules of the job API's edge the third spec audit settled, over HTTP on a service with the job API's
 * fast path and on one without it (every request through Fastify): a JSON body in a charset other
 * than UTF-8, a number past a double's range, TIMED_OUT in /health, and a worker's result for a job
 * the service does not know.
 */

/** A POST with a body (the job API's and management routes' JSON). */
function post(
  h: Harness,
  path: string,
  body: string | Buffer,
  contentType = "application/json",
): Promise<Answer> {
  return send(h, "POST", path, body, contentType);
}

let fast: Harness;
let plain: Harness;
beforeAll(async () => {
  fast = await startHarness();
  plain = await startHarness({ config: { fastPath: false } });
});
afterAll(async () => {
  await fast?.close();
  await plain?.close();
});

/** The input a job holds, as the handler would get it (/status does not show a job's input). */
function inputOf(h: Harness, id: string): unknown {
  return h.plane.book.find(id)?.input;
}

describe("a JSON body is UTF-8: another charset is refused with 415, naming it", () => {
  const CAFE = { input: { name: "café" } };

  it.each([
    ["utf-16", Buffer.from(JSON.stringify(CAFE), "utf16le")],
    ["iso-8859-1", Buffer.from(JSON.stringify(CAFE), "latin1")],
    ['"UTF-16LE"', Buffer.from(JSON.stringify(CAFE), "utf16le")],
  ])("charset=%s: /run, /runsync, REST and GraphQL", async (charset, bytes) => {
    for (const h of [fast, plain]) {
      const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
      for (const path of [`/v2/${ep.id}/run`, `/v2/${ep.id}/runsync`, "/v1/networkvolumes", "/graphql"]) {
        const answer = await post(h, path, bytes, `application/json; charset=${charset}`);
        const shown = charset.replaceAll('"', "").toLowerCase();
        expect(answer.status, `${charset} ${path}`).toBe(415);
        expect(messageOf(answer), path).toBe(
          `body: charset "${shown}" is not accepted: JSON is UTF-8 (RFC 8259); send the body as UTF-8 with content-type: application/json`,
        );
        expect(fieldOf(answer), path).toBe("body");
      }
    }
  });

  it.each([
    "application/json; charset=utf-8",
    "application/json; charset=UTF-8",
    'application/json; charset="utf-8"',
    "application/json;charset=Utf-8",
    "Application/JSON; Charset=UTF-8",
    "application/json; charset=us-ascii",
  ])("%s is taken, and the body read as UTF-8", async (type) => {
    for (const h of [fast, plain]) {
      const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
      const served = h.plane.fast?.served ?? 0;
      const answer = await post(h, `/v2/${ep.id}/run`, JSON.stringify(CAFE), type);
      expect(answer.status, type).toBe(200);
      expect(inputOf(h, String(answer.body.id))).toEqual({ name: "café" });
      // The plain spellings stay on the fast path.
      if (h === fast && type.startsWith("application/json;")) expect(h.plane.fast?.served).toBe(served + 1);
    }
  });

  it("a worker's result is read whatever its content-type says (the Python library's own header)", async () => {
    for (const h of [fast, plain]) {
      const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
      const worker = new ProtocolWorker(h, ep.id, "w-charset");
      const queued = await post(h, `/v2/${ep.id}/run`, JSON.stringify(CAFE));
      expect((await worker.take()).status).toBe(200);
      expect((await worker.done(String(queued.body.id), { output: "é" })).status).toBe(200);
    }
  });
});

/** What a raw connection got: the reply's text, and whether the server closed the connection. */
interface RawReply {
  text: string;
  closedByServer: boolean;
}

/** headersOnly's connections, destroyed after each test (one the server never answers would hold it open). */
const rawSockets: Socket[] = [];
afterEach(() => {
  for (const socket of rawSockets.splice(0)) socket.destroy();
});

/**
 * Sends only the headers of a POST declaring `declared` bytes ("chunked": a chunked body), and
 * `start` of its body, then waits for the server to answer and close the connection (the rest of
 * the body is never sent).
 */
function headersOnly(
  h: Harness,
  path: string,
  contentType: string,
  declared: number | "chunked",
  start: string,
) {
  const { port } = new URL(h.url);
  return new Promise<RawReply>((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1");
    rawSockets.push(socket);
    let text = "";
    let closedByServer = false;
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
    });
    socket.on("end", () => {
      closedByServer = true;
    });
    socket.on("error", reject);
    socket.on("close", () => resolve({ text, closedByServer }));
    socket.write(
      `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: ${KEY}\r\n` +
        `content-type: ${contentType}\r\n` +
        (declared === "chunked"
          ? `transfer-encoding: chunked\r\n\r\n${start.length.toString(16)}\r\n${start}\r\n`
          : `content-length: ${declared}\r\n\r\n${start}`),
    );
  });
}

describe("a charset other than UTF-8 is refused before the body is read", () => {
  const MB = 1024 * 1024;

  it("a body declared up to the route's limit gets its 415 on its headers, and the connection closes", {
    timeout: 20_000,
  }, async () => {
    for (const h of [fast, plain]) {
      const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
      const routes: [string, number | "chunked"][] = [
        // Each just under its route's limit (a larger one is refused 413 unread): the old parser
        // waited for all of it before refusing.
        [`/v2/${ep.id}/run`, 10 * MB - 1],
        [`/v2/${ep.id}/runsync`, 20 * MB - 1],
        ["/v1/networkvolumes", MB - 1],
        ["/graphql", MB - 1],
        // Past every limit: the charset is named first all the same.
        [`/v2/${ep.id}/run`, 50 * MB],
        // A chunked body, whose size nothing declares.
        [`/v2/${ep.id}/runsync`, "chunked"],
        ["/graphql", "chunked"],
      ];
      for (const [path, declared] of routes) {
        const reply = await headersOnly(h, path, "application/json; charset=utf-16", declared, "{\0");
        const [head = "", body = ""] = reply.text.split("\r\n\r\n");
        expect(head.split("\r\n")[0], `${path} ${declared}`).toBe("HTTP/1.1 415 Unsupported Media Type");
        expect(head.toLowerCase()).toContain("connection: close");
        const answer = { status: 415, body: JSON.parse(body) as Record<string, unknown> };
        expect(messageOf(answer), path).toBe(
          'body: charset "utf-16" is not accepted: JSON is UTF-8 (RFC 8259); send the body as UTF-8 with content-type: application/json',
        );
        expect(fieldOf(answer), path).toBe("body");
        expect(reply.closedByServer, path).toBe(true);
      }
      // Nothing was queued, and the service still answers on the same routes.
      const health = await send(h, "GET", `/v2/${ep.id}/health`);
      expect(health.body.jobs).toMatchObject({ inQueue: 0, inProgress: 0 });
      const run = await post(h, `/v2/${ep.id}/run`, '{"input": {"n": 1}}', "application/json; charset=utf-8");
      expect(run.status).toBe(200);
    }
  });

  it("a worker's body is still read whatever charset its content-type names", async () => {
    for (const h of [fast, plain]) {
      const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
      const worker = new ProtocolWorker(h, ep.id, "w-utf16-label");
      const queued = await post(h, `/v2/${ep.id}/run`, '{"input": {"n": 1}}');
      const id = String(queued.body.id);
      expect((await worker.take()).status).toBe(200);
      const reply = await request(
        `${h.url}/v2/${ep.id}/job-done/${worker.id}/${id}?gpu=LOCAL&isStream=false`,
        {
          method: "POST",
          headers: { authorization: worker.key, "content-type": "application/json; charset=utf-16" },
          body: JSON.stringify({ output: "é" }),
        },
      );
      expect(reply.statusCode).toBe(200);
      await reply.body.dump();
      const status = await send(h, "GET", `/v2/${ep.id}/status/${id}`);
      expect(status.body).toMatchObject({ status: "COMPLETED", output: "é" });
    }
  });
});

describe("a number past a double's range is refused with 400 naming its path", () => {
  it.each([
    ['{"input": {"x": 1e400}}', "input.x"],
    ['{"input": {"list": [1, 2, -1E+999]}}', "input.list.2"],
    [`{"input": {"big": ${"9".repeat(400)}}}`, "input.big"],
    ['{"input": {"ok": 1e-400, "deep": {"a": [{"b": 2e308}]}}}', "input.deep.a.0.b"],
  ])("%#: /run and /runsync", async (text, field) => {
    for (const h of [fast, plain]) {
      const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
      for (const path of [`/v2/${ep.id}/run`, `/v2/${ep.id}/runsync`]) {
        const answer = await post(h, path, text);
        expect(answer.status, path).toBe(400);
        expect(answer.body, path).toMatchObject({ code: "VALIDATION", field });
        expect(answer.body.error, path).toBe(
          `${field}: a number past a double's range (±1.7976931348623157e308) would be read as Infinity; send it as a string`,
        );
      }
    }
  });

  it("GraphQL variables and a REST body likewise", async () => {
    const graphql = await post(
      fast,
      "/graphql",
      JSON.stringify({
        query: "mutation S($input: SaveTemplateInput!) { saveTemplate(input: $input) { id } }",
        variables: { input: { name: "t", imageName: "i", containerDiskInGb: 5, volumeInGb: 0 } },
      }).replace('"containerDiskInGb":5', '"containerDiskInGb":5e999'),
    );
    expect(fieldOf(graphql)).toBe("variables.input.containerDiskInGb");
    const rest = await post(
      fast,
      "/v1/networkvolumes",
      '{"name": "v", "size": 1e400, "dataCenterId": "EU-RO-1"}',
    );
    expect(rest.status).toBe(400);
    expect(rest.body).toMatchObject({ code: "VALIDATION", field: "size" });
  });

  it("numbers inside a double's range, and digits in strings, are taken as they are", async () => {
    for (const h of [fast, plain]) {
      const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
      const text = `{"input": {"max": 1.7976931348623157e308, "tiny": 5e-324, "zero": 1e-400, "s": "1e400 ${"9".repeat(400)}"}}`;
      const answer = await post(h, `/v2/${ep.id}/run`, text);
      expect(answer.status).toBe(200);
      expect(inputOf(h, String(answer.body.id))).toEqual({
        max: 1.7976931348623157e308,
        tiny: 5e-324,
        zero: 0,
        s: `1e400 ${"9".repeat(400)}`,
      });
    }
  });
});

describe("/health: a TIMED_OUT job counts in `failed`", () => {
  const { storeFile, start, stop } = restartableHarnesses();

  it("from its execution timeout, across a restart, until a retry or its expiry takes it out", async () => {
    const { data } = storeFile("runpodkit-health-");
    const clock = new ManualClock();
    const first = await start(data, clock);
    const ep = first.endpoint("runpodkit/echo", { workersMax: 0 });
    const health = async (h: Harness) =>
      ((await h.call("GET", `/v2/${ep.id}/health`)).body as { jobs: object }).jobs;
    const run = async (h: Harness, workerId: string) => {
      const queued = await h.call("POST", `/v2/${ep.id}/run`, {
        body: { input: {}, policy: { executionTimeout: 5_000 } },
      });
      expect((await new ProtocolWorker(h, ep.id, workerId).take()).status).toBe(200);
      return (queued.body as { id: string }).id;
    };
    const id = await run(first, "w-health-1");
    const other = await run(first, "w-health-2");
    await clock.advance(5_000);
    expect((await first.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
      status: "TIMED_OUT",
    });
    expect(await health(first)).toEqual({ completed: 0, failed: 2, inProgress: 0, inQueue: 0, retried: 0 });
    await stop(first);

    const second = await start(data, new ManualClock(clock.now()));
    expect(await health(second)).toEqual({ completed: 0, failed: 2, inProgress: 0, inQueue: 0, retried: 0 });
    expect((await second.call("POST", `/v2/${ep.id}/retry/${id}`)).status).toBe(200);
    expect(await health(second)).toEqual({ completed: 0, failed: 1, inProgress: 0, inQueue: 1, retried: 1 });
    // The other job's result expires (30 minutes after /run): it leaves the count with it.
    await (second.clock as ManualClock).advance(31 * 60_000);
    expect((await second.call("GET", `/v2/${ep.id}/status/${other}`)).status).toBe(404);
    expect(await health(second)).toMatchObject({ failed: 0 });
  });
});

describe("job-done for a job the service does not know: 404 and nothing else", () => {
  it("stopPod is not acted on, and the worker keeps the job it holds", async () => {
    for (const h of [fast, plain]) {
      const ep = h.endpoint("runpodkit/echo", { workersMax: 0 });
      const worker = new ProtocolWorker(h, ep.id, "w-unknown");
      const queued = await post(h, `/v2/${ep.id}/run`, '{"input": {}}');
      const id = String(queued.body.id);
      expect((await worker.take()).status).toBe(200);
      const replaced: string[] = [];
      const off = h.plane.events.on("worker.replace", (session) => replaced.push(session.id));
      try {
        const unknown = await worker.done("no-such-job", { output: 1, stopPod: true });
        expect(unknown.status).toBe(404);
        expect(unknown.body).toMatchObject({ code: "NOT_FOUND", error: "job no-such-job not found" });
        // An empty id: 400 naming jobId, and nothing else either.
        const empty = await worker.done("", { output: 1, stopPod: true });
        expect(empty.status).toBe(400);
        expect(replaced).toEqual([]);
        const session = h.plane.dispatcher.session(ep.id, worker.id);
        expect([...(session?.held.keys() ?? [])]).toEqual([id]);
        // Its real result still completes the job, and that stopPod is acted on.
        expect((await worker.done(id, { output: 2, stopPod: true })).status).toBe(200);
        expect(replaced).toEqual([worker.id]);
        expect((await h.call("GET", `/v2/${ep.id}/status/${id}`)).body).toMatchObject({
          status: "COMPLETED",
          output: 2,
        });
      } finally {
        off();
      }
    }
  });
});
