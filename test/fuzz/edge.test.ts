import { Readable } from "node:stream";
import { deflateSync, gzipSync } from "node:zlib";
import fc from "fast-check";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY } from "../service/jobs/harness";
import { type FuzzService, fuzzParameters, fuzzSeed, send, startFuzzService } from "./support";

/**
 * The edge under compressed bodies: gzip, deflate, br and made-up codings on every wire's body-taking
 * routes (the fast path's /run, /runsync and job-done among them), a gzip bomb included. None is
 * inflated: each is refused with 415 naming content-encoding before it is read, nothing is created,
 * and the service answers; `identity` is a body as any other.
 */
let service: FuzzService;
const seed = fuzzSeed("edge");

beforeAll(async () => {
  service = await startFuzzService();
});
afterAll(async () => service.h.close());

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
/** 64 MiB of zeros inside 64 KiB: what inflating would cost. */
const BOMB = gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 9 });

const routes = () => [
  { path: `/v2/${service.endpoint.id}/run`, body: { input: { n: 1 } } },
  { path: `/v2/${service.endpoint.id}/runsync`, body: { input: { n: 1 } } },
  { path: `/v2/${service.endpoint.id}/job-done/w-edge/job-none`, body: { output: 1 } },
  { path: `/v2/${service.endpoint.id}/job-stream/w-edge/job-none`, body: { output: 1 } },
  { path: "/v1/templates", body: { name: "compressed", imageName: "x" } },
  { path: "/graphql", body: { query: "{ myself { id } }" } },
];

const coding = fc.oneof(
  fc.constantFrom("gzip", "deflate", "br", "x-gzip", "compress", "zstd", "GZIP", "gzip, identity", " gzip "),
  fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/).filter((s) => s !== "identity"),
);

function encoded(name: string, body: Buffer, bomb: boolean): Buffer {
  if (bomb) return BOMB;
  if (/gzip/i.test(name)) return gzipSync(body);
  if (name === "deflate") return deflateSync(body);
  return body;
}

async function post(path: string, headers: Record<string, string>, body: Buffer | Readable) {
  const reply = await request(`${service.h.url}${path}`, { method: "POST", headers, body });
  return { status: reply.statusCode, text: await reply.body.text() };
}

describe("fuzz: compressed request bodies", () => {
  it("are refused with 415 naming content-encoding, never inflated, nothing created", {
    timeout: 120_000,
  }, async () => {
    const health = async () =>
      JSON.parse(
        (
          await send(service, {
            method: "GET",
            path: `/v2/${service.endpoint.id}/health`,
            headers: { authorization: KEY },
          })
        ).text,
      ) as { jobs: { inQueue: number } };
    const queued = (await health()).jobs.inQueue;
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: routes().length - 1 }),
        coding,
        fc.boolean(),
        fc.boolean(),
        async (i, name, bomb, chunked) => {
          const route = routes()[i] as { path: string; body: unknown };
          const headers: Record<string, string> = {
            authorization: KEY,
            "content-type": "application/json",
            "content-encoding": name,
          };
          const body = encoded(name, json(route.body), bomb);
          // undici sends a Buffer with its content-length; a stream of it goes chunked.
          const reply = await post(route.path, headers, chunked ? Readable.from([body]) : body);
          expect(reply.status, `${route.path} ${name}: ${reply.text.slice(0, 200)}`).toBe(415);
          expect(reply.text).toContain(
            `content-encoding \\"${name.trim()}\\" is not accepted; send the body uncompressed`,
          );
          expect(reply.text).toContain("VALIDATION");
        },
      ),
      fuzzParameters(seed, 60),
    );
    // Nothing was queued, no template created, and the service answers.
    expect((await health()).jobs.inQueue).toBe(queued);
    const list = await send(service, {
      method: "GET",
      path: "/v1/templates",
      headers: { authorization: KEY },
    });
    expect(list.text).not.toContain('"compressed"');
  });

  it("identity, and a content-encoding header without a body, are served", async () => {
    const run = await post(
      `/v2/${service.endpoint.id}/run`,
      { authorization: KEY, "content-type": "application/json", "content-encoding": "identity" },
      json({ input: { n: 2 } }),
    );
    expect(run.status).toBe(200);
    expect(JSON.parse(run.text)).toMatchObject({ status: "IN_QUEUE" });
    const get = await request(`${service.h.url}/v1/templates`, {
      headers: { authorization: KEY, "content-encoding": "gzip" },
    });
    expect(get.statusCode).toBe(200);
    await get.body.dump();
  });
});

describe("fuzz: methods a path does not take", () => {
  it("answer 405 with Allow listing the methods it takes, on every wire; unknown paths stay 404", {
    timeout: 60_000,
  }, async () => {
    const doc = await send(service, { method: "GET", path: "/v1/openapi.json" });
    const paths = (JSON.parse(doc.text) as { paths: Record<string, Record<string, unknown>> }).paths;
    const declared = new Map<string, string[]>(
      Object.entries(paths).map(([path, methods]) => [
        `/v1${path}`,
        Object.keys(methods).map((m) => m.toUpperCase()),
      ]),
    );
    const ep = service.endpoint.id;
    declared.set("/graphql", ["POST"]);
    declared.set(`/v2/${ep}/run`, ["POST"]);
    declared.set(`/v2/${ep}/status/{id}`, ["GET", "POST"]);
    declared.set(`/v2/${ep}/health`, ["GET"]);
    declared.set(`/v2/${ep}/job-done/{w}/{id}`, ["POST"]);
    const entries = [...declared.entries()];
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: entries.length - 1 }),
        fc.constantFrom("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"),
        async (i, method) => {
          const [template, methods] = entries[i] as [string, string[]];
          const takes = methods.includes("GET") ? [...methods, "HEAD"] : methods;
          fc.pre(!takes.includes(method));
          const path = template.replace(/\{\w+\}/g, "some-id");
          const reply = await request(`${service.h.url}${path}`, {
            method: method as "GET",
            headers: { authorization: KEY },
          });
          const text = await reply.body.text();
          expect(reply.statusCode, `${method} ${path}: ${text}`).toBe(405);
          const allow = String(reply.headers.allow).split(", ");
          expect(new Set(allow)).toEqual(new Set(takes));
          if (method !== "HEAD") {
            expect(text).toContain(`${method} is not a method of ${path}; it takes ${allow.join(", ")}`);
            expect(text).toContain("METHOD_NOT_ALLOWED");
          }
        },
      ),
      fuzzParameters(seed, 150),
    );
    const unknown = await request(`${service.h.url}/v1/no-such-thing`, {
      method: "PUT",
      headers: { authorization: KEY },
    });
    expect(unknown.statusCode).toBe(404);
    expect(await unknown.body.text()).toContain("no route PUT /v1/no-such-thing");
  });
});

describe("fuzz: query parameters given more than once", () => {
  it("where one value is taken: 400 naming the parameter and saying it came twice", {
    timeout: 60_000,
  }, async () => {
    const ep = service.endpoint.id;
    // [method, path, parameter, two values each valid alone]
    const single: [string, string, string, string, string][] = [
      ["POST", `/v2/${ep}/runsync`, "wait", "1000", "2000"],
      ["GET", `/v2/${ep}/status/job-none`, "ttl", "10000", "20000"],
      ["GET", `/v2/${ep}/status-sync/job-none`, "wait", "1000", "2000"],
      ["GET", `/v2/${ep}/logs`, "limit", "1", "2"],
      ["GET", `/v2/${ep}/logs`, "since", "0", "1"],
      ["GET", `/v2/${ep}/jobs`, "limit", "1", "2"],
      ["GET", `/v2/${ep}/job-take-batch/w-q`, "batch_size", "1", "2"],
      ["GET", `/v2/${ep}/job-take/w-q`, "job_in_progress", "0", "1"],
      ["GET", "/v1/pods", "includeMachine", "true", "false"],
      ["GET", "/v1/pods", "computeType", "GPU", "CPU"],
      ["GET", "/v1/endpoints", "includeTemplate", "true", "true"],
      ["GET", "/v1/templates", "includeEndpointBoundTemplates", "true", "false"],
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...single),
        fc.integer({ min: 2, max: 4 }),
        async ([method, path, key, a, b], times) => {
          const values = Array.from({ length: times }, (_, i) => (i % 2 === 0 ? a : b));
          const query = values.map((v) => `${key}=${encodeURIComponent(v)}`).join("&");
          const req = {
            method,
            path: `${path}?${query}`,
            headers: { authorization: KEY, "content-type": "application/json" },
            ...(method === "POST" ? { body: JSON.stringify({ input: {} }) } : {}),
          };
          const reply = await send(service, req);
          expect(reply.status, `${method} ${path}?${query}: ${reply.text}`).toBe(400);
          const parsed = JSON.parse(reply.text) as { message: string; field: string };
          expect(parsed).toMatchObject({
            message: `${key}: given ${times} times (?${key}=...&${key}=...); give it once`,
            field: key,
          });
        },
      ),
      fuzzParameters(seed, 60),
    );
    // A parameter that may repeat still does.
    const many = await send(service, {
      method: "GET",
      path: "/v1/pods?gpuTypeId=NVIDIA%20A40&gpuTypeId=NVIDIA%20RTX%20A5000",
      headers: { authorization: KEY },
    });
    expect(many.status).toBe(200);
  });
});

describe("fuzz: path segments Fastify refuses before any route", () => {
  it("a segment past 100 characters (414) or a malformed escape (400) names path in the wire's shape, without echoing it", {
    timeout: 60_000,
  }, async () => {
    const ep = service.endpoint.id;
    const templates = [
      (s: string) => `/v2/${s}/health`,
      (s: string) => `/v2/${ep}/status/${s}`,
      (s: string) => `/v1/templates/${s}`,
      (s: string) => `/v1/pods/${s}/stop`,
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: templates.length - 1 }),
        fc.oneof(
          fc.integer({ min: 101, max: 6_000 }).map((n) => ({ segment: "k".repeat(n), status: 414 })),
          fc.constantFrom("%E0%A4%A", "%zz", "bad%").map((segment) => ({ segment, status: 400 })),
        ),
        async (i, { segment, status }) => {
          const path = (templates[i] as (s: string) => string)(segment);
          const method = path.endsWith("/stop") ? "POST" : "GET";
          const reply = await request(`${service.h.url}${path}`, {
            method,
            headers: { authorization: KEY },
          });
          const text = await reply.body.text();
          expect(reply.statusCode, `${method} ${path.slice(0, 80)}: ${text}`).toBe(status);
          const body = JSON.parse(text) as Record<string, unknown>;
          expect(body).toMatchObject({ code: "VALIDATION", field: "path" });
          // The job API's errors carry `error`, REST's `message`: each wire's own shape.
          expect(String(body.error ?? body.message)).toMatch(/^path: /);
          expect(text.length).toBeLessThan(300);
          expect(text).not.toContain(segment);
        },
      ),
      fuzzParameters(seed, 60),
    );
  });
});
