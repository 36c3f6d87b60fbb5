import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logsCommand } from "../../../service/logs-command";
import { type TestService, withService } from "../../helpers/service";

/*
 * With no --url, no RUNPOD_BASE_URL and no trusted address beside the store, `runpodkit logs` tries a
 * fixed address (http://127.0.0.1:8080/v2, here a test's own). Whatever listens there may be any
 * process of any user: the key goes there only once it answers as a runpodkit service.
 */

const KEY = "rpk_fallback_key_0123456789abcdef";
/** A store nothing runs on: its address file is missing, so the fallback is tried. */
const NO_STORE = join(tmpdir(), "runpodkit-fallback-no-such-store.sqlite");

let service: TestService;
let endpointId: string;
const saved = { key: process.env.RUNPOD_API_KEY, base: process.env.RUNPOD_BASE_URL };
beforeAll(async () => {
  process.env.RUNPOD_API_KEY = KEY;
  delete process.env.RUNPOD_BASE_URL;
  service = await withService({ apiKeys: [KEY] });
  const post = async (url: string, body: object) => {
    const reply = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(reply.status).toBeLessThan(300);
    return (await reply.json()) as { id: string; status?: string };
  };
  const template = await post(`${service.restUrl}/templates`, {
    name: "fallback",
    imageName: "runpodkit/echo",
    isServerless: true,
  });
  const endpoint = await post(`${service.restUrl}/endpoints`, {
    templateId: template.id,
    name: "fallback",
    workersMax: 1,
  });
  endpointId = endpoint.id;
  const job = await post(`${service.queueUrl}/v2/${endpointId}/runsync?wait=60000`, { input: { a: 1 } });
  expect(job.status).toBe("COMPLETED");
});
afterAll(async () => {
  if (saved.key === undefined) delete process.env.RUNPOD_API_KEY;
  else process.env.RUNPOD_API_KEY = saved.key;
  if (saved.base !== undefined) process.env.RUNPOD_BASE_URL = saved.base;
  await service?.close();
});

/** A server that is not runpodkit: it answers every request with `status` and `body`, and records what it got. */
async function foreign(status: number, body: string) {
  const seen: { method: string; url: string; headers: IncomingHttpHeaders }[] = [];
  const server: Server = createServer((request, reply) => {
    seen.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers });
    reply.writeHead(status, { "content-type": "application/json" }).end(body);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}/v2`,
    origin: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

async function logs(fallbackBaseUrl: string) {
  const out: string[] = [];
  const warned: string[] = [];
  const outcome = logsCommand(
    [endpointId, "--data", NO_STORE, "--json"],
    (line) => out.push(line),
    (line) => warned.push(line),
    { fallbackBaseUrl },
  );
  return { outcome, out, warned };
}

describe("runpodkit logs with nothing naming the service", () => {
  it("does not send the key to a server that does not answer as runpodkit, and says so", async () => {
    for (const [status, body] of [
      [200, JSON.stringify({ openapi: "3.1.0", info: { title: "some other API" } })],
      [404, "{}"],
      [200, "not json"],
    ] as const) {
      const other = await foreign(status, body);
      try {
        const run = await logs(other.base);
        await expect(run.outcome).rejects.toThrow(
          `logs: RUNPOD_API_KEY was not sent to ${other.origin}: GET /v1/openapi.json ${status === 404 ? "answered 404" : "did not answer a runpodkit service's API description"}, so it is not known to be a runpodkit service (give --url <job API base> to name the service, or --data <file> for the store it was started with)`,
        );
        // One question, without the key; never the logs request that carries it.
        expect(other.seen.map(({ method, url }) => `${method} ${url}`)).toEqual(["GET /v1/openapi.json"]);
        expect(other.seen[0]?.headers.authorization).toBeUndefined();
        expect(JSON.stringify(other.seen)).not.toContain(KEY);
        expect(run.warned.join("\n")).toContain(`trying ${other.base} if a runpodkit service answers there`);
      } finally {
        await other.close();
      }
    }
  });

  it("nothing listening: not sent, and why", async () => {
    const gone = await foreign(200, "{}");
    await gone.close();
    const run = await logs(gone.base);
    await expect(run.outcome).rejects.toThrow(
      new RegExp(`^logs: RUNPOD_API_KEY was not sent to ${gone.origin}: it cannot be reached \\(`),
    );
  });

  it("a runpodkit service there: confirmed without the key, said so, then its logs are read", async () => {
    const run = await logs(`${service.queueUrl}/v2`);
    expect(await run.outcome).toEqual({ exitCode: 0 });
    expect(run.warned).toEqual([
      expect.stringContaining(`trying ${service.queueUrl}/v2 if a runpodkit service answers there`),
      `runpodkit: logs: ${service.queueUrl} answers as a runpodkit service (its /v1/openapi.json); reading the logs there`,
    ]);
    expect(run.out.length).toBeGreaterThan(0);
    for (const line of run.out) expect(JSON.parse(line)).toMatchObject({ workerId: expect.any(String) });
  });
});
