/**
 * A worker whose process cannot be started because the service is out of file descriptors (EMFILE;
 * the same path as EAGAIN from a process limit) is reported and replaced, and its endpoint's job runs
 * once descriptors are free again. The CLI runs under `prlimit --nofile`; idle connections use up its
 * descriptors while a worker starts.
 */
import { execFileSync, spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { Pool } from "undici";
import { describe, expect, it } from "vitest";
import { within } from "./cli";

const KEY = "rpk_spawnlimit_alpha_0123456789";
const LIMIT = 60;

function hasPrlimit(): boolean {
  try {
    execFileSync("prlimit", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describe("a worker that cannot be started for want of file descriptors", () => {
  it.skipIf(!hasPrlimit())(
    "is named in the logs and replaced; the queued job runs once descriptors are free",
    async () => {
      const child = spawn(
        "prlimit",
        [
          `--nofile=${LIMIT}`,
          process.execPath,
          "--import",
          "tsx",
          "service/main.ts",
          "--port",
          "0",
          "--data",
          ":memory:",
        ],
        { env: { PATH: process.env.PATH ?? "", RUNPODKIT_API_KEYS: KEY }, stdio: ["ignore", "pipe", "pipe"] },
      );
      let out = "";
      let err = "";
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
      });
      child.stderr.on("data", (chunk: Buffer) => {
        err += chunk.toString();
      });
      const sockets: Socket[] = [];
      let pool: Pool | undefined;
      try {
        expect(await within(30_000, () => /queue=(\S+)\n/.test(out))).toBe(true);
        const base = /queue=(\S+)\n/.exec(out)?.[1] ?? "";
        // One connection kept open: the calls below need no new descriptor in the service.
        pool = new Pool(base, { connections: 1 });
        const call = async (method: string, path: string, body?: unknown, again = true) => {
          const reply = await (pool as Pool)
            .request({
              method: method as "GET",
              path,
              headers: { authorization: KEY, "content-type": "application/json" },
              body: body === undefined ? undefined : JSON.stringify(body),
            })
            .catch((error: unknown) => {
              // The kept connection may be closed by the server as idle: sent once more on a new one.
              if (again) return null;
              throw error;
            });
          if (reply === null) return call(method, path, body, false);
          const text = await reply.body.text();
          return {
            status: reply.statusCode,
            text,
            body: (text.startsWith("{") && !text.includes("\n{") ? JSON.parse(text) : {}) as Record<
              string,
              unknown
            >,
          };
        };
        const template = await call("POST", "/v1/templates", {
          name: "fds",
          imageName: "runpodkit/echo",
          isServerless: true,
        });
        const endpoint = await call("POST", "/v1/endpoints", {
          templateId: template.body.id,
          workersMin: 0,
          workersMax: 1,
        });
        const endpointId = String(endpoint.body.id);

        // Idle connections until the service has no descriptor left.
        const fds = () => readdirSync(`/proc/${child.pid}/fd`).length;
        for (let i = 0; i < LIMIT; i++) {
          const socket = connect(Number(new URL(base).port), "127.0.0.1");
          socket.on("error", () => {});
          sockets.push(socket);
        }
        expect(await within(5_000, () => fds() >= LIMIT - 1)).toBe(true);
        const run = await call("POST", `/v2/${endpointId}/run`, { input: { hello: "fds" } });
        expect(run.status).toBe(200);
        expect(await within(15_000, () => /could not start: spawn \S+ EMFILE/.test(err))).toBe(true);

        for (const socket of sockets.splice(0)) socket.destroy();
        const done = await within(30_000, async () => {
          const status = await call("GET", `/v2/${endpointId}/status/${run.body.id}`);
          return status.body.status === "COMPLETED";
        });
        expect(done).toBe(true);
        const logs = await call("GET", `/v2/${endpointId}/logs`);
        expect(logs.text).toMatch(/worker could not start: spawn \S+ EMFILE/);
      } finally {
        for (const socket of sockets) socket.destroy();
        await pool?.close();
        child.kill("SIGKILL");
      }
    },
    90_000,
  );
});
