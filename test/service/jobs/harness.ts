import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { request } from "undici";
import { afterEach } from "vitest";
import { buildApp } from "../../../service/app";
import { type Clock, ManualClock } from "../../../service/clock";
import { openDatabase } from "../../../service/db";
import { Accounts, accountIdOf } from "../../../service/edge/auth";
import { EventBus } from "../../../service/event-bus";
import { createSequentialIds } from "../../../service/ids";
import { DEFAULT_CONFIG } from "../../../service/index";
import type { JobPlaneConfig } from "../../../service/jobs/config";
import { JobPlane } from "../../../service/jobs/plane";
import { jobMigrations } from "../../../service/jobs/store/job-store";
import { Management } from "../../../service/management";
import { EndpointRecords, SecretValues } from "../../../service/management/directory";
import { WorkerUsageLedger } from "../../../service/management/model/billing";
import type { EndpointChanges, EndpointRecord } from "../../../service/management/model/endpoint";
import { managementMigrations } from "../../../service/management/store/migrations";
import { openSealer } from "../../../service/management/store/sealing";
import { ManagementStore } from "../../../service/management/store/store";
import type { ServiceEvents } from "../../../service/planes";

export const KEY = "rpk_jobs_alpha_0123456789";
export const OTHER_KEY = "rpk_jobs_beta_9876543210";
export const ACCOUNT = accountIdOf(KEY);
export const OTHER_ACCOUNT = accountIdOf(OTHER_KEY);

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  text: string;
}

export interface Harness {
  app: FastifyInstance;
  management: Management;
  plane: JobPlane;
  /** The stopped workers' time (billing), as the pool reports to it. */
  usage: WorkerUsageLedger;
  clock: Clock;
  /** http://127.0.0.1:P */
  url: string;
  logs: string[];
  /** An endpoint of the first account (or `accountKey`'s) whose template runs `imageName`. */
  endpoint(imageName: string, changes?: EndpointChanges, accountKey?: string): EndpointRecord;
  /** Calls the service over HTTP with the first account's key unless `key` is given (null: none). */
  call(
    method: string,
    path: string,
    options?: { body?: unknown; key?: string | null; raw?: string },
  ): Promise<Reply>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  clock?: Clock;
  config?: Partial<JobPlaneConfig>;
  /** SQLite file to reopen a service on (restart tests). */
  data?: string;
}

let templates = 0;

/**
 * The whole service in-process (management and job plane), listening on 127.0.0.1 so that worker
 * processes can reach it, with a ManualClock by default and test-friendly job-plane settings.
 */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const clock = options.clock ?? new ManualClock();
  const data = options.data ?? ":memory:";
  const db = openDatabase(data, [...managementMigrations, ...jobMigrations]);
  const logs: string[] = [];
  const ids = createSequentialIds(Math.floor(Math.random() * 1e6));
  const accounts = new Accounts([KEY, OTHER_KEY]);
  const events = new EventBus<ServiceEvents>();
  const store = new ManagementStore(db, openSealer(data));
  const usage = new WorkerUsageLedger({ store, clock });
  const plane = new JobPlane({
    db,
    clock,
    ids,
    accounts,
    events,
    endpoints: new EndpointRecords(store),
    secrets: new SecretValues(store),
    usage,
    config: {
      coldStartMs: 0,
      flashBootColdStartMs: 0,
      workerOutput: "ignore",
      pingIntervalMs: 1_000,
      ...options.config,
    },
    log: (message) => logs.push(message),
  });
  const management = new Management({ store, clock, ids, events, workers: plane.workers, usage });
  const app = buildApp({
    accounts,
    management,
    jobs: plane,
    managementBodyLimit: DEFAULT_CONFIG.managementBodyLimit,
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  plane.start(url);
  return {
    app,
    management,
    plane,
    usage,
    clock,
    url,
    logs,
    endpoint(imageName, changes = {}, accountKey = KEY) {
      const accountId = accountIdOf(accountKey);
      const template = management.templates.create(accountId, {
        name: `t${++templates}`,
        imageName,
        isServerless: true,
      });
      return management.endpoints.create(accountId, {
        name: `e${templates}`,
        templateId: template.id,
        workersMin: 0,
        workersMax: 1,
        ...changes,
      });
    },
    async call(method, path, callOptions = {}) {
      const key = callOptions.key === undefined ? KEY : callOptions.key;
      const headers: Record<string, string> = {};
      if (key !== null) headers.authorization = key;
      let body: string | undefined = callOptions.raw;
      if (callOptions.body !== undefined) body = JSON.stringify(callOptions.body);
      if (body !== undefined) headers["content-type"] = "application/json";
      const reply = await request(`${url}${path}`, { method: method as "GET", headers, body });
      const text = await reply.body.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // not JSON
      }
      return { status: reply.statusCode, headers: reply.headers, body: parsed, text };
    },
    async close() {
      await app.close();
      db.close();
    },
  };
}

/** Polls `check` (real time, for worker processes) until it returns a value or the budget runs out. */
export async function eventually<T>(
  check: () => T | undefined | Promise<T | undefined>,
  budgetMs = 15_000,
): Promise<T> {
  const until = Date.now() + budgetMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * For tests that stop and start the service on one store file: `storeFile(prefix)` makes a fresh
 * directory and names the file in it, `start` opens a harness on a file, `stop` closes one; after
 * each test every harness still open is closed and every directory removed.
 */
export function restartableHarnesses(): {
  storeFile(prefix: string): { dir: string; data: string };
  start(data: string, clock: ManualClock, config?: Partial<JobPlaneConfig>): Promise<Harness>;
  /** Closes a harness now (a graceful stop), so the end of the test does not close it again. */
  stop(h: Harness): Promise<void>;
} {
  const dirs: string[] = [];
  const running: Harness[] = [];
  afterEach(async () => {
    for (const h of running.splice(0)) await h.close().catch(() => {});
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return {
    storeFile(prefix) {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(dir);
      return { dir, data: join(dir, "service.sqlite") };
    },
    async start(data, clock, config) {
      const h = await startHarness({ data, clock, config });
      running.push(h);
      return h;
    },
    async stop(h) {
      running.splice(running.indexOf(h), 1);
      await h.close();
    },
  };
}
