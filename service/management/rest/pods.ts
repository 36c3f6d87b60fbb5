import { Pod, PodGetQuery, PodList, PodListQuery } from "../../../sdk/schemas/pod";
import { type RestRoute, type RouteSpec, route } from "./route";
import { restPod } from "./shape";

const TAG = "pods";

/** Pod operations this service does not offer: each answers 501 naming itself, never a fake success. */
const NOT_IMPLEMENTED: Pick<RouteSpec, "method" | "url" | "operationId">[] = [
  { method: "POST", url: "/pods", operationId: "CreatePod" },
  { method: "PATCH", url: "/pods/:podId", operationId: "UpdatePod" },
  { method: "POST", url: "/pods/:podId/update", operationId: "UpdatePod" },
  { method: "DELETE", url: "/pods/:podId", operationId: "DeletePod" },
  { method: "POST", url: "/pods/:podId/start", operationId: "StartPod" },
  { method: "POST", url: "/pods/:podId/stop", operationId: "StopPod" },
  { method: "POST", url: "/pods/:podId/reset", operationId: "ResetPod" },
  { method: "POST", url: "/pods/:podId/restart", operationId: "RestartPod" },
];

export const podRoutes: RestRoute[] = [
  route(
    {
      method: "GET",
      url: "/pods",
      operationId: "ListPods",
      tag: TAG,
      summary: "List pods; serverless workers are included with includeWorkers=true",
      query: PodListQuery,
      response: PodList,
    },
    (c) => c.management.pods.list(c.accountId, c.query).map((p) => restPod(p, c.query.includeTemplate)),
  ),
  route(
    {
      method: "GET",
      url: "/pods/:podId",
      operationId: "GetPod",
      tag: TAG,
      summary: "Find a pod (or serverless worker) by id",
      query: PodGetQuery,
      response: Pod,
    },
    (c) => restPod(c.management.pods.get(c.accountId, c.params.podId ?? ""), c.query.includeTemplate),
  ),
  ...NOT_IMPLEMENTED.map((op) =>
    route({ ...op, tag: TAG, summary: `${op.operationId}: not implemented here (501)` }, (c) =>
      c.management.pods.notImplemented(
        `${op.operationId} (${op.method} ${op.url.replace(/:(\w+)/g, "{$1}")})`,
      ),
    ),
  ),
];
