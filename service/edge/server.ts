import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { isIP, type Socket } from "node:net";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyServerFactory,
  LogController,
} from "fastify";
import { boundedJsonBodies, refuseCompressedBodies, refuseForeignCharsets, SERVER_BODY_LIMIT } from "./body";
import { frameworkErrorReply, handleClientError, installErrorHandling, redactUrl } from "./errors";
import type { FastPath } from "./fast-path";
import { type HostPolicy, hostGate, refuseHost } from "./hosts";

/**
 * Fastify's JSON-schema compilers (ajv, fast-json-stringify) are never built: every route parses its
 * input with zod (edge/parse.ts) and answers plain objects. Left to itself Fastify loads both with
 * every instance (several MB); these stand-ins keep them unloaded, and a route declaring a JSON schema
 * fails the service's start with this message instead of being half-checked.
 */
const noJsonSchemas = (what: string) => () => {
  throw new Error(
    `edgeServer: a route declares a JSON ${what} schema; the service parses with zod (edge/parse.ts) instead`,
  );
};
export const WITHOUT_JSON_SCHEMAS = {
  compilersFactory: {
    buildValidator: noJsonSchemas("validation"),
    buildSerializer: noJsonSchemas("response"),
  },
};

/**
 * The Fastify instance every route of the service hangs on: the server-wide body limit, JSON bodies
 * bounded in depth (body.ts), request logs
 * that never carry a key (no headers, `api_key` redacted from URLs) and the one error handler.
 */
export function edgeServer(
  fast?: FastPath,
  limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
  hosts: HostPolicy = null,
): FastifyInstance {
  const silent = new SilentConnections();
  const app = Fastify({
    // A node:http server with the request bounds below, refusing a Host outside `hosts` (hosts.ts),
    // whose handler offers each request to the fast routes first (see fast-path.ts) when there are
    // any, set up as Fastify sets up its own.
    serverFactory: boundedServer(fast, limits, hosts, silent),
    requestTimeout: limits.requestTimeoutMs,
    bodyLimit: SERVER_BODY_LIMIT,
    // Node's own 400/408/431 (before any route) in the service's error shape (errors.ts).
    clientErrorHandler: handleClientError(limits),
    frameworkErrors: (error, request, reply) => {
      const { status, body } = frameworkErrorReply(error, request.raw.url ?? "/");
      // Typed for routes with reply schemas, which this service never declares.
      (reply as FastifyReply).code(status).send(body);
    },
    schemaController: {
      compilersFactory: {
        buildValidator: noJsonSchemas("validation"),
        buildSerializer: noJsonSchemas("response"),
      },
    },
    logger: {
      level: "warn",
      serializers: { req: (req) => ({ method: req.method, url: redactUrl(req.url) }) },
    },
    // The per-request "incoming request" and "request completed" lines are info: below the level,
    // never written. Not calling them lets a request's logger stay unbuilt (LazyChildLogger).
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings, options) => new LazyChildLogger(logger, bindings, options),
  });
  // Before the server stops listening: a connection that never sent a request would hold close().
  app.addHook("preClose", (done) => {
    silent.close();
    done();
  });
  boundedJsonBodies(app);
  refuseCompressedBodies(app);
  // After the compressed-body refusal, as before: a compressed body is refused for that first.
  refuseForeignCharsets(app);
  installErrorHandling(app);
  if (fast) {
    fast.attach(app);
    app.addHook("preClose", async () => fast.close());
  }
  return app;
}

/**
 * How long a client may take to send one request. Fastify's default (`requestTimeout: 0`) switched
 * off Node's own bound: a client that sent headers and then a body one byte at a time (to any route,
 * without a key: a POST to an unknown path waits for its body) held its connection for as long as it
 * liked, and enough of them exhaust the process's descriptors. Replies held open on purpose (long
 * polls, followed logs, streams) are not bounded by these: they start once the request has arrived.
 */
export interface ConnectionLimits {
  /** Headers and body must have arrived within this (ms), else 408 and the connection is closed. */
  requestTimeoutMs: number;
  /** Headers must have arrived within this (ms), at most requestTimeoutMs. */
  headersTimeoutMs: number;
  /** How often the server checks its connections against the two (ms); Node's default. */
  checkIntervalMs: number;
}

/** Node's own defaults, which Fastify's requestTimeout of 0 had switched off. */
export const DEFAULT_CONNECTION_LIMITS: Readonly<ConnectionLimits> = {
  requestTimeoutMs: 300_000,
  headersTimeoutMs: 60_000,
  checkIntervalMs: 30_000,
};

/**
 * A node:http server with `limits`, offering each request to `fast` first when given, set up as
 * Fastify sets up its own (keep-alive, idle timeout).
 */
function boundedServer(
  fast: FastPath | undefined,
  limits: ConnectionLimits,
  hosts: HostPolicy,
  silent: SilentConnections,
): FastifyServerFactory<Server> {
  return (handler, options) => {
    const served = fast
      ? (req: IncomingMessage, res: ServerResponse) => {
          silent.spoke(req.socket, server.timeout);
          if (!fast.serve(req, res)) handler(req, res);
        }
      : (req: IncomingMessage, res: ServerResponse) => {
          silent.spoke(req.socket, server.timeout);
          handler(req, res);
        };
    const allowed = hostGate(hosts);
    const server = createServer(
      {
        requestTimeout: limits.requestTimeoutMs,
        headersTimeout: limits.headersTimeoutMs,
        connectionsCheckingInterval: limits.checkIntervalMs,
      },
      hosts === null
        ? served
        : (req, res) => {
            if (allowed(req.headers.host)) served(req, res);
            else refuseHost(req, res);
          },
    );
    server.on("connection", (socket: Socket) => silent.opened(socket, limits.headersTimeoutMs));
    const { keepAliveTimeout, connectionTimeout } = options;
    if (typeof keepAliveTimeout === "number") server.keepAliveTimeout = keepAliveTimeout;
    if (typeof connectionTimeout === "number") server.setTimeout(connectionTimeout);
    return server;
  };
}

/**
 * The connections that have not sent a request yet: a browser's preconnect, a probe, a client that
 * opened one and went quiet. Node applies no timeout before a first byte (its headers timeout counts
 * from the first), and its closeIdleConnections (which Fastify's close calls) leaves them open: one
 * held the service's close, and the CLI's stop on SIGTERM, for as long as it stayed open, and enough
 * of them held every descriptor. Each now has the headers' bound to send its first request (Node's
 * own socket timeout, which ends a connection with no request), and on close they are ended; a
 * request under way and a keep-alive connection between requests are left to Fastify as before.
 */
class SilentConnections {
  readonly #sockets = new Set<Socket>();
  #closing = false;

  opened(socket: Socket, firstRequestMs: number): void {
    if (this.#closing) {
      socket.destroy();
      return;
    }
    this.#sockets.add(socket);
    socket.setTimeout(firstRequestMs);
    socket.once("close", () => this.#sockets.delete(socket));
  }

  /** A request arrived on it: a connection like any other from now on, with the server's timeout. */
  spoke(socket: Socket, serverTimeoutMs: number): void {
    if (this.#sockets.delete(socket)) socket.setTimeout(serverTimeoutMs);
  }

  close(): void {
    this.#closing = true;
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
  }
}

type Bindings = Parameters<FastifyBaseLogger["child"]>[0];
type ChildOptions = Parameters<FastifyBaseLogger["child"]>[1];
type LogArgs = Parameters<FastifyBaseLogger["error"]>;

/**
 * A request's logger (its lines carry the request id), built on its first use: most requests log
 * nothing, and a pino child costs an object and a serialization of its bindings per request.
 */
class LazyChildLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildOptions;
  #built: FastifyBaseLogger | null = null;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #real(): FastifyBaseLogger {
    this.#built ??= this.#parent.child(this.#bindings, this.#options);
    return this.#built;
  }

  get level(): string {
    return this.#built?.level ?? this.#options?.level ?? this.#parent.level;
  }
  set level(level: string) {
    this.#real().level = level;
  }
  fatal(...args: LogArgs): void {
    this.#real().fatal(...args);
  }
  error(...args: LogArgs): void {
    this.#real().error(...args);
  }
  warn(...args: LogArgs): void {
    this.#real().warn(...args);
  }
  info(...args: LogArgs): void {
    this.#real().info(...args);
  }
  debug(...args: LogArgs): void {
    this.#real().debug(...args);
  }
  trace(...args: LogArgs): void {
    this.#real().trace(...args);
  }
  silent(...args: LogArgs): void {
    this.#real().silent(...args);
  }
  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options);
  }
}

/** http://<address>:<port> of a listening server (any-address binds are reached on loopback); null before it listens. */
export function listeningUrl(server: Server): string | null {
  const address = server.address();
  if (!address || typeof address === "string") return null;
  const host = address.address === "::" || address.address === "0.0.0.0" ? "127.0.0.1" : address.address;
  return `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`;
}

/** The default bind address: only this machine can reach the service. */
export const DEFAULT_HOST = "127.0.0.1";

/** True for an address only this machine can reach: localhost, 127.0.0.0/8, ::1 (and ::ffff:127.x). */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (bare === "localhost") return true;
  if (isIP(bare) === 4) return bare.startsWith("127.");
  if (isIP(bare) === 6) return bare === "::1" || bare.startsWith("::ffff:127.");
  return false;
}
