import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";

/*
 * service/lean-start.ts, in a process of its own (what it changes is process-wide): Fastify loads
 * without `node:https` / `node:http2`, still serves plain HTTP, and its stand-ins load the real
 * modules on first use.
 */

const LOADER = `file://${resolve("node_modules/tsx/dist/loader.mjs")}`;
const LEAN_START = resolve("service/lean-start.ts");

const Outcome = z.object({
  loadedAfterFastify: z.array(z.string()),
  status: z.number(),
  body: z.string(),
  createServerIsFunction: z.boolean(),
  loadedAfterUse: z.array(z.string()),
});

const SCRIPT = `
import { createRequire } from "node:module";
await import(${JSON.stringify(LEAN_START)});
const require = createRequire(${JSON.stringify(resolve("package.json"))});
const tls = () => process.moduleLoadList.filter((m) => /^NativeModule (https|http2|tls)$/.test(m));
const fastify = require("fastify");
const loadedAfterFastify = tls();
const app = fastify();
app.get("/", async () => "plain");
const url = await app.listen({ host: "127.0.0.1", port: 0 });
const reply = await fetch(url);
const body = await reply.text();
await app.close();
// Fastify's server module asks for https only to serve TLS: the stand-in loads the real module then.
const serverModule = require.cache[require.resolve("fastify/lib/server.js")];
const https = serverModule.require("node:https");
const createServerIsFunction = typeof https.createServer === "function";
process.stdout.write(JSON.stringify({ loadedAfterFastify, status: reply.status, body, createServerIsFunction, loadedAfterUse: tls() }));
`;

describe("lean-start", () => {
  it("Fastify loads without https/http2/tls, serves HTTP, and the stand-ins load the real module on use", () => {
    const out = execFileSync(process.execPath, ["--import", LOADER, "--input-type=module", "-e", SCRIPT], {
      encoding: "utf8",
    });
    const outcome = Outcome.parse(JSON.parse(out));
    expect(outcome.loadedAfterFastify).toEqual([]);
    expect(outcome.status).toBe(200);
    expect(outcome.body).toBe("plain");
    expect(outcome.createServerIsFunction).toBe(true);
    expect(outcome.loadedAfterUse).toContain("NativeModule https");
  });
});
