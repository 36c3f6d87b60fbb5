/**
 * The queue floor of the end-to-end suite (served by bare-server.ts under endpoint `queue`): the job
 * API's requests that a job costs the service — /run, job-take and job-take-batch (long-polls),
 * job-done, and the client's /health and /status — answered from memory with nothing behind them (no
 * auth, validation, store, book or worker supervision). The bench drives it with the same e2e client
 * and the project's own worker runtime as the service (bench/suites/end-to-end.ts), so its CPU per
 * job is what the protocol's exchanges alone cost this machine: the floor under the service's.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

type Reply = (res: ServerResponse, status: number, body: string) => void;

/** Jobs not yet taken, as their job-take JSON; held long-polls; outputs of finished jobs by id. */
const queued: { id: string; text: string }[] = [];
const parked: { res: ServerResponse; max: number; batch: boolean }[] = [];
const finished = new Map<string, string>();
/** Finished outputs kept for /status: the e2e client checks a sample of each run's jobs. */
const KEEP_FINISHED = 200_000;
let completed = 0;
let taken = 0;
/** Requests answered (or held) by route, for the suite's requests per job. */
const byRoute: Record<string, number> = {};

export function queueRequests(): { byRoute: Record<string, number> } {
  return { byRoute: { ...byRoute } };
}

/** Hands queued jobs to held long-polls, oldest first. */
function handOut(reply: Reply): void {
  while (queued.length > 0 && parked.length > 0) {
    const poll = parked.shift() as (typeof parked)[number];
    if (poll.res.destroyed) continue;
    const jobs = queued.splice(0, poll.max);
    taken += jobs.length;
    const texts = jobs.map((job) => job.text);
    reply(poll.res, 200, poll.batch ? `[${texts.join(",")}]` : (texts[0] as string));
  }
}

function parse(body: string): { input?: unknown; output?: unknown } | null {
  try {
    return body ? (JSON.parse(body) as { input?: unknown; output?: unknown }) : {};
  } catch {
    return null;
  }
}

/** `parts`: the path split on "/" (["", "v2", "queue", route, ...]); `search`: its query, no "?". */
export function queueFloor(
  req: IncomingMessage,
  res: ServerResponse,
  parts: string[],
  search: string,
  body: string,
  reply: Reply,
): void {
  const route = parts[3] ?? "";
  byRoute[route] = (byRoute[route] ?? 0) + 1;
  if (req.method === "POST" && route === "run") {
    const parsed = parse(body);
    if (parsed === null) {
      reply(res, 400, JSON.stringify({ error: "body is not JSON" }));
      return;
    }
    const id = `${randomUUID()}-u1`;
    queued.push({ id, text: `{"id":"${id}","input":${JSON.stringify(parsed.input ?? null)}}` });
    reply(res, 200, JSON.stringify({ id, status: "IN_QUEUE" }));
    handOut(reply);
  } else if (req.method === "GET" && (route === "job-take" || route === "job-take-batch")) {
    const batch = route === "job-take-batch";
    const max = batch ? Math.max(1, Number(new URLSearchParams(search).get("batch_size")) || 1) : 1;
    parked.push({ res, max, batch });
    handOut(reply);
  } else if (req.method === "POST" && route === "job-done" && parts[5]) {
    const parsed = parse(body);
    if (parsed === null) {
      reply(res, 400, JSON.stringify({ error: "body is not JSON" }));
      return;
    }
    completed++;
    if (finished.size >= KEEP_FINISHED) finished.clear();
    finished.set(parts[5], JSON.stringify(parsed.output ?? null));
    reply(res, 200, "{}");
  } else if (req.method === "GET" && route === "status" && parts[4]) {
    const output = finished.get(parts[4]);
    reply(
      res,
      200,
      output === undefined
        ? JSON.stringify({ id: parts[4], status: "IN_QUEUE" })
        : `{"id":${JSON.stringify(parts[4])},"status":"COMPLETED","output":${output}}`,
    );
  } else if (req.method === "GET" && route === "health") {
    const inProgress = taken - completed;
    reply(
      res,
      200,
      JSON.stringify({
        jobs: { completed, failed: 0, inProgress, inQueue: queued.length, retried: 0 },
        workers: { idle: 0, running: 0 },
      }),
    );
  } else if (req.method === "GET" && route === "job-stop") {
    // Nothing is ever stopped: held until the worker's own time limit or the server closes.
  } else if (req.method === "GET" && route === "ping") {
    reply(res, 200, "{}");
  } else reply(res, 404, JSON.stringify({ error: "not found" }));
}
