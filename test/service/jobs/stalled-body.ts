import { type ClientRequest, request as httpRequest } from "node:http";
import { type Harness, KEY } from "./harness";

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
