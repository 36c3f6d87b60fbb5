import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { ProtocolError } from "../../sdk/errors";
import { JobClient } from "../../sdk/jobs";
import { RestClient } from "../../sdk/rest";
import { everyStringOf, json, startScriptedServer } from "./scripted-server";
import { closeAfterEach, failure } from "./support";

/**
 * A reply is read whole into memory, so its size is bounded (`maxReplyBytes`): a client pointed at
 * something that answers without end (a download, a misbehaving proxy) fails with a ProtocolError
 * instead of growing until its time budget (an endless reply grew a client by gigabytes in 30 s).
 */

const KEY = "rpa_BOUNDKEY0123456789abcdef";
const cleanup = closeAfterEach();

/** Writes 64 KiB pieces until the client goes away; counts the bytes written. */
function endless(res: ServerResponse, sent: { bytes: number }) {
  res.writeHead(200, { "content-type": "application/json" });
  const piece = Buffer.alloc(64 * 1024, 0x20);
  const pump = () => {
    while (!res.destroyed) {
      sent.bytes += piece.length;
      if (!res.write(piece)) {
        res.once("drain", pump);
        return;
      }
    }
  };
  res.on("close", () => res.removeAllListeners("drain"));
  pump();
}

describe("the bound of a reply's size", () => {
  it("ends an endless reply past maxReplyBytes with a ProtocolError, sent once, the key in no text", async () => {
    const sent = { bytes: 0 };
    const server = await startScriptedServer((_hit, res) => endless(res, sent));
    const rest = new RestClient({ apiKey: KEY, baseUrl: `${server.url}/v1`, maxReplyBytes: 1024 * 1024 });
    cleanup.push(
      () => server.close(),
      () => rest.close(),
    );
    const error = await failure(rest.templates.list(undefined, { timeoutMs: 20_000 }));
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error.toJSON()).toMatchObject({ code: "PROTOCOL", operation: "rest.templates.list" });
    expect(error.message).toContain("larger than maxReplyBytes (1048576 bytes)");
    // A GET is retried on connection errors, but not on this: the same call brings the same reply.
    expect(server.hits).toHaveLength(1);
    expect(everyStringOf(error)).not.toContain(KEY);
  });

  it("refuses a declared content-length past the bound before reading it", async () => {
    const server = await startScriptedServer((_hit, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(64 * 1024 * 1024) });
      res.write("{");
    });
    const jobs = new JobClient({
      apiKey: KEY,
      endpointId: "ep",
      baseUrl: `${server.url}/v2`,
      maxReplyBytes: 1000,
    });
    cleanup.push(
      () => server.close(),
      () => jobs.close(),
    );
    const error = await failure(jobs.health({ timeoutMs: 20_000 }));
    expect(error.toJSON()).toMatchObject({ code: "PROTOCOL", operation: "jobs.health" });
  });

  it("reads a reply of exactly maxReplyBytes", async () => {
    const body = {
      jobs: { completed: 0, failed: 0, inProgress: 0, inQueue: 0, retried: 0 },
      workers: { idle: 0, running: 0 },
    };
    const text = JSON.stringify(body);
    const server = await startScriptedServer((_hit, res) => json(res, 200, body));
    const jobs = new JobClient({
      apiKey: KEY,
      endpointId: "ep",
      baseUrl: `${server.url}/v2`,
      maxReplyBytes: Buffer.byteLength(text),
    });
    cleanup.push(
      () => server.close(),
      () => jobs.close(),
    );
    expect((await jobs.health()).jobs.completed).toBe(0);
  });

  it("refuses a maxReplyBytes it cannot use, naming the option", () => {
    for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 40]) {
      expect(
        () => new RestClient({ apiKey: KEY, baseUrl: "http://127.0.0.1:1/v1", maxReplyBytes: bad }),
      ).toThrow(expect.objectContaining({ code: "VALIDATION", field: "maxReplyBytes" }));
    }
  });
});
