/**
 * What a handler author meets when a handler misbehaves, on the real path: a service starting real
 * worker processes (the worker runtime) for handler modules written as a user writes them (plain
 * .mjs here), the results read back through the job API and the endpoint's logs.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { eventually, type Harness, type HarnessOptions, KEY, startHarness } from "../jobs/harness";

type Envelope = { id: string; status: string; output?: unknown; error?: string; workerId?: string };
type Line = { message: string; requestId: string | null; stream: string };

const LOADER = `file://${resolve("node_modules/tsx/dist/loader.mjs")}`;
const MAIN = resolve("service/jobs/workers/runtime/main.ts");
const dir = mkdtempSync(join(tmpdir(), "runpodkit-handler-faults-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes a handler module and returns its path. */
function handler(name: string, source: string): string {
  const path = join(dir, name);
  writeFileSync(path, source);
  return path;
}

describe("a misbehaving handler, run by the worker runtime", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  /** A service mapping `acme/<name>` to the module; its endpoint. */
  const serve = async (name: string, source: string, options: HarnessOptions = {}) => {
    h = await startHarness({
      ...options,
      config: { ...options.config, handlers: { [`acme/${name}`]: handler(`${name}.mjs`, source) } },
    });
    return h.endpoint(`acme/${name}`);
  };
  const runsync = async (ep: EndpointRecord, input: unknown) =>
    (await h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { m: input } } })).body as Envelope;
  const run = async (ep: EndpointRecord, input: unknown) =>
    ((await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { m: input } } })).body as Envelope).id;
  const status = async (ep: EndpointRecord, id: string) =>
    (await h.call("GET", `/v2/${ep.id}/status/${id}`)).body as Envelope;
  const linesOf = async (ep: EndpointRecord, query = "") =>
    (await h.call("GET", `/v2/${ep.id}/logs${query}`)).text
      .split("\n")
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line) as Line);
  /** The job's log lines once one of them contains `text`. */
  const jobLog = (ep: EndpointRecord, id: string, text: string) =>
    eventually(async () => {
      const lines = await linesOf(ep, `?job=${id}`);
      return lines.some((line) => line.message.includes(text)) ? lines : undefined;
    });

  it("progress reported at every step of a tight loop: one post at a time, the newest value shown, nothing held ahead of the result", async () => {
    const ep = await serve(
      "progress-loop",
      `export async function handler(job, { progress, signal }) {
         for (let step = 1; step <= 20000; step++) progress({ step });
         // Held until cancelled: the test reads the progress shown meanwhile.
         if (job.input.m === "hold") await new Promise((resolve) => signal.addEventListener("abort", resolve));
         return { steps: 20000 };
       }`,
    );
    let posts = 0;
    h.app.server.on("request", (request: { method?: string; url?: string }) => {
      if (request.method === "POST" && request.url?.includes("/job-done/")) posts++;
    });
    const reply = await runsync(ep, "return");
    expect(reply).toMatchObject({ status: "COMPLETED", output: { steps: 20000 } });
    // The first step's post and the result: each call was a post, 20,000 queued ahead of the result
    // (a worker's memory and the result's delay grew with them).
    expect(posts).toBeLessThanOrEqual(3);

    const id = await run(ep, "hold");
    // The newest value is shown last: posts racing over several connections could end on an older one.
    const shown = await eventually(async () => {
      const job = await status(ep, id);
      return (job.output as { step?: number } | undefined)?.step === 20000 ? job : undefined;
    });
    expect(shown).toMatchObject({ status: "IN_PROGRESS", output: { step: 20000 } });
    await h.call("POST", `/v2/${ep.id}/cancel/${id}`);
  });

  it("an Error whose own text throws as it is read fails its job at once, naming what could be read", async () => {
    const ep = await serve(
      "odd-errors",
      `export async function handler(job) {
         const error = new Error("odd");
         if (job.input.m === "symbol-name") error.name = Symbol("s");
         if (job.input.m === "getter")
           Object.defineProperty(error, "message", { get() { throw new Error("getter throws"); } });
         if (job.input.m === "proxy") throw new Proxy(new Error("p"), { get() { throw new Error("trap"); } });
         if (job.input.m === "stream")
           return (async function* () { yield 1; throw new Proxy(new Error("p"), { get() { throw new Error("trap"); } }); })();
         throw error;
       }`,
    );
    // The runtime's own failure path threw reading them: no result was posted, the job ran again as if
    // its worker were lost, and ended FAILED "worker ... was lost" after its retries.
    const expected = {
      "symbol-name": { error_type: "<class 'Error'>", error_message: "odd" },
      getter: { error_type: "<class 'Error'>" },
      proxy: { error_type: "<class 'Error'>" },
    };
    for (const [m, shape] of Object.entries(expected)) {
      const reply = await runsync(ep, m);
      expect(reply.status).toBe("FAILED");
      expect(JSON.parse(reply.error ?? "null")).toMatchObject(shape);
    }
    const streamed = await runsync(ep, "stream");
    expect(streamed).toMatchObject({ status: "FAILED", error: expect.stringMatching(/^handler: /) });
    const health = (await h.call("GET", `/v2/${ep.id}/health`)).body as { jobs: Record<string, number> };
    expect(health.jobs).toMatchObject({ failed: 4, retried: 0 });
  });

  it("a progress value JSON cannot carry is not sent, and the job goes on to its result", async () => {
    const ep = await serve(
      "progress",
      `export async function handler(job, context) {
         if (job.input.m === "bigint") context.progress({ n: 1n });
         else { const o = {}; o.self = o; context.progress(o); }
         await new Promise((r) => setTimeout(r, 300));
         context.progress({ step: 2 });
         return { done: job.input.m };
       }`,
    );
    for (const input of ["bigint", "circular"]) {
      const reply = await runsync(ep, input);
      // It was FAILED at once ("handler output is not JSON-serialisable") while the handler ran on.
      expect(reply).toMatchObject({ status: "COMPLETED", output: { done: input } });
      const lines = await jobLog(ep, reply.id, "progress update not sent");
      expect(lines.map((l) => l.message)).toContainEqual(
        expect.stringMatching(
          /^progress update not sent: its value is not JSON-serialisable \(.*(BigInt|circular)/,
        ),
      );
    }
  });

  it("a stream chunk JSON cannot carry fails the job naming the chunk; a bare yield is a null chunk", async () => {
    const ep = await serve(
      "chunks",
      `export async function* handler(job) {
         yield "first";
         if (job.input.m === "bigint") yield { n: 1n };
         if (job.input.m === "bare") yield;
         if (job.input.m === "error") yield { error: { code: 7 } };
         yield "last";
       }`,
    );
    const streamOf = async (id: string) =>
      (
        (await h.call("GET", `/v2/${ep.id}/stream/${id}`)).body as { stream: { output: unknown }[] }
      ).stream.map((c) => c.output);
    const bigint = await runsync(ep, "bigint");
    // It was dropped without a word and the job COMPLETED.
    expect(bigint.status).toBe("FAILED");
    expect(bigint.error).toMatch(/^handler: stream chunk 1 is not JSON-serialisable: .*BigInt/);
    expect(await streamOf(bigint.id)).toEqual(["first"]);

    const bare = await runsync(ep, "bare");
    expect(bare.status).toBe("COMPLETED");
    expect(await streamOf(bare.id)).toEqual(["first", null, "last"]);

    // The Python library's str(error): the value, not "[object Object]".
    const error = await runsync(ep, "error");
    expect(error).toMatchObject({ status: "FAILED", error: "{ code: 7 }" });
  });

  it("nothing returned is a null output; a function returned or yielded fails the job", async () => {
    const ep = await serve(
      "returns",
      `export async function handler(job) {
         if (job.input.m === "nothing") return;
         if (job.input.m === "function") return () => 1;
         return (async function* () { yield 1; yield Symbol("s"); })();
       }`,
    );
    const nothing = await runsync(ep, "nothing");
    // Python's None: {"output": null}. JSON dropped the key: COMPLETED with no output at all.
    expect(nothing).toMatchObject({ status: "COMPLETED", output: null });
    expect("output" in nothing).toBe(true);
    // JSON.stringify dropped it without an error: COMPLETED with no output.
    expect(await runsync(ep, "function")).toMatchObject({
      status: "FAILED",
      error: "handler output is not JSON-serialisable: it is a function",
    });
    expect(await runsync(ep, "stream")).toMatchObject({
      status: "FAILED",
      error: "handler: stream chunk 1 is not JSON-serialisable: it is a symbol",
    });
  });

  it("a returned value with toJSON (a Date, a Buffer, a decimal class) completes with its JSON, as JSON.stringify makes it", async () => {
    const ep = await serve(
      "tojson",
      `class Decimal {
         constructor(text) { this.d = [Number(text)]; this.e = 0; this.s = 1; }
         toJSON() { return String(this.d[0]); }
       }
       export async function handler(job) {
         if (job.input.m === "date") return new Date(0);
         if (job.input.m === "buffer") return Buffer.from("hi");
         if (job.input.m === "decimal") return new Decimal("1.5");
         if (job.input.m === "error-field") return { toJSON: () => ({ error: "from toJSON", kept: 1 }) };
         return { toJSON() { throw new Error("cannot"); } };
       }`,
    );
    expect(await runsync(ep, "date")).toMatchObject({
      status: "COMPLETED",
      output: "1970-01-01T00:00:00.000Z",
    });
    expect(await runsync(ep, "buffer")).toMatchObject({
      status: "COMPLETED",
      output: { type: "Buffer", data: [104, 105] },
    });
    expect(await runsync(ep, "decimal")).toMatchObject({ status: "COMPLETED", output: "1.5" });
    // The rules of a returned object apply to what toJSON gives.
    expect(await runsync(ep, "error-field")).toMatchObject({ status: "FAILED", error: "from toJSON" });
    expect(await runsync(ep, "throws")).toMatchObject({
      status: "FAILED",
      error: "handler output is not JSON-serialisable: cannot",
    });
  });

  it("a thrown non-Error is shown as the value it is, with its type and no traceback of the runtime", async () => {
    const ep = await serve(
      "throws",
      `export async function handler(job) {
         if (job.input.m === "string") throw "a plain string";
         if (job.input.m === "undefined") throw undefined;
         if (job.input.m === "object") throw { code: 42, message: "obj message" };
         const o = { a: 1 }; o.self = o; throw o;
       }`,
    );
    const payloadOf = async (input: string) => {
      const reply = await runsync(ep, input);
      expect(reply.status).toBe("FAILED");
      return { id: reply.id, ...(JSON.parse(reply.error ?? "") as Record<string, string>) };
    };
    expect(await payloadOf("string")).toMatchObject({
      error_type: "<class 'string'>",
      error_message: "a plain string",
      error_traceback: "",
    });
    expect(await payloadOf("undefined")).toMatchObject({
      error_type: "<class 'undefined'>",
      error_message: "undefined",
    });
    const object = await payloadOf("object");
    expect(object).toMatchObject({
      error_type: "<class 'object'>",
      error_message: "{ code: 42, message: 'obj message' }",
      error_traceback: "",
    });
    expect(await payloadOf("circular")).toMatchObject({
      error_message: "<ref *1> { a: 1, self: [Circular *1] }",
    });
    // The job's log shows the value too (it showed "[object Object]").
    const lines = await jobLog(ep, object.id, "Captured Handler Exception");
    expect(lines.map((l) => l.message)).toContain(
      "Captured Handler Exception\n{ code: 42, message: 'obj message' }",
    );
  });

  it.each([
    ["a modifier that returns nothing", "(current) => { current + 1; }", "concurrency returned undefined"],
    ["NaN", "Number.NaN", "concurrency is NaN"],
    ["a string", '"4"', 'concurrency is "4"'],
    [
      "a modifier that throws",
      '() => { throw new Error("no GPU count"); }',
      "concurrency threw Error: no GPU count",
    ],
  ])(
    "concurrency given as %s: the worker takes one job at a time and says why",
    async (_label, value, said) => {
      const ep = await serve(
        "concurrency",
        `export const handler = (job) => ({ ran: job.input.m });
       export const config = { concurrency: ${value} };`,
      );
      // It asked for batch_size=NaN (or threw), was refused, polled in a tight loop: the job stayed IN_QUEUE.
      expect(await runsync(ep, 1)).toMatchObject({ status: "COMPLETED", output: { ran: 1 } });
      const lines = await eventually(async () => {
        const all = await linesOf(ep);
        return all.some((l) => l.message.includes(said)) ? all : undefined;
      });
      expect(lines.filter((l) => l.message.includes(said)).map((l) => l.message)).toEqual([
        expect.stringMatching(/: the worker takes 1 job\(s\) at a time$/),
      ]);
    },
  );

  it("concurrency Infinity or a fraction: at most the largest batch, rounded down", async () => {
    const ep = await serve(
      "many",
      `let now = 0, most = 0;
       export async function handler(job) {
         now++; most = Math.max(most, now);
         await new Promise((r) => setTimeout(r, 200));
         now--; return most;
       }
       export const config = { concurrency: (current) => (current === 1 ? 2.5 : Infinity) };`,
    );
    const ids = await Promise.all([1, 2, 3].map((n) => run(ep, n)));
    const done = await Promise.all(
      ids.map((id) =>
        eventually(async () => {
          const s = await status(ep, id);
          return s.status === "COMPLETED" ? s : undefined;
        }),
      ),
    );
    expect(Math.max(...done.map((s) => s.output as number))).toBeGreaterThan(1);
    await jobLogAny(ep, "concurrency Infinity is above 1000");
  });
  const jobLogAny = (ep: EndpointRecord, text: string) =>
    eventually(async () => ((await linesOf(ep)).some((l) => l.message.includes(text)) ? true : undefined));

  it("an unhandled promise rejection is logged in the job's log; the worker and the job go on", async () => {
    const ep = await serve(
      "unhandled",
      `export async function handler(job) {
         Promise.reject(new Error("fire and forget"));
         await new Promise((r) => setTimeout(r, 200));
         return { pid: process.pid };
       }`,
    );
    const first = await runsync(ep, 1);
    // Node's default ended the worker: the job ran again on 3 more workers, then FAILED "worker lost".
    expect(first.status).toBe("COMPLETED");
    const lines = await jobLog(ep, first.id, "Unhandled promise rejection");
    expect(lines.find((l) => l.message.startsWith("Unhandled promise rejection"))?.message).toMatch(
      /^Unhandled promise rejection \(the worker goes on\)\nError: fire and forget\n\s+at /,
    );
    const second = await runsync(ep, 2);
    expect(second).toMatchObject({ status: "COMPLETED", workerId: first.workerId, output: first.output });
    const health = (await h.call("GET", `/v2/${ep.id}/health`)).body as { jobs: Record<string, number> };
    expect(health.jobs).toMatchObject({ completed: 2, failed: 0, retried: 0 });
  });

  it("a handler module with a syntax error: the endpoint's logs name the file and line, with a caret", async () => {
    const ep = await serve("syntax", "export async function handler(job) {\n  return ( ;\n}\n");
    await run(ep, 1);
    const lines = await eventually(async () => {
      const all = (await linesOf(ep)).map((l) => l.message);
      return all.some((m) => m.startsWith("SyntaxError")) ? all : undefined;
    });
    const at = lines.indexOf(`runpodkit worker: the handler module ${join(dir, "syntax.mjs")} did not load:`);
    expect(at).toBeGreaterThanOrEqual(0);
    // Only "SyntaxError: Unexpected token ';'" and Node's loader frames: no file, no line.
    expect(lines.slice(at + 1, at + 5)).toEqual([
      `file://${join(dir, "syntax.mjs")}:2`,
      "  return ( ;",
      "           ^",
      "",
    ]);
    expect(lines[at + 5]).toBe("SyntaxError: Unexpected token ';'");
  });

  it("a cancelled job whose handler rejects with the signal's reason logs no exception", async () => {
    const ep = await serve(
      "cancel",
      `export async function handler(job, { signal }) {
         await new Promise((resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
       }`,
    );
    const id = await run(ep, 1);
    await eventually(async () => ((await status(ep, id)).status === "IN_PROGRESS" ? true : undefined));
    await h.call("POST", `/v2/${ep.id}/cancel/${id}`);
    const lines = await jobLog(ep, id, "Stopped by the platform.");
    expect(lines.map((l) => l.message)).toEqual(["Started.", "Stopped by the platform."]);
  });

  it("a post that never reaches the platform is logged in its job's log", async () => {
    h = await startHarness();
    const ep = h.endpoint("acme/by-hand", { workersMax: 0 });
    const base = `${h.url}/v2/${ep.id}`;
    const module = handler("stream-by-hand.mjs", 'export async function* handler() { yield "lost"; }\n');
    // A worker run by hand whose job-stream address has nobody listening (port 1).
    const worker = spawn(process.execPath, ["--import", LOADER, MAIN, module], {
      env: {
        PATH: process.env.PATH ?? "",
        RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID`,
        RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID`,
        RUNPOD_WEBHOOK_POST_STREAM: "http://127.0.0.1:1/job-stream/$RUNPOD_POD_ID/$ID",
        RUNPOD_AI_API_KEY: KEY,
        RUNPOD_POD_ID: "by-hand",
        RUNPOD_ENDPOINT_ID: ep.id,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    worker.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    worker.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    try {
      const reply = (await h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: {} } })).body as Envelope;
      expect(reply.status).toBe("COMPLETED");
      const failed = await eventually(() =>
        stdout
          .split("\n")
          .filter((line) => line.startsWith("{"))
          .map((line) => JSON.parse(line) as { requestId: string | null; message: string; level: string })
          .find((line) => line.message.startsWith("Failed to return job results.")),
      );
      // It went to stderr as "runpodkit worker: failed to post to the platform: ...", naming no job.
      expect(failed).toMatchObject({ requestId: reply.id, level: "ERROR" });
      expect(failed.message).toMatch(/^Failed to return job results\. \| .*ECONNREFUSED/);
      expect(stderr).toBe("");
    } finally {
      worker.kill("SIGKILL");
    }
  }, 30_000);
});

describe("local test mode (--test_input, or no RUNPOD_WEBHOOK_GET_JOB)", () => {
  const exec = promisify(execFile);
  const local = async (module: string, ...args: string[]) => localWith({}, module, ...args);
  const localWith = async (env: Record<string, string>, module: string, ...args: string[]) =>
    exec(process.execPath, ["--import", LOADER, MAIN, module, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      timeout: 20_000,
    }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );

  it("a --test_input that is not a JSON object is one line naming it, exit code 1", async () => {
    const module = handler("echo-local.mjs", "export const handler = (job) => job.input;\n");
    for (const given of ["{bad", "[1]"]) {
      const { code, stdout, stderr } = await local(module, "--test_input", given);
      expect(code).toBe(1);
      expect(stdout).toBe("");
      // It was an unhandled rejection's stack.
      expect(stderr).toMatch(/^--test_input is not a JSON job object \(\{"input": \.\.\.\}\): [^\n]+\n$/);
    }
  });

  it("an output JSON cannot carry is printed as the job's error, exit code 1", async () => {
    const module = handler("bigint-local.mjs", "export const handler = () => ({ n: 1n });\n");
    const { code, stdout } = await local(module, "--test_input", '{"input": 1}');
    expect(code).toBe(1);
    expect(JSON.parse(stdout)).toEqual({
      error: "handler output is not JSON-serialisable: Do not know how to serialize a BigInt",
    });
  });

  it("--test_input runs the local test job even with RUNPOD_WEBHOOK_GET_JOB set", async () => {
    const module = handler("echo-env.mjs", "export const handler = (job) => ({ got: job.input });\n");
    // It polled the job-take address (nobody listening here) and never ran the test job.
    const { code, stdout } = await localWith(
      { RUNPOD_WEBHOOK_GET_JOB: "http://127.0.0.1:1/v2/ep/job-take/$ID", RUNPOD_POD_ID: "w" },
      module,
      "--test_input",
      '{"input": {"a": 1}}',
    );
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ output: { got: { a: 1 } } });
  });
});
