import type { IncomingMessage, ServerResponse } from "node:http";
import { isIP } from "node:net";
import { ServiceError, shownId } from "../errors";
import { errorReply } from "./errors";

/*
 * DNS rebinding: a web page whose name its owner re-points at 127.0.0.1 is, to the browser, still its
 * own origin, so it may read what a service on loopback answers (the console's files, openapi.json).
 * The browser still sends the page's name in Host; a service bound to loopback answers only the
 * names that mean this machine, and any the operator adds (--allowed-host).
 */

/** The most names --allowed-host may add, and the longest name (DNS's own limit). */
export const MAX_ALLOWED_HOSTS = 64;
const MAX_HOST_CHARS = 253;
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

/** Which Host names a service answers; null: any (bound off loopback and none configured). */
export type HostPolicy = ReadonlySet<string> | null;

/** An --allowed-host value as compared (lower case, no brackets, no trailing dot); null if not a host name or address. */
export function normalHost(name: string): string | null {
  if (name.length > MAX_HOST_CHARS + 2) return null;
  const bare = name
    .toLowerCase()
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "");
  return isIP(bare) !== 0 || HOST_NAME.test(bare) ? bare : null;
}

/**
 * The policy of a service bound to `bindHost` with `allowedHosts` added: checked when bound to
 * loopback or when names are configured; the bound address is always allowed.
 */
export function hostPolicy(bindHost: string, allowedHosts: readonly string[], loopback: boolean): HostPolicy {
  if (allowedHosts.length > MAX_ALLOWED_HOSTS)
    throw new Error(
      `startService: allowedHosts (--allowed-host): at most ${MAX_ALLOWED_HOSTS} names, got ${allowedHosts.length}`,
    );
  const names = allowedHosts.map((name) => {
    const normal = normalHost(name);
    if (normal === null)
      throw new Error(
        `startService: allowedHosts (--allowed-host): "${shownId(name)}" is not a host name or IP address (e.g. myhost.lan, 192.168.1.5)`,
      );
    return normal;
  });
  if (!loopback && names.length === 0) return null;
  const bound = normalHost(bindHost);
  return new Set([...names, ...(bound === null ? [] : [bound])]);
}

/** The name of a Host header value (`name`, `name:port`, `[v6]:port`), as normalHost compares it. */
export function hostNameOf(header: string): string {
  const lower = header.toLowerCase();
  const name = lower.startsWith("[")
    ? lower.slice(1, lower.indexOf("]") === -1 ? undefined : lower.indexOf("]"))
    : lower.split(":").length === 2
      ? (lower.split(":")[0] ?? "")
      : lower;
  return name.replace(/\.$/, "");
}

/**
 * True for a name only this machine answers to: localhost and its subdomains (RFC 6761: they resolve
 * to loopback, so no page can point them elsewhere; a load-balancing endpoint's local url is
 * `{id}.localhost`), 127.0.0.0/8, ::1, ::ffff:127.x.
 */
function loopbackName(name: string): boolean {
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  if (isIP(name) === 4) return name.startsWith("127.");
  if (isIP(name) === 6) return name === "::1" || name.startsWith("::ffff:127.");
  return false;
}

/** Whether `policy` lets a request with this Host header through (none: an HTTP/1.0 client, no browser). */
export function hostAllowed(policy: HostPolicy, header: string | undefined): boolean {
  if (policy === null || header === undefined) return true;
  const name = hostNameOf(header);
  return loopbackName(name) || policy.has(name);
}

/** How many distinct allowed Host values a gate remembers (a client sends one or two). */
const REMEMBERED_HOSTS = 32;

/**
 * hostAllowed for one server, remembering the Host values it let through: every request of every
 * plane passes here, and the parse costs several percent of a job's CPU. Only allowed values are
 * kept, at most REMEMBERED_HOSTS, so a client sending many names cannot grow it.
 */
export function hostGate(policy: HostPolicy): (header: string | undefined) => boolean {
  if (policy === null) return () => true;
  const allowed = new Set<string>();
  return (header) => {
    if (header === undefined || allowed.has(header)) return true;
    if (!hostAllowed(policy, header)) return false;
    if (allowed.size < REMEMBERED_HOSTS) allowed.add(header);
    return true;
  };
}

/** Answers 421 in the wire's error shape, naming the Host and the setting that allows it. */
export function refuseHost(request: IncomingMessage, response: ServerResponse): void {
  const host = shownId(request.headers.host ?? "");
  const error = new ServiceError(
    "HOST_NOT_ALLOWED",
    `host: this service answers requests addressed to localhost, 127.0.0.1, [::1] or its --allowed-host names, not "${host}" (a page that points its own name at this machine is refused); to reach it by that name, start it with --allowed-host ${normalHost(hostNameOf(request.headers.host ?? "")) ?? "<name>"}`,
    { field: "host" },
  );
  const { status, body } = errorReply(error, request.url ?? "/");
  const json = JSON.stringify(body);
  // The body, if any, is not read: the connection is not kept for it.
  response.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(json),
    connection: "close",
  });
  response.end(json);
}
