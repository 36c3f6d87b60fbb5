import { type ClientRequest, request as httpRequest } from "node:http";
import { afterEach, expect } from "vitest";
import type { JobPlaneConfig } from "../../../service/jobs/config";
import { eventually, type Harness, KEY, startHarness } from "./harness";

/**
 * A worker POST (job-done or job-stream, `path` under /v2/{endpoint}/) whose headers say `bytes` and
 * whose body never comes: it holds its memory reservation until destroyed (a worker gone mid-body).
 * The caller destroys it (afterEach at the latest).
 */
export function stallBody(h: Harness, endpointId: string, path: string, bytes: number): ClientRequest {
  const { port } = new URL(h.url);
  const stalled = httpRequest({
    host: "127.0.0.1",
    port,
    method: "POST",
    path: `/v2/${endpointId}/${path}`,
    headers: { authorization: KEY, "content-type": "application/json", "content-length": String(bytes) },
  });
  stalled.on("error", () => {});
  stalled.write('{"output": "');
  return stalled;
}

/**
 * What the memory-budget tests of a worker route (job-done, job-stream) share: harnesses and stalled
 * bodies closed after each test, /run, the budget's settled hold, and a stalled body on `route`.
 * Call it inside the test file's describe (it registers an afterEach).
 */
export function budgetFixture(route: "job-done" | "job-stream") {
  const running: Harness[] = [];
  const stalls: ClientRequest[] = [];
  afterEach(async () => {
    for (const stalled of stalls.splice(0)) stalled.destroy();
    for (const h of running.splice(0)) await h.close().catch(() => {});
  });
  return {
    start: async (config: Partial<JobPlaneConfig>) => {
      const h = await startHarness({ config });
      running.push(h);
      return h;
    },
    run: async (h: Harness, endpointId: string, input: object) => {
      const reply = await h.call("POST", `/v2/${endpointId}/run`, { body: { input } });
      expect(reply.status).toBe(200);
      return (reply.body as { id: string }).id;
    },
    /** Memory held now, once it settles at `bytes` (a release runs on the reply's close). */
    heldSettles: (h: Harness, bytes: number) =>
      eventually(() => (h.plane.memory.used === bytes ? true : undefined), 5_000),
    /** A body on `route` that never comes (stallBody), destroyed after the test at the latest. */
    stall: (h: Harness, endpointId: string, workerId: string, jobId: string, bytes: number) => {
      const stalled = stallBody(
        h,
        endpointId,
        `${route}/${workerId}/${jobId}?gpu=LOCAL&isStream=false`,
        bytes,
      );
      stalls.push(stalled);
      return stalled;
    },
  };
}
