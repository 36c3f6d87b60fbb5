import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { FastifyPluginAsync, FastifyReply } from "fastify";

/**
 * The console at /console: three static files (HTML, one JS module, CSS) shipped in the package and
 * served as they are, with no build step and nothing fetched from elsewhere. The page reads the
 * service through its public APIs with the key the user pastes; these routes hold no data and need
 * no key.
 */
const FILES: Readonly<Record<string, string>> = {
  "index.html": "text/html; charset=utf-8",
  "console.js": "text/javascript; charset=utf-8",
  "console.css": "text/css; charset=utf-8",
};

/**
 * Only this origin; no inline script and no inline style (console.js sets the few computed styles,
 * a timeline bar's width, through the CSSOM, which CSP allows); the API key never leaves through a
 * referrer.
 */
export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";
const HEADERS = {
  "content-security-policy": CONSOLE_CSP,
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "cache-control": "no-cache",
};

/** service/console/static from sources; from dist/service/console, the package's copy of it; null if absent. */
export function consoleDirectory(): string | null {
  const candidates = [
    join(__dirname, "static"),
    join(__dirname, "..", "..", "..", "service", "console", "static"),
  ];
  return candidates.find((dir) => existsSync(join(dir, "index.html"))) ?? null;
}

export function consolePlugin(directory = consoleDirectory()): FastifyPluginAsync {
  const files = new Map(
    directory === null
      ? []
      : Object.entries(FILES).map(([name, type]) => [
          name,
          { type, body: readFileSync(join(directory, name)) },
        ]),
  );
  const send = (reply: FastifyReply, name: string) => {
    const file = files.get(name);
    if (file) return reply.headers(HEADERS).type(file.type).send(file.body);
    const why =
      directory === null
        ? "this installation lacks the console's files (service/console/static)"
        : `no such console file: ${name}`;
    // The name comes from the request: never let a browser read the reply as anything but text.
    return reply
      .code(404)
      .header("x-content-type-options", "nosniff")
      .type("text/plain; charset=utf-8")
      .send(why);
  };
  return async (app) => {
    app.get("/console", async (_request, reply) => reply.redirect("/console/"));
    app.get("/console/", async (_request, reply) => send(reply, "index.html"));
    app.get("/console/:file", async (request, reply) =>
      send(reply, (request.params as { file: string }).file),
    );
  };
}
