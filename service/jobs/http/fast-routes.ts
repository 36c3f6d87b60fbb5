import type { IncomingMessage, ServerResponse } from "node:http";
import { JobSubmission, RunSyncQuery } from "../../../sdk/schemas/job";
import { charsetRefusal, workerJson } from "../../edge/body";
import { type FastPath, plainBodySize, readText, sendJsonText, sendNoContent } from "../../edge/fast-path";
import { parseInput, parseQuery } from "../../edge/parse";
import { JOB_POLICY } from "../policy";
import type { ClientRouteDeps } from "./client-deps";
import { admitClient } from "./client-routes";
import { clientGone, closeIfReleased } from "./wire";
import {
  afterWrite,
  EMPTY_REPLY,
  failRefusedResult,
  identify,
  jobDone,
  reserveBody,
  takeJobs,
  type WorkerRouteDeps,
} from "./worker-routes";

/**
 * The job API's hot routes on the fast path (edge/fast-path.ts): a job's /run and /runsync, job-take,
 * job-take-batch and job-done, each the plain case of its Fastify route (client-routes.ts,
 * worker-routes.ts) with the same admission, parsing, calls and replies, sharing their functions.
 * A body is read here only when it declares its size within the route's limit (plainBodySize) and,
 * for /run and /runsync, says application/json; anything else is left to the Fastify route.
 */
export function registerFastRoutes(
  fast: FastPath,
  { client, worker }: { client: ClientRouteDeps; worker: WorkerRouteDeps },
): void {
  const { dispatcher } = worker;

  fast.add("POST", "/v2/:endpointId/run", (req, res, params) => {
    if (!isJson(req) || plainBodySize(req, JOB_POLICY.runBodyBytes) === null) return false;
    const { accountId, endpointId, reservation } = admitClient(
      client,
      req,
      res,
      params.endpointId ?? "",
      "run",
    );
    readClientJson(fast, req, res, (parsed) => {
      const body = parseInput(JobSubmission, parsed, "body");
      client.jobs
        .run(accountId, endpointId, body, reservation)
        .then((accepted) => sendJsonText(res, JSON.stringify(accepted)))
        .catch((error: unknown) => fast.sendError(req, res, error));
    });
    return true;
  });

  // /runsync as its Fastify route: admission, the body's JSON, then `wait`, then the body's fields.
  fast.add("POST", "/v2/:endpointId/runsync", (req, res, params, query) => {
    if (!isJson(req) || plainBodySize(req, JOB_POLICY.runsyncBodyBytes) === null) return false;
    const { accountId, endpointId, reservation } = admitClient(
      client,
      req,
      res,
      params.endpointId ?? "",
      "runsync",
    );
    readClientJson(fast, req, res, (parsed) => {
      const { wait } = parseQuery(RunSyncQuery, query, "wait");
      const body = parseInput(JobSubmission, parsed, "body");
      client.jobs
        .runSync(accountId, endpointId, body, wait, clientGone(res), reservation)
        .then((envelope) => {
          closeIfReleased(res, client.released);
          sendJsonText(res, JSON.stringify(envelope));
        })
        .catch((error: unknown) => fast.sendError(req, res, error));
    });
    return true;
  });

  const take = (batch: boolean) =>
    fast.add(
      "GET",
      `/v2/:endpointId/${batch ? "job-take-batch" : "job-take"}/:workerId`,
      (req, res, params, query) => {
        const identified = identify(
          worker.access,
          params.endpointId ?? "",
          params.workerId ?? "",
          req.headers.authorization,
        );
        takeJobs(dispatcher, identified, query, batch, res)
          .then((text) => (text === null ? sendNoContent(res) : sendJsonText(res, text)))
          .catch((error: unknown) => fast.sendError(req, res, error));
        return true;
      },
    );
  take(false);
  take(true);

  fast.add("POST", "/v2/:endpointId/job-done/:workerId/:jobId", (req, res, params) => {
    if (plainBodySize(req, worker.bodyLimit) === null) return false;
    const identified = identify(
      worker.access,
      params.endpointId ?? "",
      params.workerId ?? "",
      req.headers.authorization,
    );
    reserveBody(worker, req, res, identified);
    readText(
      req,
      (text) => {
        let parsed: unknown;
        try {
          parsed = workerJson(text);
        } catch (error) {
          failRefusedResult(worker, identified, params.jobId, error, undefined);
          return fast.sendError(req, res, error, true);
        }
        try {
          jobDone(dispatcher, identified, params.jobId ?? "", parsed);
        } catch (error) {
          failRefusedResult(worker, identified, params.jobId, error, parsed);
          throw error;
        }
        afterWrite(worker).then(
          () => sendJsonText(res, EMPTY_REPLY),
          (error: unknown) => fast.sendError(req, res, error),
        );
      },
      (error) => fast.sendError(req, res, error),
    );
    return true;
  });
}

/**
 * A content-type Fastify's application/json parser takes, in its plain spellings (others go to
 * Fastify), without a charset other than UTF-8 (Fastify refuses that: edge/body.ts charsetRefusal).
 */
function isJson(req: IncomingMessage): boolean {
  const type = req.headers["content-type"];
  if (type === "application/json") return true;
  return (type?.startsWith("application/json;") ?? false) && charsetRefusal(type) === null;
}

/**
 * Reads a client's JSON body as the job API's Fastify scope parses it (a refusal of the parser is
 * answered as Fastify's, with Connection: close), then calls `use`; a throw from `use` is answered too.
 */
function readClientJson(
  fast: FastPath,
  req: IncomingMessage,
  res: ServerResponse,
  use: (parsed: unknown) => void,
): void {
  readText(
    req,
    (text) => {
      let parsed: unknown;
      try {
        parsed = fast.clientJson(text);
      } catch (error) {
        return fast.sendError(req, res, error, true);
      }
      use(parsed);
    },
    (error) => fast.sendError(req, res, error),
  );
}
