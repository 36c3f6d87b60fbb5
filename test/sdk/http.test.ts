import type { Server } from "node:net";
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import {
  AbortedError,
  ConflictError,
  ConnectionError,
  NotFoundError,
  PayloadTooLargeError,
  ProtocolError,
  RateLimitedError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
  ValidationError,
} from "../../sdk/errors";
import { GraphQLClient } from "../../sdk/graphql";
import { HttpClient, type HttpClientOptions } from "../../sdk/http";
import { JobClient } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";
import { holdPort, relayTo } from "../helpers/tcp-relay";
import { everyStringOf, json, type Script, startScriptedServer } from "./scripted-server";
import { closeAfterEach, failure } from "./support";

const KEY = "rpa_TESTKEY0123456789abcdef";

const cleanup = closeAfterEach();

/** A client whose backoff runs at once and records each delay it was asked to wait. */
async function setup(script: Script, options: Partial<HttpClientOptions> = {}) {
  const server = await startScriptedServer(script);
  const delays: number[] = [];
  const client = new HttpClient({
    baseUrl: `${server.url}/v1`,
    headers: { authorization: `Bearer ${KEY}` },
    secrets: [KEY],
    ...options,
    retry: {
      random: () => 0,
      schedule: (run, ms) => {
        delays.push(ms);
        return setImmediate(run);
      },
      ...options.retry,
    },
  });
  cleanup.push(
    () => server.close(),
    () => client.close(),
  );
  return { server, client, delays };
}

const get = { operation: "test.get", method: "GET", path: "/things" } as const;
const post = { operation: "test.post", method: "POST", path: "/things", body: { a: 1 } } as const;

describe("HttpClient requests", () => {
  it("sends method, path, query, auth and a JSON body, and parses the JSON reply", async () => {
    const { server, client } = await setup((hit, res) => json(res, 200, { echo: hit.body }));
    const reply = await client.request({ ...post, query: { x: 1, skip: undefined, flag: false } });
    expect(reply).toEqual({ echo: '{"a":1}' });
    const hit = server.hits[0]!;
    expect(hit.method).toBe("POST");
    expect(hit.url).toBe("/v1/things?x=1&flag=false");
    expect(hit.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(hit.headers["content-type"]).toBe("application/json");
  });

  it("returns undefined for an empty 204 reply", async () => {
    const { client } = await setup((_hit, res) => {
      res.writeHead(204);
      res.end();
    });
    await expect(client.request({ ...get, method: "DELETE" })).resolves.toBeUndefined();
  });

  it("reads a reply sent in several chunks, a UTF-8 character split between two, and skips a BOM", async () => {
    const { client } = await setup((_hit, res) => {
      const bytes = Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from('{"name":"caf\u00e9 \u00e9t\u00e9"}'),
      ]);
      res.writeHead(200, { "content-type": "application/json", "content-length": String(bytes.length) });
      // "é" is two bytes: the first write ends between them
      const cut = bytes.indexOf(0xc3) + 1;
      res.write(bytes.subarray(0, cut));
      setImmediate(() => res.end(bytes.subarray(cut)));
    });
    await expect(client.request(get)).resolves.toEqual({ name: "caf\u00e9 \u00e9t\u00e9" });
  });

  it("reuses keep-alive connections for sequential calls", async () => {
    const { server, client } = await setup((_hit, res) => json(res, 200, {}));
    for (let i = 0; i < 10; i++) await client.request(get);
    expect(server.hits).toHaveLength(10);
    // undici may open a second socket while the first is released; never one per call
    expect(server.sockets).toBeLessThanOrEqual(2);
  });
});

describe("HttpClient typed errors", () => {
  const cases = [
    [404, {}, NotFoundError, "NOT_FOUND"],
    [400, {}, ValidationError, "VALIDATION"],
    [400, { code: "CONFLICT" }, ConflictError, "CONFLICT"],
    [400, { code: "IN_USE" }, ConflictError, "CONFLICT"],
    [401, {}, UnauthorizedError, "UNAUTHORIZED"],
    [413, {}, PayloadTooLargeError, "PAYLOAD_TOO_LARGE"],
    [500, {}, ServerError, "SERVER_ERROR"],
  ] as const;
  for (const [status, extra, ErrorClass, code] of cases) {
    it(`maps ${status} ${JSON.stringify(extra)} to ${code}`, async () => {
      const { client } = await setup((_hit, res) =>
        json(res, status, { message: "nope", field: "name", ...extra }),
      );
      const error = await failure(client.request({ ...post, retry: "never" }));
      expect(error).toBeInstanceOf(ErrorClass);
      expect(error.code).toBe(code);
      expect(error.status).toBe(status);
      expect(error.operation).toBe("test.post");
      expect(error.field).toBe("name");
      expect(error.message).toBe(`test.post: nope (HTTP ${status})`);
    });
  }

  it("keeps a non-JSON error body as the message", async () => {
    const { client } = await setup((_hit, res) => {
      res.writeHead(429, { "content-type": "text/plain", "retry-after": "3" });
      res.end("slow down");
    });
    const error = await failure(client.request(post));
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error.message).toBe("test.post: slow down (HTTP 429)");
    expect(error.retryAfterMs).toBe(3000);
  });

  it("reports a success reply that is not JSON as a protocol error", async () => {
    const { client } = await setup((_hit, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html>");
    });
    const error = await failure(client.request(get));
    expect(error).toBeInstanceOf(ProtocolError);
  });
});

describe("HttpClient retries", () => {
  it("retries a 429 after the Retry-After delay, then succeeds", async () => {
    const { server, client, delays } = await setup((_hit, res, i) =>
      i === 0 ? json(res, 429, { message: "rate" }, { "retry-after": "7" }) : json(res, 200, { ok: true }),
    );
    await expect(client.request(get)).resolves.toEqual({ ok: true });
    expect(server.hits).toHaveLength(2);
    expect(delays).toEqual([7000]);
  });

  it("accepts Retry-After as an HTTP date", async () => {
    const at = new Date(Date.now() + 60_000).toUTCString();
    const { client, delays } = await setup((_hit, res, i) =>
      i === 0 ? json(res, 429, {}, { "retry-after": at }) : json(res, 200, {}),
    );
    // a budget longer than the wait, else the retry is refused (it would pass the deadline)
    await client.request({ ...get, timeoutMs: 120_000 });
    expect(delays).toHaveLength(1);
    expect(delays[0]).toBeGreaterThan(50_000);
    expect(delays[0]).toBeLessThanOrEqual(60_000);
  });

  it("refuses a retry whose wait would pass the call's budget: the 429 comes back at once", async () => {
    const { server, client, delays } = await setup((_hit, res) =>
      json(res, 429, { message: "rate" }, { "retry-after": "20" }),
    );
    const error = await failure(client.request({ ...get, timeoutMs: 10_000 }));
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(server.hits).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it("backs off exponentially on 503 for an idempotent call", async () => {
    const { server, client, delays } = await setup((_hit, res, i) =>
      i < 3 ? json(res, 503, { message: "busy" }) : json(res, 200, { ok: 1 }),
    );
    await expect(client.request(get)).resolves.toEqual({ ok: 1 });
    expect(server.hits).toHaveLength(4);
    // random() = 0: half of 250, 500, 1000 ms
    expect(delays).toEqual([125, 250, 500]);
  });

  it("adds jitter within [step/2, step)", async () => {
    const { client, delays } = await setup(
      (_hit, res, i) => (i < 1 ? json(res, 503, {}) : json(res, 200, {})),
      { retry: { random: () => 0.999 } },
    );
    await client.request(get);
    expect(delays[0]).toBeGreaterThan(240);
    expect(delays[0]).toBeLessThan(250);
  });

  it("gives up after the configured retries with the last reply's error", async () => {
    const { server, client } = await setup((_hit, res) => json(res, 503, { message: "down" }), {
      retry: { retries: 2 },
    });
    const error = await failure(client.request(get));
    expect(error).toBeInstanceOf(ServerError);
    expect(error.status).toBe(503);
    expect(error.message).toContain("down");
    expect(server.hits).toHaveLength(3);
  });

  it("retries a connection reset for an idempotent call", async () => {
    const { server, client } = await setup((_hit, res, i) =>
      i === 0 ? res.socket?.destroy() : json(res, 200, { ok: 2 }),
    );
    await expect(client.request({ ...get, method: "PUT", body: { x: 1 } })).resolves.toEqual({ ok: 2 });
    expect(server.hits).toHaveLength(2);
    expect(server.hits[1]!.body).toBe('{"x":1}');
  });

  it("retries a POST marked idempotent", async () => {
    const { server, client } = await setup((_hit, res, i) =>
      i === 0 ? json(res, 502, {}) : json(res, 200, { ok: 3 }),
    );
    await expect(client.request({ ...post, retry: "idempotent" })).resolves.toEqual({ ok: 3 });
    expect(server.hits).toHaveLength(2);
  });

  it("does not retry 501 Not Implemented", async () => {
    const { server, client } = await setup((_hit, res) => json(res, 501, { message: "later" }));
    await failure(client.request(get));
    expect(server.hits).toHaveLength(1);
  });

  for (const [name, script] of [
    ["503", ((_h, res) => json(res, 503, {})) as Script],
    ["429", ((_h, res) => json(res, 429, {}, { "retry-after": "1" })) as Script],
    ["a connection reset", ((_h, res) => res.socket?.destroy()) as Script],
  ] as const) {
    it(`does not retry a non-idempotent POST on ${name}`, async () => {
      const { server, client, delays } = await setup(script);
      const error = await failure(client.request(post));
      expect(server.hits).toHaveLength(1);
      expect(delays).toEqual([]);
      expect(error.code).toBe(
        name === "503" ? "SERVER_ERROR" : name === "429" ? "RATE_LIMITED" : "CONNECTION",
      );
      if (name === "a connection reset") expect(error).toBeInstanceOf(ConnectionError);
    });
  }

  it("retries a rejected-only POST on 429 but not on 503", async () => {
    const { server, client, delays } = await setup((_hit, res, i) =>
      i === 0 ? json(res, 429, {}, { "retry-after": "2" }) : json(res, 503, { message: "x" }),
    );
    const error = await failure(client.request({ ...post, retry: "rejected-only" }));
    expect(error).toBeInstanceOf(ServerError);
    expect(server.hits).toHaveLength(2);
    expect(delays).toEqual([2000]);
  });

  it("retries a rejected-only POST whose connection was refused (never sent), and sends it once", async () => {
    const server = await startScriptedServer((_hit, res) => json(res, 200, { ok: true }));
    const held = holdPort();
    const delays: number[] = [];
    let relay: Server | null = null;
    // Nothing listens on the port until the backoff: then a plain TCP relay to the server opens there.
    const client = new HttpClient({
      baseUrl: `http://127.0.0.1:${held.port}/v1`,
      headers: { authorization: `Bearer ${KEY}` },
      secrets: [KEY],
      retry: {
        random: () => 0,
        schedule: (run, ms) => {
          delays.push(ms);
          void relayTo(held, server.url).then((opened) => {
            relay = opened;
            run();
          });
          return undefined;
        },
      },
    });
    cleanup.push(
      () => server.close(),
      () => client.close(),
      async () => {
        held.close();
        relay?.close();
      },
    );
    expect(await client.request({ ...post, retry: "rejected-only" })).toEqual({ ok: true });
    expect(delays).toHaveLength(1);
    expect(server.hits).toHaveLength(1);
  });

  it("hands back a 429 whose Retry-After exceeds the cap instead of waiting", async () => {
    const { server, client, delays } = await setup(
      (_hit, res) => json(res, 429, {}, { "retry-after": "120" }),
      { retry: { maxRetryAfterMs: 60_000 } },
    );
    const error = await failure(client.request(get));
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error.retryAfterMs).toBe(120_000);
    expect(server.hits).toHaveLength(1);
    expect(delays).toEqual([]);
  });
});

describe("HttpClient retries: first attempt plain, then the retry path", () => {
  it("retries connection resets on the first and on later attempts, with the policy's backoff", async () => {
    const { server, client, delays } = await setup((_hit, res, i) =>
      i < 2 ? res.socket?.destroy() : json(res, 200, { ok: 4 }),
    );
    await expect(client.request(get)).resolves.toEqual({ ok: 4 });
    expect(server.hits).toHaveLength(3);
    // random() = 0: half of 250, then half of 500
    expect(delays).toEqual([125, 250]);
  });

  it("retries an idempotent call whose reply breaks off mid-body", async () => {
    const { server, client } = await setup((_hit, res, i) => {
      if (i > 0) return json(res, 200, { ok: 5 });
      res.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      res.write('{"ok":');
      setImmediate(() => res.socket?.destroy());
    });
    await expect(client.request(get)).resolves.toEqual({ ok: 5 });
    expect(server.hits).toHaveLength(2);
  });

  it("honours Retry-After on a later attempt as on the first", async () => {
    const { server, client, delays } = await setup((_hit, res, i) =>
      i === 0
        ? json(res, 503, {})
        : i === 1
          ? json(res, 429, {}, { "retry-after": "5" })
          : json(res, 200, { ok: 6 }),
    );
    await expect(client.request(get)).resolves.toEqual({ ok: 6 });
    expect(server.hits).toHaveLength(3);
    expect(delays).toEqual([125, 5000]);
  });

  it("counts the first attempt against the retries: 1 retry means 2 attempts", async () => {
    const { server, client, delays } = await setup((_hit, res) => json(res, 503, { message: "down" }), {
      retry: { retries: 1 },
    });
    const error = await failure(client.request(get));
    expect(error).toBeInstanceOf(ServerError);
    expect(server.hits).toHaveLength(2);
    expect(delays).toEqual([125]);
  });

  it("sends once with 0 retries", async () => {
    const { server, client, delays } = await setup((_hit, res) => json(res, 503, {}), {
      retry: { retries: 0 },
    });
    await failure(client.request(get));
    expect(server.hits).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it("keeps the call's budget on the retry path: a later wait past it hands the 429 back", async () => {
    const { server, client, delays } = await setup((_hit, res, i) =>
      i === 0 ? json(res, 503, {}) : json(res, 429, { message: "rate" }, { "retry-after": "20" }),
    );
    const error = await failure(client.request({ ...get, timeoutMs: 10_000 }));
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error.retryAfterMs).toBe(20_000);
    expect(server.hits).toHaveLength(2);
    expect(delays).toEqual([125]);
  });

  it("retries any 5xx but 501 for an idempotent call (507 here)", async () => {
    const { server, client } = await setup((_hit, res, i) =>
      i === 0 ? json(res, 507, {}) : json(res, 200, { ok: 7 }),
    );
    await expect(client.request(get)).resolves.toEqual({ ok: 7 });
    expect(server.hits).toHaveLength(2);
  });

  it("does not retry a connection reset of a rejected-only POST (only its 429)", async () => {
    const { server, client, delays } = await setup((_hit, res) => res.socket?.destroy());
    const error = await failure(client.request({ ...post, retry: "rejected-only" }));
    expect(error).toBeInstanceOf(ConnectionError);
    expect(server.hits).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it("sends the same body on every attempt", async () => {
    const { server, client } = await setup((_hit, res, i) =>
      i < 2 ? json(res, 429, {}, { "retry-after": "1" }) : json(res, 200, {}),
    );
    await client.request({ ...post, retry: "rejected-only" });
    expect(server.hits.map((hit) => hit.body)).toEqual(['{"a":1}', '{"a":1}', '{"a":1}']);
  });

  it("aborts during a later backoff at once", async () => {
    const controller = new AbortController();
    const server = await startScriptedServer((_hit, res) => json(res, 503, {}));
    let waits = 0;
    const client = new HttpClient({
      baseUrl: server.url,
      retry: {
        // the first backoff ends at once; the second never does: only the abort can end the call
        schedule: (run) => {
          if (++waits === 1) return setImmediate(run);
          controller.abort();
          return undefined;
        },
      },
    });
    cleanup.push(
      () => server.close(),
      () => client.close(),
    );
    const error = await failure(client.request({ ...get, signal: controller.signal, timeoutMs: 60_000 }));
    expect(error).toBeInstanceOf(AbortedError);
    expect(server.hits).toHaveLength(2);
    expect(waits).toBe(2);
  });
});

describe("HttpClient timeout and abort", () => {
  it("throws TimeoutError when no reply comes within the call's budget", async () => {
    const { client } = await setup(() => {
      /* never answers */
    });
    const error = await failure(client.request({ ...get, timeoutMs: 50 }));
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.code).toBe("TIMEOUT");
  });

  it("times out within a few tens of ms of the budget, not on undici's coarse timer tick", async () => {
    const { client } = await setup(() => {
      /* never answers */
    });
    for (const timeoutMs of [100, 300]) {
      const started = performance.now();
      const error = await failure(client.request({ ...get, timeoutMs }));
      const elapsed = performance.now() - started;
      expect(error).toBeInstanceOf(TimeoutError);
      expect(error.message).toBe(`test.get: no reply within ${timeoutMs} ms`);
      // Before, undici's fast timers (a 499 ms tick) ended a 100 ms budget after about 1 s.
      expect(elapsed).toBeGreaterThanOrEqual(timeoutMs - 2);
      expect(elapsed).toBeLessThan(timeoutMs + 150);
    }
  });

  it("bounds each attempt of the retry path by the budget as precisely", async () => {
    // The first attempt is refused with 503, the retry is never answered.
    const { server, client } = await setup((_hit, res, i) => {
      if (i === 0) json(res, 503, {});
    });
    const started = performance.now();
    const error = await failure(client.request({ ...get, timeoutMs: 200 }));
    const elapsed = performance.now() - started;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(server.hits).toHaveLength(2);
    expect(elapsed).toBeGreaterThanOrEqual(198);
    expect(elapsed).toBeLessThan(200 + 150);
  });

  it("times out a call still queued for a connection on time, and never sends it", async () => {
    const { server, client } = await setup(
      () => {
        /* never answers */
      },
      { connections: 1 },
    );
    // The only connection is held by a call with a long budget: the next one waits in the pool.
    const holding = client.request({ ...get, path: "/holding", timeoutMs: 60_000 }).catch((e: unknown) => e);
    const started = performance.now();
    const error = await failure(client.request({ ...get, path: "/queued", timeoutMs: 100 }));
    const elapsed = performance.now() - started;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(elapsed).toBeLessThan(100 + 150);
    await server.close();
    expect(await holding).toBeInstanceOf(Error);
    expect(server.hits.map((hit) => hit.url)).toEqual(["/v1/holding"]);
  });

  it("throws AbortedError, not TimeoutError, when the caller's signal fires", async () => {
    const controller = new AbortController();
    const { client } = await setup(() => controller.abort());
    const error = await failure(client.request({ ...get, signal: controller.signal, timeoutMs: 60_000 }));
    expect(error).toBeInstanceOf(AbortedError);
    expect(error.code).toBe("ABORTED");
  });

  it("aborts during a retry backoff at once", async () => {
    const controller = new AbortController();
    const server = await startScriptedServer((_hit, res) => json(res, 503, {}));
    const client = new HttpClient({
      baseUrl: server.url,
      retry: {
        // the backoff never ends by itself: only the abort can finish the call
        schedule: () => {
          controller.abort();
          return undefined;
        },
      },
    });
    cleanup.push(
      () => server.close(),
      () => client.close(),
    );
    const error = await failure(client.request({ ...get, signal: controller.signal, timeoutMs: 60_000 }));
    expect(error).toBeInstanceOf(AbortedError);
    expect(server.hits).toHaveLength(1);
  });

  it("throws AbortedError when the caller's signal fires while the reply's body arrives", async () => {
    const controller = new AbortController();
    const { server, client } = await setup((_hit, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "100" });
      res.write('{"partial":');
      setImmediate(() => controller.abort());
    });
    const error = await failure(client.request({ ...get, signal: controller.signal, timeoutMs: 60_000 }));
    expect(error).toBeInstanceOf(AbortedError);
    // an abort is not a failure to retry
    expect(server.hits).toHaveLength(1);
  });

  it("leaves no abort listener on the caller's signal after a call", async () => {
    const controller = new AbortController();
    const { client } = await setup((_hit, res, i) => (i === 0 ? json(res, 503, {}) : json(res, 200, {})));
    let added = 0;
    let removed = 0;
    const signal = controller.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<typeof add>) => {
      added++;
      add(...args);
    }) as typeof add;
    signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
      removed++;
      remove(...args);
    }) as typeof remove;
    await client.request({ ...get, signal });
    await client.request({ ...get, signal });
    expect(added).toBeGreaterThan(0);
    expect(removed).toBe(added);
  });

  it("sends nothing when the signal is already aborted", async () => {
    const { server, client } = await setup((_hit, res) => json(res, 200, {}));
    const error = await failure(client.request({ ...get, signal: AbortSignal.abort() }));
    expect(error).toBeInstanceOf(AbortedError);
    expect(server.hits).toHaveLength(0);
  });
});

describe("HttpClient never leaks the key", () => {
  it("redacts the key from a reply that echoes it and from the URL", async () => {
    const { client } = await setup((hit, res) =>
      json(res, 400, { message: `bad key ${KEY} at ${hit.url} (Bearer ${KEY})` }),
    );
    const error = await failure(client.request({ ...get, query: { api_key: KEY } }));
    expect(error.message).toContain("***");
    expect(everyStringOf(error)).not.toContain(KEY);
  });

  it("redacts the key from the field and code a reply names (REST, the job API and GraphQL alike)", async () => {
    // A proxy or a broken service echoing the request into `field`/`code`: those are kept on the error.
    const server = await startScriptedServer((hit, res) => {
      const echoed = `${hit.headers.authorization ?? ""} ${hit.url}`;
      if (hit.url.startsWith("/graphql")) {
        json(res, 200, { errors: [{ message: "no", extensions: { code: echoed, field: echoed } }] });
      } else json(res, 400, { message: "no", field: echoed, code: echoed });
    });
    const rest = new RestClient({ apiKey: KEY, baseUrl: `${server.url}/v1`, retries: 0 });
    const jobs = new JobClient({ apiKey: KEY, endpointId: "ep1", baseUrl: `${server.url}/v2`, retries: 0 });
    const graphql = new GraphQLClient({ apiKey: KEY, baseUrl: `${server.url}/graphql`, retries: 0 });
    cleanup.push(
      () => server.close(),
      () => rest.close(),
      () => jobs.close(),
      () => graphql.close(),
    );
    for (const call of [() => rest.templates.list(), () => jobs.status("j1"), () => graphql.listSecrets()]) {
      const error = await failure(call());
      expect(error.field).toMatch(/\*\*\*/);
      expect(error.serviceCode).toMatch(/\*\*\*/);
      expect(everyStringOf(error)).not.toContain(KEY);
      expect(inspect(error, { depth: 10, showHidden: true })).not.toContain(KEY);
    }
    expect(server.hits).toHaveLength(3);
  });

  it("redacts the key from connection errors and their causes", async () => {
    const server = await startScriptedServer(() => undefined);
    const url = server.url;
    await server.close();
    const client = new HttpClient({
      baseUrl: `${url}/graphql?api_key=${KEY}`,
      secrets: [KEY],
      retry: { retries: 0 },
    });
    cleanup.push(() => client.close());
    const error = await failure(client.request(get));
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error.cause).toBeInstanceOf(Error);
    expect(everyStringOf(error)).not.toContain(KEY);
  });
});
