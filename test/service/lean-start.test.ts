import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { installNode } from "../../engine/package";
import { LOWEST_NODE } from "../e2e/support/node-versions";

/*
 * service/lean-start.ts, in a process of its own (what it changes is process-wide): Fastify loads
 * without `node:https` / `node:http2`, still serves plain HTTP, and its stand-ins load the real
 * modules on first use; the same for zod's locales and the `semver` Fastify's plugin checks use.
 */

const LOADER = `file://${resolve("node_modules/tsx/dist/loader.mjs")}`;
const LEAN_START = resolve("service/lean-start.ts");

const Outcome = z.object({
  loadedAfterFastify: z.array(z.string()),
  status: z.number(),
  body: z.string(),
  createServerIsFunction: z.boolean(),
  loadedAfterUse: z.array(z.string()),
  zodLocalesAtLoad: z.array(z.string()),
  zodMessage: z.string(),
  zodFrench: z.string(),
  zodLocalesAfterUse: z.number(),
  semverAtLoad: z.number(),
  pluginVersionError: z.string(),
  semverAfterUse: z.number(),
});

const run = (node: string) =>
  Outcome.parse(
    JSON.parse(
      execFileSync(node, ["--import", LOADER, "--input-type=module", "-e", SCRIPT], { encoding: "utf8" }),
    ),
  );

const SCRIPT = `
import { createRequire } from "node:module";
await import(${JSON.stringify(LEAN_START)});
const require = createRequire(${JSON.stringify(resolve("package.json"))});
const tls = () => process.moduleLoadList.filter((m) => /^NativeModule (https|http2|tls)$/.test(m));
const semverModules = () => Object.keys(require.cache).filter((f) => /[\\/]node_modules[\\/]semver[\\/]/.test(f)).length;
const fastify = require("fastify");
const loadedAfterFastify = tls();
const semverAtLoad = semverModules();
const app = fastify();
app.get("/", async () => "plain");
// A plugin that declares the Fastify versions it supports: Fastify's check loads semver then.
const plugin = (wanted) => Object.assign(async () => {}, { [Symbol.for("plugin-meta")]: { name: "p" + wanted, fastify: wanted } });
app.register(plugin("5.x"));
let pluginVersionError = "";
try {
  await fastify().register(plugin("4.x")).ready();
} catch (error) {
  pluginVersionError = error.code;
}
const semverAfterUse = semverModules();
const url = await app.listen({ host: "127.0.0.1", port: 0 });
const reply = await fetch(url);
const body = await reply.text();
await app.close();
// Fastify's server module asks for https only to serve TLS: the stand-in loads the real module then.
const serverModule = require.cache[require.resolve("fastify/lib/server.js")];
const https = serverModule.require("node:https");
const createServerIsFunction = typeof https.createServer === "function";
// zod: only its English locale loads with it; the others on first use, through z.locales.
const zodLocales = () => Object.keys(require.cache).filter((f) => /zod[\\/]v4[\\/]locales[\\/]/.test(f));
const zod = require("zod");
const zodLocalesAtLoad = zodLocales().map((f) => f.replace(/^.*[\\/]/, ""));
const zodMessage = zod.z.string().safeParse(1).error.issues[0].message;
const zodFrench = zod.z.string().safeParse(1, { error: zod.z.locales.fr().localeError }).error.issues[0].message;
process.stdout.write(JSON.stringify({ loadedAfterFastify, status: reply.status, body, createServerIsFunction, loadedAfterUse: tls(), zodLocalesAtLoad, zodMessage, zodFrench, zodLocalesAfterUse: zodLocales().length, semverAtLoad, pluginVersionError, semverAfterUse }));
`;

/** zod loaded with English only; z.locales still gives every locale, loaded then. */
function expectZodLocalesOnUse(outcome: z.infer<typeof Outcome>): void {
  expect(outcome.zodLocalesAtLoad).toEqual(["en.cjs"]);
  expect(outcome.zodMessage).toBe("Invalid input: expected string, received number");
  expect(outcome.zodFrench).toMatch(/^Entrée invalide/);
  expect(outcome.zodLocalesAfterUse).toBeGreaterThan(50);
}

/** Fastify loaded without semver; a plugin's declared Fastify versions still checked, with semver loaded then. */
function expectSemverOnUse(outcome: z.infer<typeof Outcome>): void {
  expect(outcome.semverAtLoad).toBe(0);
  expect(outcome.pluginVersionError).toBe("FST_ERR_PLUGIN_VERSION_MISMATCH");
  expect(outcome.semverAfterUse).toBeGreaterThan(40);
}

describe("lean-start", () => {
  it("Fastify loads without https/http2/tls, serves HTTP, and the stand-ins load the real module on use", () => {
    const outcome = run(process.execPath);
    expectZodLocalesOnUse(outcome);
    expectSemverOnUse(outcome);
    expect(outcome.loadedAfterFastify).toEqual([]);
    expect(outcome.status).toBe(200);
    expect(outcome.body).toBe("plain");
    expect(outcome.createServerIsFunction).toBe(true);
    expect(outcome.loadedAfterUse).toContain("NativeModule https");
  });

  // Node 22's loader throws when a built-in is handed a stand-in: lean-start must notice and let
  // Fastify load the real modules rather than stop the CLI (it did, on 22.19).
  it(`on the lowest supported Node (${LOWEST_NODE}) Fastify still loads and serves HTTP`, async () => {
    const outcome = run(await installNode(LOWEST_NODE));
    expectZodLocalesOnUse(outcome);
    expectSemverOnUse(outcome);
    expect(outcome.status).toBe(200);
    expect(outcome.body).toBe("plain");
    expect(outcome.createServerIsFunction).toBe(true);
  }, 300_000);
});
