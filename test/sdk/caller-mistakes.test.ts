import { describe, expect, it } from "vitest";
import { RunpodkitError, ValidationError } from "../../sdk/errors";
import { GraphQLClient } from "../../sdk/graphql";
import { JobClient, type JobInput } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";
import { everyStringOf, json, startScriptedServer } from "./scripted-server";
import { closeAfterEach, failure } from "./support";

/**
 * A caller's mistakes (a body JSON cannot encode, a budget or retry count the HTTP layer cannot use)
 * are ValidationErrors naming the operation and the field, raised before anything is sent: never a
 * ConnectionError, which callers retry as transient.
 */

const KEY = "rpa_MISTAKEKEY_0123456789";
const cleanup = closeAfterEach();

async function jobsAgainstServer() {
  const server = await startScriptedServer((_hit, res) => json(res, 200, { id: "j1", status: "IN_QUEUE" }));
  const jobs = new JobClient({ apiKey: KEY, endpointId: "ep1", baseUrl: `${server.url}/v2` });
  cleanup.push(
    () => server.close(),
    () => jobs.close(),
  );
  return { server, jobs };
}

/** The error a constructor threw. */
function thrownBy(build: () => unknown): RunpodkitError {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(RunpodkitError);
    return error as RunpodkitError;
  }
  throw new Error("expected the constructor to throw");
}

describe("a body JSON cannot encode", () => {
  const circular: Record<string, unknown> = { a: 1 };
  circular.self = circular;
  const cases: Array<[string, JobInput, RegExp]> = [
    ["a BigInt", { input: { n: 1n } }, /BigInt/],
    ["a cycle", { input: circular }, /circular/i],
    [
      "a throwing toJSON",
      {
        input: {
          x: {
            toJSON() {
              throw new Error(`toJSON refused (key ${KEY})`);
            },
          },
        },
      },
      /toJSON refused/,
    ],
  ];
  for (const [name, submission, reason] of cases) {
    it(`is a ValidationError naming input and the operation, nothing sent: ${name}`, async () => {
      const { server, jobs } = await jobsAgainstServer();
      for (const [operation, call] of [
        ["jobs.run", () => jobs.run(submission)],
        ["jobs.runSync", () => jobs.runSync(submission, { wait: 1_000 })],
      ] as const) {
        const error = await failure(call());
        expect(error).toBeInstanceOf(ValidationError);
        expect(error.toJSON()).toMatchObject({ code: "VALIDATION", operation, field: "input" });
        expect(error.message).toMatch(
          new RegExp(`^${operation.replace(".", "\\.")}: input cannot be sent as JSON: `),
        );
        expect(error.message).toMatch(reason);
        expect(everyStringOf(error)).not.toContain(KEY);
      }
      expect(server.hits).toHaveLength(0);
    });
  }
});

describe("client options refused at construction", () => {
  const builders = {
    jobs: (extra: object) =>
      new JobClient({ apiKey: KEY, endpointId: "ep1", baseUrl: "http://127.0.0.1:9/v2", ...extra }),
    rest: (extra: object) => new RestClient({ apiKey: KEY, baseUrl: "http://127.0.0.1:9/v1", ...extra }),
    graphql: (extra: object) =>
      new GraphQLClient({ apiKey: KEY, baseUrl: "http://127.0.0.1:9/graphql", ...extra }),
  };
  for (const [operation, build] of Object.entries(builders)) {
    it(`${operation}: timeoutMs negative, NaN, Infinity or 0`, () => {
      for (const timeoutMs of [-1, Number.NaN, Number.POSITIVE_INFINITY, 0, 2 ** 31]) {
        const error = thrownBy(() => build({ timeoutMs }));
        expect(error).toBeInstanceOf(ValidationError);
        expect(error.toJSON()).toMatchObject({ code: "VALIDATION", operation, field: "timeoutMs" });
        expect(error.message).toContain(`got ${timeoutMs}`);
      }
      // 0 would mean "no timeout" to undici: the message says there is none and what to do instead.
      expect(thrownBy(() => build({ timeoutMs: 0 })).message).toMatch(/no "no timeout".*AbortSignal/);
    });

    it(`${operation}: retries NaN, negative or not an integer`, () => {
      for (const retries of [Number.NaN, -1, 1.5]) {
        const error = thrownBy(() => build({ retries }));
        expect(error).toBeInstanceOf(ValidationError);
        expect(error.toJSON()).toMatchObject({ code: "VALIDATION", operation, field: "retries" });
      }
    });

    it(`${operation}: retry durations NaN or negative, hooks not functions, connections out of range`, () => {
      const cases: [object, string][] = [
        [{ retry: { baseDelayMs: Number.NaN } }, "retry.baseDelayMs"],
        [{ retry: { maxDelayMs: -1 } }, "retry.maxDelayMs"],
        [{ retry: { maxRetryAfterMs: Number.POSITIVE_INFINITY } }, "retry.maxRetryAfterMs"],
        [{ retry: { schedule: "soon" } }, "retry.schedule"],
        [{ retry: null }, "retry"],
        [{ connections: 0 }, "connections"],
        [{ connections: 2.5 }, "connections"],
        [{ connections: Number.NaN }, "connections"],
      ];
      for (const [extra, field] of cases) {
        const error = thrownBy(() => build(extra));
        expect(error).toBeInstanceOf(ValidationError);
        expect(error.toJSON()).toMatchObject({ code: "VALIDATION", operation, field });
        expect(error.message).toContain(field);
      }
    });
  }

  it("jobs: a baseUrl that already ends with the endpoint id (the endpoint's URL pasted whole)", () => {
    // Before, each call went to /v2/ep1/ep1/...: a 404 naming neither baseUrl nor the doubled id.
    for (const baseUrl of [
      "http://127.0.0.1:9/v2/ep1",
      "http://127.0.0.1:9/v2/ep1/",
      "http://127.0.0.1:9/v2/ep1?x=1",
    ]) {
      const error = thrownBy(() => builders.jobs({ baseUrl }));
      expect(error).toBeInstanceOf(ValidationError);
      expect(error.toJSON()).toMatchObject({ code: "VALIDATION", operation: "jobs", field: "baseUrl" });
      expect(error.message).toContain("ends with the endpoint id ep1");
    }
  });

  it("jobs: a clock without now(), setTimer() and sleep()", () => {
    for (const clock of [null, {}, { now: () => 0, setTimer: () => ({ cancel() {} }) }, Date]) {
      const error = thrownBy(() => builders.jobs({ clock }));
      expect(error).toBeInstanceOf(ValidationError);
      expect(error.toJSON()).toMatchObject({ code: "VALIDATION", operation: "jobs", field: "clock" });
    }
  });

  it("accepts the bounds: 1 ms, 2^31-1 ms, 0 retries", async () => {
    const bounds = [
      { timeoutMs: 1 },
      { timeoutMs: 2 ** 31 - 1, retries: 0 },
      { retry: { baseDelayMs: 0, maxDelayMs: 0, maxRetryAfterMs: 0 }, connections: 1 },
    ];
    for (const options of bounds) {
      for (const build of Object.values(builders)) await build(options).close();
    }
  });
});

describe("per-call options", () => {
  it("a call's timeoutMs or poll interval out of range is a ValidationError, nothing sent", async () => {
    const { server, jobs } = await jobsAgainstServer();
    const cases: Array<[string, string, () => Promise<unknown>]> = [
      ["jobs.status", "timeoutMs", () => jobs.status("j1", { timeoutMs: Number.NaN })],
      ["jobs.cancel", "timeoutMs", () => jobs.cancel("j1", { timeoutMs: -5 })],
      ["jobs.runSync", "timeoutMs", () => jobs.runSync({ input: {} }, { timeoutMs: 0 })],
      ["jobs.waitFor", "timeoutMs", () => jobs.waitFor("j1", { timeoutMs: Number.NaN })],
      ["jobs.waitFor", "pollIntervalMs", () => jobs.waitFor("j1", { pollIntervalMs: -1 })],
      ["jobs.stream", "pollIntervalMs", () => jobs.stream("j1", { pollIntervalMs: Number.NaN }).next()],
    ];
    for (const [operation, field, call] of cases) {
      const error = await failure(call());
      expect(error).toBeInstanceOf(ValidationError);
      expect(error.toJSON()).toMatchObject({ operation, field });
    }
    expect(server.hits).toHaveLength(0);
  });
});

describe("ids that are dot path segments", () => {
  it('"." and ".." are refused as ValidationErrors naming the id field; nothing is sent', async () => {
    const server = await startScriptedServer((_hit, res) => json(res, 200, {}));
    const rest = new RestClient({ apiKey: KEY, baseUrl: `${server.url}/v1` });
    const jobs = new JobClient({ apiKey: KEY, endpointId: "ep1", baseUrl: `${server.url}/v2` });
    cleanup.push(
      () => server.close(),
      () => rest.close(),
      () => jobs.close(),
    );
    for (const id of [".", ".."]) {
      const built = thrownBy(
        () => new JobClient({ apiKey: KEY, endpointId: id, baseUrl: `${server.url}/v2` }),
      );
      expect(built).toBeInstanceOf(ValidationError);
      expect(built.toJSON()).toMatchObject({ operation: "jobs", field: "endpointId" });
      expect(built.message).toBe(`jobs: endpointId must not be "${id}" (a dot path segment)`);
      const cases: Array<[string, string, () => Promise<unknown>]> = [
        ["jobs.status", "jobId", () => jobs.status(id)],
        ["jobs.cancel", "jobId", () => jobs.cancel(id)],
        ["jobs.stream", "jobId", () => jobs.stream(id).next()],
        ["rest.templates.delete", "id", () => rest.templates.delete(id)],
        ["rest.endpoints.get", "id", () => rest.endpoints.get(id)],
        ["rest.pods.stop", "id", () => rest.pods.stop(id)],
      ];
      for (const [operation, field, call] of cases) {
        const error = await failure(call());
        expect(error).toBeInstanceOf(ValidationError);
        expect(error.toJSON()).toMatchObject({ code: "VALIDATION", operation, field });
      }
    }
    // Ids that merely contain dots are ids like any other.
    await jobs.status("a..b").catch(() => undefined);
    expect(server.hits.map((hit) => hit.url)).toEqual(["/v2/ep1/status/a..b"]);
  });
});

describe("a field the call does not take", () => {
  it("is a ValidationError whose field is that key (a misspelling, at any depth), nothing sent", async () => {
    const server = await startScriptedServer((_hit, res) => json(res, 200, {}));
    const rest = new RestClient({ apiKey: KEY, baseUrl: `${server.url}/v1` });
    const graphql = new GraphQLClient({ apiKey: KEY, baseUrl: `${server.url}/graphql` });
    const jobs = new JobClient({ apiKey: KEY, endpointId: "ep1", baseUrl: `${server.url}/v2` });
    cleanup.push(
      () => server.close(),
      () => rest.close(),
      () => graphql.close(),
      () => jobs.close(),
    );
    // Plain JavaScript callers (or a cast) get past the types: the SDK's own check must say which key.
    const loose = <T>(value: object) => value as T;
    const cases: Array<[string, string, () => Promise<unknown>]> = [
      [
        "rest.networkVolumes.list",
        "dataCenterId",
        () => rest.networkVolumes.list(loose({ dataCenterId: "x" })),
      ],
      [
        "rest.endpoints.create",
        "gpuTypeIDs",
        () => rest.endpoints.create(loose({ templateId: "t", gpuTypeIDs: ["NVIDIA A40"] })),
      ],
      ["rest.pods.list", "includeWorker", () => rest.pods.list(loose({ includeWorker: true }))],
      [
        "rest.templates.update",
        "imagename",
        () => rest.templates.update("t1", loose({ imagename: "img:2" })),
      ],
      [
        "graphql.saveEndpoint",
        "workersMaxx",
        () =>
          graphql.saveEndpoint(loose({ name: "e", templateId: "t", gpuIds: "AMPERE_16", workersMaxx: 3 })),
      ],
      [
        "jobs.run",
        "policy.executionTimeOut",
        () => jobs.run(loose({ input: {}, policy: { executionTimeOut: 60_000 } })),
      ],
      [
        "jobs.runSync",
        "webhok",
        () => jobs.runSync(loose({ input: {}, webhok: "https://example.com/hook" }), { wait: 1_000 }),
      ],
    ];
    for (const [operation, field, call] of cases) {
      const error = await failure(call());
      expect(error).toBeInstanceOf(ValidationError);
      expect(error.toJSON()).toMatchObject({ code: "VALIDATION", operation, field });
      expect(error.message).toContain(`"${field.split(".").at(-1)}"`);
    }
    expect(server.hits).toHaveLength(0);
  });
});
