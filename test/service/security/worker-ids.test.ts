import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, type Harness, KEY, OTHER_KEY, startHarness } from "../jobs/harness";
import { ProtocolWorker } from "../jobs/protocol-worker";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const JOB = "00000000-0000-0000-0000-000000000000-u1";

/** Every worker-protocol route, for one endpoint and worker id. */
function routes(endpointId: string, workerId: string): [method: string, path: string][] {
  return [
    ["GET", `/v2/${endpointId}/job-take/${workerId}?gpu=x`],
    ["GET", `/v2/${endpointId}/job-take-batch/${workerId}?gpu=x&batch_size=2`],
    ["GET", `/v2/${endpointId}/job-stop/${workerId}`],
    ["POST", `/v2/${endpointId}/job-done/${workerId}/${JOB}`],
    ["POST", `/v2/${endpointId}/job-stream/${workerId}/${JOB}`],
    ["GET", `/v2/${endpointId}/ping/${workerId}`],
  ];
}

async function answers(endpointId: string, workerId: string, key: string) {
  const replies = [];
  for (const [method, path] of routes(endpointId, workerId)) {
    const body = method === "POST" ? { output: 1 } : undefined;
    const reply = await h.call(method, path, { key, body });
    replies.push({ route: path.split("/")[3], status: reply.status, body: reply.text });
  }
  return replies;
}

describe("worker routes do not tell whether a worker id exists in another account", () => {
  it("another account's key: the same 404 for a real worker (managed or run by hand) as for an id that exists nowhere", async () => {
    const ep = h.endpoint("runpodkit/echo", { workersMin: 1, workersMax: 1 });
    const managed = await eventually(() => h.plane.pool.workersOf(ep.id)[0]?.session.id);
    const byHand = new ProtocolWorker(h, ep.id, "wbyhand1");
    expect((await byHand.ping()).status).toBe(200);

    const nowhere = await answers(ep.id, "wnosuchworker", OTHER_KEY);
    expect(nowhere.map((r) => r.status)).toEqual([404, 404, 404, 404, 404, 404]);
    const normalized = (replies: typeof nowhere, id: string) =>
      replies.map((r) => ({ ...r, body: r.body.replaceAll(id, "<worker>") }));
    expect(normalized(await answers(ep.id, managed, OTHER_KEY), managed)).toEqual(
      normalized(nowhere, "wnosuchworker"),
    );
    expect(normalized(await answers(ep.id, byHand.id, OTHER_KEY), byHand.id)).toEqual(
      normalized(nowhere, "wnosuchworker"),
    );
  }, 30_000);

  it("a key that is no account's: the same 401 whatever the worker id", async () => {
    const ep = h.endpoint("runpodkit/echo");
    const byHand = new ProtocolWorker(h, ep.id, "wbyhand2");
    expect((await byHand.ping()).status).toBe(200);
    const real = await answers(ep.id, byHand.id, "rpk_not_a_key_000000000");
    expect(real.map((r) => r.status)).toEqual([401, 401, 401, 401, 401, 401]);
    expect(await answers(ep.id, "wnosuchworker", "rpk_not_a_key_000000000")).toEqual(real);
  });

  it("another account's worker id on one's own endpoint is just a new worker there, as a fresh id would be", async () => {
    const mine = h.endpoint("runpodkit/echo", {}, KEY);
    const theirs = h.endpoint("runpodkit/echo", {}, OTHER_KEY);
    const taken = new ProtocolWorker(h, mine.id, "wshared1");
    expect((await taken.ping()).status).toBe(200);
    expect((await new ProtocolWorker(h, theirs.id, "wshared1", OTHER_KEY).ping()).status).toBe(200);
    expect((await new ProtocolWorker(h, theirs.id, "wfresh1", OTHER_KEY).ping()).status).toBe(200);
    // Two sessions: each account sees only its own.
    expect(h.plane.dispatcher.session(mine.id, "wshared1")?.accountId).not.toBe(
      h.plane.dispatcher.session(theirs.id, "wshared1")?.accountId,
    );
  });
});
