import type { IncomingHttpHeaders } from "node:http";
import { errorCodes, type FastifyInstance, type FastifyRequest } from "fastify";
import JSON5 from "json5";
import { ServiceError } from "../errors";

/*
 * How request bodies are read, and how large and how deep they may be. Each route sets its own size
 * limit below the server's (management bodies: config.managementBodyLimit; /run and /runsync: the job
 * API's limits; worker results: the job plane's workerBodyLimit); Fastify refuses a larger body with
 * 413 before anything parses it. Every JSON body's nesting is bounded here, on its text, before it is
 * parsed: a value nested deeper than JSON_LIMITS.depth is refused with 400 naming the member (a deeper
 * value could not be written to the store or serialized into a reply). What a body must contain is
 * then checked by its zod schema (parse.ts).
 */

/** The largest any route needs (/runsync: 20 MB, plus JSON framing). */
export const SERVER_BODY_LIMIT = 21 * 1024 * 1024;

/** Bounds of every JSON value the service accepts, besides each route's size limit. */
export const JSON_LIMITS = {
  /** Levels of objects and arrays in one member of a body (`{"input": {"a": []}}`: input has 2). */
  depth: 64,
} as const;

/**
 * The index of the quote that ends the string opening at `start` (the next quote of its kind not
 * escaped, i.e. after an even run of backslashes), or -1 when the text ends first.
 */
function stringEnd(text: string, start: number): number {
  const quote = text[start] as string;
  let end = text.indexOf(quote, start + 1);
  for (; end >= 0; end = text.indexOf(quote, end + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) break;
  }
  return end;
}

/**
 * The index of the last character of the JSON5 comment opening at `start` (`//` to its line's end,
 * `/* ... *\/`), `start` when no comment opens there, or -1 when a block comment is not closed.
 */
function commentEnd(text: string, start: number): number {
  const next = text.charCodeAt(start + 1);
  if (next === 0x2a) {
    const close = text.indexOf("*/", start + 2);
    return close < 0 ? -1 : close + 1;
  }
  if (next !== 0x2f) return start;
  let end = start + 2;
  // JSON5's line terminators: LF, CR, U+2028, U+2029 (compared by code: a regex a character made a
  // long comment cost ~20 ns a character).
  for (; end < text.length; end++) {
    const c = text.charCodeAt(end);
    if (c === 0x0a || c === 0x0d || c === 0x2028 || c === 0x2029) break;
  }
  return end;
}

/**
 * The member of a JSON (or JSON5) text nested deeper than `limit` levels, or null when none is: a
 * top-level member by its key, the whole body as "body". A scan of the text, before any parser (whose
 * stack a deep text could exhaust) runs; strings are skipped, quotes of either kind, and so are JSON5
 * comments (a quote in a comment would otherwise open a "string" that hides the brackets after it).
 */
export function memberTooDeep(text: string, limit: number = JSON_LIMITS.depth): string | null {
  let depth = 0;
  let topIsObject = false;
  let key: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 || c === 0x27) {
      const start = i;
      i = stringEnd(text, i);
      if (i < 0) return null;
      if (depth === 1 && topIsObject) key = text.slice(start + 1, i);
    } else if (c === 0x2f) {
      i = commentEnd(text, i);
      if (i < 0) return null;
    } else if (c === 0x7b || c === 0x5b) {
      if (depth === 0) topIsObject = c === 0x7b;
      depth++;
      // The body itself is level 0 of its members: a member may open `limit` levels below it.
      if (depth > limit + 1) return topIsObject && key !== null ? key : "body";
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return null;
}

/**
 * The value of the top-level member `key` of a JSON (or JSON5) object text when it is a string
 * without escapes, or null: read by memberTooDeep's scan, no parser (the text may be one a parser must
 * not see: too deep, or not JSON). Tells what kind of body a refused one was.
 */
export function topLevelString(text: string, key: string): string | null {
  let depth = 0;
  let member: string | null = null;
  let inValue = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 || c === 0x27) {
      const start = i;
      i = stringEnd(text, i);
      if (i < 0) return null;
      if (depth !== 1) continue;
      const value = text.slice(start + 1, i);
      if (!inValue) member = value;
      else if (member === key) return value.includes("\\") ? null : value;
    } else if (c === 0x2f) {
      i = commentEnd(text, i);
      if (i < 0) return null;
    } else if (c === 0x7b || c === 0x5b) {
      if (depth === 0 && c === 0x5b) return null;
      depth++;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    } else if (depth === 1 && c === 0x3a) {
      inValue = true;
    } else if (depth === 1 && c === 0x2c) {
      inValue = false;
      member = null;
    }
  }
  return null;
}

/** The text of each worker body workerJson refused, by the error it threw (see refusedText). */
const REFUSED_TEXTS = new WeakMap<object, string>();

/** The body text a refusal of workerJson was about (a route's error hook sees only the error). */
export function refusedText(error: unknown): string | undefined {
  return typeof error === "object" && error !== null ? REFUSED_TEXTS.get(error) : undefined;
}

/** Refuses a body text nested too deep (VALIDATION naming the member and the limit). */
export function checkJsonDepth(text: string): void {
  const found = memberTooDeep(text);
  if (found !== null) {
    // The key cut (a key may be as long as the body): a refused job-done's message becomes its job's error.
    const member = shownKey(found);
    throw new ServiceError("VALIDATION", `${member} nested deeper than ${JSON_LIMITS.depth} levels`, {
      field: member,
    });
  }
}

/** Characters of a key a refusal shows (a key may be as long as the body); a longer one is cut with "…". */
const KEY_SHOWN_CHARS = 100;
export const shownKey = (key: string): string =>
  key.length > KEY_SHOWN_CHARS ? `${key.slice(0, KEY_SHOWN_CHARS)}…` : key;

/**
 * A key given twice in one object of a JSON text: the path of the object ("" for the body; its keys
 * cut to KEY_SHOWN_CHARS, as it only names the place) and the key.
 */
export interface RepeatedKey {
  path: string;
  key: string;
}

interface Frame {
  object: boolean;
  path: string;
  keys: Set<string> | null;
  /** The last key read (objects) or the index of the current item (arrays). */
  at: string | number;
}

/**
 * The first key a JSON text gives twice in one object, or null when none does (or the text is not
 * JSON: the parser then says why). JSON.parse keeps the last of two values without a word, so
 * `"env": {"A": "1", "A": "2"}` would store A=2 and lose the other; a scan of the text, before any
 * parser, in one pass (keys with escapes are decoded, so "A" and "\u0041" are one key).
 */
export function repeatedKey(text: string): RepeatedKey | null {
  const stack: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const top = stack[stack.length - 1];
    if (c === 0x22) {
      const start = i;
      i = stringEnd(text, i);
      if (i < 0) return null;
      if (!top?.object || top.keys === null) continue;
      let next = i + 1;
      while (next < text.length && /\s/.test(text[next] as string)) next++;
      if (text.charCodeAt(next) !== 0x3a) continue;
      const raw = text.slice(start, i + 1);
      let key: string;
      try {
        key = raw.includes("\\") ? (JSON.parse(raw) as string) : raw.slice(1, -1);
      } catch {
        return null;
      }
      if (top.keys.has(key)) return { path: top.path, key };
      top.keys.add(key);
      top.at = shownKey(key);
    } else if (c === 0x7b || c === 0x5b) {
      const path = top === undefined ? "" : top.path === "" ? String(top.at) : `${top.path}.${top.at}`;
      const object = c === 0x7b;
      stack.push({ object, path, keys: object ? new Set() : null, at: object ? "" : 0 });
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
    } else if (c === 0x2c && top !== undefined && !top.object) {
      top.at = (top.at as number) + 1;
    }
  }
  return null;
}

/** Refuses a body text that gives a key twice in one object (VALIDATION naming the key's place). */
export function checkUniqueKeys(text: string): void {
  const repeated = repeatedKey(text);
  if (repeated === null) return;
  const key = shownKey(repeated.key);
  const field = repeated.path === "" ? key : `${repeated.path}.${key}`;
  const where = repeated.path === "" ? "the body" : repeated.path;
  throw new ServiceError(
    "VALIDATION",
    `${field}: the key ${JSON.stringify(key)} is given twice in ${where}; give each key once (JSON would keep only the last value)`,
    { field },
  );
}

/**
 * The refusal of a body sent compressed (`content-encoding: gzip`, `deflate`, `br`, ...): 415, as HTTP
 * says of a content coding the server does not take. Every parser here reads the body as it arrives,
 * so a compressed one read as text would be refused as "not valid JSON" (or, in a worker's body,
 * read as garbage); and inflating it would let a few bytes of a gzip bomb become gigabytes. Null for
 * no body, no content-encoding, or `identity`.
 */
export function compressedBodyRefusal(headers: IncomingHttpHeaders): Error | null {
  const encoding = headers["content-encoding"];
  if (encoding === undefined || /^\s*(identity\s*)?$/i.test(encoding)) return null;
  if (!declaresBody(headers)) return null;
  const shown = encoding.length > 40 ? `${encoding.slice(0, 40)}…` : encoding;
  return Object.assign(new Error(`content-encoding "${shown}" is not accepted; send the body uncompressed`), {
    statusCode: 415,
  });
}

/** Whether a request's headers announce a body (a chunked one, or a content-length other than 0). */
function declaresBody(headers: IncomingHttpHeaders): boolean {
  return (
    headers["transfer-encoding"] !== undefined ||
    (headers["content-length"] !== undefined && headers["content-length"] !== "0")
  );
}

/** Refuses every compressed body of the server (compressedBodyRefusal) before it is read. */
export function refuseCompressedBodies(app: FastifyInstance): void {
  app.addHook("onRequest", (request, _reply, done) => {
    const refusal = compressedBodyRefusal(request.headers);
    if (refusal) done(refusal);
    else done();
  });
}

/** The charsets a JSON body may declare: UTF-8 (and its common spelling `utf8`), and US-ASCII, a subset of it. */
const JSON_CHARSETS = new Set(["utf-8", "utf8", "us-ascii"]);

/**
 * The refusal of a JSON body declared in another charset (`application/json; charset=utf-16`): 415
 * naming it. JSON on the wire is UTF-8 (RFC 8259, section 8.1), and every parser here reads it so: a
 * UTF-16 or Latin-1 body would reach the handler as garbage. Null for no content-type, no charset
 * parameter, or one of JSON_CHARSETS (any case, quoted or not). The one rule of every JSON route:
 * every Fastify scope whose JSON parser is boundedJson applies it before the body is read
 * (refuseForeignCharsets), and the fast path leaves a request it refuses to Fastify
 * (jobs/http/fast-routes.ts isJson).
 */
export function charsetRefusal(contentType: string | undefined): Error | null {
  const at = contentType?.indexOf(";") ?? -1;
  if (contentType === undefined || at < 0) return null;
  for (const parameter of contentType.slice(at + 1).split(";")) {
    const eq = parameter.indexOf("=");
    if (eq < 0 || parameter.slice(0, eq).trim().toLowerCase() !== "charset") continue;
    const charset = parameter
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .toLowerCase();
    if (JSON_CHARSETS.has(charset)) continue;
    const shown = charset.length > 40 ? `${charset.slice(0, 40)}…` : charset;
    return Object.assign(
      new Error(
        `charset "${shown}" is not accepted: JSON is UTF-8 (RFC 8259); send the body as UTF-8 with content-type: application/json`,
      ),
      { statusCode: 415 },
    );
  }
  return null;
}

/**
 * Whether a parsed value holds a number that is not finite: JSON.parse reads a number past a double's
 * range (1e400, or 400 digits) as Infinity, which is stored and answered as null. A walk that
 * allocates nothing (the path is found only for a refusal, by infinitePath): measured at 5-20% of
 * what JSON.parse of the same body costs, where a regular expression over the text cost more than the
 * parse (and, on long runs of digits, many times more).
 */
function holdsInfinity(value: object): boolean {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (notFinite(value[i])) return true;
    return false;
  }
  for (const key in value) if (notFinite((value as Record<string, unknown>)[key])) return true;
  return false;
}

/** Whether a parsed value is, or holds, a number that is not finite (holdsInfinity's step). */
function notFinite(value: unknown): boolean {
  return typeof value === "number"
    ? !Number.isFinite(value)
    : typeof value === "object" && value !== null && holdsInfinity(value);
}

/** The path of the first number of a parsed value that is not finite ("" for the value itself), or null. */
export function infinitePath(value: unknown, path = ""): string | null {
  if (typeof value === "number") return Number.isFinite(value) ? null : path;
  if (value === null || typeof value !== "object") return null;
  const at = (key: string) => (path === "" ? key : `${path}.${key}`);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = infinitePath(value[i], at(String(i)));
      if (found !== null) return found;
    }
    return null;
  }
  for (const key of Object.keys(value)) {
    const found = infinitePath((value as Record<string, unknown>)[key], at(shownKey(key)));
    if (found !== null) return found;
  }
  return null;
}

/**
 * Refuses a client's JSON body (what JSON.parse made of it) that holds a number past a
 * double's range: VALIDATION naming its path. Such a number would reach the handler, and /status, as
 * null; a client that means it sends it as a string.
 */
export function checkFiniteNumbers(value: unknown): void {
  if (!notFinite(value)) return;
  const path = infinitePath(value);
  if (path === null) return;
  const field = path === "" ? "body" : path;
  throw new ServiceError(
    "VALIDATION",
    `${field}: a number past a double's range (±1.7976931348623157e308) would be read as Infinity; send it as a string`,
    { field },
  );
}

/**
 * Set on a Fastify scope (an instance: a child scope inherits it through its prototype, as scopes
 * inherit hooks): true where JSON bodies are the client's (boundedJson), false where any body is read
 * as JSON whatever it says (parseAnyBodyAsJson: the workers' routes).
 */
const CLIENT_JSON = Symbol("runpodkit.clientJson");
type Scoped = { [CLIENT_JSON]?: boolean };

/**
 * Refuses a client's JSON body declared in another charset (charsetRefusal) in onRequest, before a
 * byte of it is read: in the parser the refusal came only after the whole body (up to the route's
 * limit, 20 MB on /runsync) had been read. The hook is the server's, so it reaches every scope (hooks
 * are inherited), and applies only where the route's scope reads client JSON (CLIENT_JSON): the
 * workers' scope reads any content-type, as the real Python library labels JSON form-urlencoded. Only
 * for methods Fastify reads a body of, with a body, typed application/json: the parser would never
 * have seen anything else. The error handler closes the connection (the body is never read).
 */
export function refuseForeignCharsets(app: FastifyInstance): void {
  app.addHook("onRequest", (request, _reply, done) => {
    const { headers } = request.raw;
    const type = headers["content-type"];
    if (
      type === undefined ||
      type === "application/json" ||
      (request.server as Scoped)[CLIENT_JSON] !== true ||
      BODYLESS_METHODS.has(request.method) ||
      !declaresBody(headers) ||
      !isJsonMediaType(type)
    ) {
      return done();
    }
    const refusal = charsetRefusal(type);
    if (refusal) done(refusal);
    else done();
  });
}

/** Methods whose body Fastify never parses. */
const BODYLESS_METHODS = new Set(["GET", "HEAD", "TRACE"]);

/** Whether a content-type's media type (before its parameters) is application/json, in any case. */
function isJsonMediaType(type: string): boolean {
  const at = type.indexOf(";");
  return (at < 0 ? type : type.slice(0, at)).trim().toLowerCase() === "application/json";
}

type Done = (error: Error | null, body?: unknown) => void;
type JsonParser = (request: FastifyRequest, text: string, done: Done) => void;
/** Fastify's own JSON parser (FastifyInstance.getDefaultJsonParser). */
export type DefaultJsonParser = JsonParser;

/**
 * The JSON parser of a scope (one that reads client JSON: CLIENT_JSON, so a charset other than UTF-8
 * was refused before the body was read, refuseForeignCharsets): the depth bound, then (management scopes) the refusal of a key given twice, then Fastify's own parser (which
 * refuses `__proto__` keys), then a number past a double's range (checkFiniteNumbers); empty text is
 * undefined when `emptyIsUndefined`.
 */
function boundedJson(
  app: FastifyInstance,
  options: { emptyIsUndefined: boolean; uniqueKeys?: boolean },
): void {
  const defaultJson: JsonParser = app.getDefaultJsonParser("error", "ignore");
  (app as Scoped)[CLIENT_JSON] = true;
  if (app.hasContentTypeParser("application/json")) app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text === "" && options.emptyIsUndefined) return done(null, undefined);
    try {
      checkJsonDepth(text);
      if (options.uniqueKeys) checkUniqueKeys(text);
    } catch (error) {
      return done(error as ServiceError, undefined);
    }
    defaultJson(request, text, (error, parsed) => {
      if (error) return done(protoRefusal(error, text), undefined);
      try {
        checkFiniteNumbers(parsed);
      } catch (refused) {
        return done(refused as ServiceError, undefined);
      }
      done(null, parsed);
    });
  });
}

/**
 * Fastify's parser refuses a key named `__proto__` (it could reach an object's prototype) as "not
 * valid JSON", which valid JSON then seems not to be: say what it is and what to do.
 */
function protoRefusal(error: Error, text: string): Error {
  if (!/"__proto__"\s*:/.test(text)) return error;
  return new ServiceError("VALIDATION", 'body: a key named "__proto__" is not accepted; rename it', {
    field: "body",
  });
}

/**
 * The server's JSON parser: every application/json body of every route is depth-bounded. A text/plain
 * body (fetch's default for a string) is refused as every other type but JSON is, 415 naming the
 * content-type to send (edge/errors.ts), rather than read as a string and refused with a 400; an
 * empty one is no body, as bodyless POSTs send it. (Workers' routes take any type: parseAnyBodyAsJson.)
 */
export function boundedJsonBodies(app: FastifyInstance): void {
  boundedJson(app, { emptyIsUndefined: false });
  app.removeContentTypeParser("text/plain");
  app.addContentTypeParser("text/plain", { parseAs: "string" }, (_request, body, done) => {
    if (body === "") return done(null, undefined);
    done(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(), undefined);
  });
}

/** JSON bodies of a scope may be empty (bodyless POSTs that still say application/json): empty is undefined. */
export function acceptEmptyJson(app: FastifyInstance): void {
  boundedJson(app, { emptyIsUndefined: true });
}

/**
 * JSON bodies of a management scope (REST, GraphQL): a key given twice in one object is refused (a
 * stored setting must not depend on which of two values a parser keeps); empty is undefined when
 * `emptyIsUndefined` (REST's bodyless operations). Job inputs are the handler's data, not checked so.
 */
export function managementJsonBodies(app: FastifyInstance, options: { emptyIsUndefined: boolean }): void {
  boundedJson(app, { ...options, uniqueKeys: true });
}

/**
 * Every body of a scope is read raw and parsed as JSON whatever its content-type says, as workers
 * of the real service send it (form-urlencoded headers on JSON text; NaN and Infinity from Python).
 */
export function parseAnyBodyAsJson(app: FastifyInstance, bodyLimit: number): void {
  (app as Scoped)[CLIENT_JSON] = false;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "string", bodyLimit }, (_request, body, done) => {
    let value: unknown;
    try {
      value = workerJson(String(body));
    } catch (error) {
      return done(error as ServiceError, undefined);
    }
    done(null, value);
  });
}

/**
 * A worker's body text: depth-bounded (checkJsonDepth), then lenientJson; not JSON is VALIDATION naming
 * the body. A refused text stays readable through refusedText while its error lives.
 */
export function workerJson(text: string): unknown {
  try {
    checkJsonDepth(text);
  } catch (error) {
    REFUSED_TEXTS.set(error as object, text);
    throw error;
  }
  try {
    return lenientJson(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const refusal = new ServiceError("VALIDATION", `body: not JSON: ${reason}`, { field: "body" });
    REFUSED_TEXTS.set(refusal, text);
    throw refusal;
  }
}

/**
 * A client's application/json body text as the job API's scope parses it (acceptEmptyJson): empty is
 * undefined, then the depth bound, then `defaultJson` (Fastify's own parser), then a number past a
 * double's range (checkFiniteNumbers); a refusal is thrown. (A charset other than UTF-8 never gets
 * here: the fast path leaves it to Fastify.)
 */
export function clientJson(text: string, defaultJson: DefaultJsonParser): unknown {
  if (text === "") return undefined;
  checkJsonDepth(text);
  let failure: Error | null = null;
  let value: unknown;
  // Fastify's default parser reads only the text, never the request.
  defaultJson(undefined as never, text, (error, parsed) => {
    failure = error;
    value = parsed;
  });
  if (failure) throw protoRefusal(failure, text);
  checkFiniteNumbers(value);
  return value;
}

/** The largest text lenientJson hands to the JSON5 parser: it reads ~3 MB a second, on the event loop. */
export const JSON5_MAX_CHARS = 64 * 1024;

/**
 * JSON; else JSON with Python's bare `NaN`, `Infinity` and `-Infinity` read as null (what every reply
 * and the store make of them: JSON.stringify writes null); else, for a text of at most
 * JSON5_MAX_CHARS, JSON5 (comments, single quotes, trailing commas). A larger text that is none of
 * these is refused without the JSON5 parser, which took ~16 s over a 50 MB one while the service
 * waited. Empty text is undefined. Keys named `__proto__` stay plain data (own properties).
 */
export function lenientJson(text: string): unknown {
  if (text.trim() === "") return undefined;
  let strict: unknown;
  try {
    return JSON.parse(text);
  } catch (error) {
    strict = error;
  }
  let reason = strict instanceof Error ? strict.message : String(strict);
  const finite = nonFiniteAsNull(text);
  if (finite !== null) {
    try {
      return JSON.parse(finite);
    } catch (error) {
      // Not JSON apart from those tokens either: JSON5, if small enough. The refusal names what is
      // wrong besides them (the strict parse's stops at the first NaN, which is allowed).
      reason = `${error instanceof Error ? error.message : String(error)} (read with NaN and Infinity as null)`;
    }
  }
  if (text.length > JSON5_MAX_CHARS) {
    throw new Error(
      `${reason} (a body over ${JSON5_MAX_CHARS / 1024} KiB must be JSON, with NaN and Infinity allowed; JSON5's comments, single quotes and trailing commas only in smaller ones)`,
    );
  }
  return JSON5.parse(text);
}

/**
 * A double-quoted JSON string (skipped as it is), or one of Python's bare non-finite tokens. A string
 * left open runs to the end of the text (the closing quote is optional, a backslash may end it): the
 * match never fails, so it is never tried again from each quote inside (an open string of escaped
 * quotes made that quadratic, seconds for 100 KB).
 */
const STRING_OR_NON_FINITE = /"[^"\\]*(?:\\[\s\S]?[^"\\]*)*"?|-?\bInfinity\b|\bNaN\b/g;

/**
 * The text with each bare `NaN`, `Infinity` and `-Infinity` outside strings written as `null`, or
 * null when it has none: one pass of one regular expression.
 */
function nonFiniteAsNull(text: string): string | null {
  let changed = false;
  const rewritten = text.replace(STRING_OR_NON_FINITE, (match) => {
    if (match.charCodeAt(0) === 0x22) return match;
    changed = true;
    return "null";
  });
  return changed ? rewritten : null;
}
