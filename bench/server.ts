/**
 * The service as the bench runs it: compiled JS under plain Node, startService with persistence in an
 * SQLite file, in its own process. Options come in BENCH_SERVER (JSON), the key in BENCH_API_KEY.
 * With `countCalls`, every answered request is counted by route through an onResponse hook added
 * from outside (fastify's `fastify.initialization` diagnostics channel hands over the instance), so
 * API calls are counted AT THE SERVICE without changing its code.
 */
// First, as the CLI (service/main.ts) does: the service's modules load without V8's optimizing compilers.
import "../service/lean-start";
import { subscribe } from "node:diagnostics_channel";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { writeHeapSnapshot } from "node:v8";
import type { FastifyInstance } from "fastify";
import type { ServiceConfig } from "../service/config";
import { startService } from "../service/index";
import type { JobPlaneConfig } from "../service/jobs/config";
import { serveIpc } from "./lib/ipc";
import {
  type CallCount,
  HeapSnapshotArgs,
  ServerOptions,
  type ServerReady,
  type ServerStats,
} from "./lib/protocol";

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** graphql-js, loaded only when calls are counted (the service itself loads it on the first GraphQL request). */
type GraphqlJs = typeof import("graphql");

/** One answered request as "METHOD /route/:pattern", or "GRAPHQL query myself.endpoint" / "... mutation saveEndpoint". */
function classify(
  { Kind, parse }: GraphqlJs,
  method: string,
  route: string,
  body: unknown,
): { key: string; kind: "read" | "write" } {
  if (route.endsWith("/graphql")) {
    const query = (body as { query?: unknown } | undefined)?.query;
    if (typeof query === "string") {
      try {
        const doc = parse(query);
        const op = doc.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION);
        if (op && op.kind === Kind.OPERATION_DEFINITION) {
          const fields = op.selectionSet.selections.map((s) => {
            if (s.kind !== Kind.FIELD) return "?";
            const inner = s.selectionSet?.selections.map((x) => (x.kind === Kind.FIELD ? x.name.value : "?"));
            return s.name.value === "myself" && inner ? `myself.${inner.join("+")}` : s.name.value;
          });
          return {
            key: `GRAPHQL ${op.operation} ${fields.join(",")}`,
            kind: op.operation === "mutation" ? "write" : "read",
          };
        }
      } catch {
        // Not a document: counted under the plain route below.
      }
    }
  }
  return { key: `${method} ${route}`, kind: WRITE_METHODS.has(method) ? "write" : "read" };
}

async function main(): Promise<void> {
  const options = ServerOptions.parse(JSON.parse(process.env.BENCH_SERVER ?? "{}"));
  const apiKey = process.env.BENCH_API_KEY;
  if (!apiKey) throw new Error("BENCH_API_KEY is not set");
  const calls = new Map<string, CallCount>();
  if (options.countCalls) {
    const graphql = await import("graphql");
    subscribe("fastify.initialization", (message) => {
      const { fastify } = message as { fastify: FastifyInstance };
      fastify.addHook("onResponse", async (request) => {
        const route = request.routeOptions.url ?? request.url.split("?")[0] ?? "";
        const { key, kind } = classify(graphql, request.method, route, request.body);
        const entry = calls.get(key) ?? { key, kind, count: 0 };
        entry.count++;
        calls.set(key, entry);
      });
    });
  }
  const jobs: Partial<JobPlaneConfig> = {
    handlers: options.handlers,
    // Worker lines are captured into the logs either way; echoing every job's lines would flood the bench's output.
    workerOutput: "ignore",
    rateLimits: { enabled: options.rateLimits, requestsPerWorker: 100, limits: {} },
    // The endpoints curve runs 100 endpoints of one worker each: above the service's default bound of 64.
    maxWorkers: 256,
    ...(options.maxQueuedPerEndpoint === undefined
      ? {}
      : { maxQueuedPerEndpoint: options.maxQueuedPerEndpoint }),
  };
  const config: Partial<ServiceConfig> & { jobs: Partial<JobPlaneConfig> } = { jobs };
  const started = performance.now();
  const service = await startService({ apiKeys: [apiKey], port: 0, data: options.data, config });
  const startMs = performance.now() - started;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= service.close();
    return closing;
  };
  const ready: ServerReady = {
    restUrl: service.restUrl,
    graphqlUrl: service.graphqlUrl,
    queueUrl: service.queueUrl,
    startMs,
    pid: process.pid,
  };
  serveIpc(
    {
      stats: (): ServerStats => {
        const memory = process.memoryUsage();
        const cpu = process.cpuUsage();
        return {
          cpuUs: cpu.user + cpu.system,
          rss: memory.rss,
          heapUsed: memory.heapUsed,
          heapTotal: memory.heapTotal,
          external: memory.external,
          calls: [...calls.values()],
        };
      },
      resetCalls: () => {
        calls.clear();
        return {};
      },
      /** A full collection (diagnostics: how much of the heap in use is garbage); needs --expose-gc. */
      collect: () => {
        const gc = (globalThis as { gc?: () => void }).gc;
        if (typeof gc !== "function") throw new Error("collect: start the bench server with --expose-gc");
        gc();
        return {};
      },
      /** A heap snapshot (which starts with a full collection) written into `dir`; diagnostics. */
      heapSnapshot: (args: unknown) => {
        const { dir } = HeapSnapshotArgs.parse(args);
        return { file: writeHeapSnapshot(join(dir, `service-${Date.now()}.heapsnapshot`)) };
      },
      close: async () => {
        await close();
        setImmediate(() => process.exit(0));
        return {};
      },
    },
    ready,
    close,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`bench server: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`);
  process.exit(1);
});
