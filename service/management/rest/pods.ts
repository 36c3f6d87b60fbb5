import { manyList } from "../../../sdk/schemas/common";
import {
  Pod,
  PodCreateInput,
  PodGetQuery,
  PodList,
  PodListQuery,
  PodUpdateInput,
} from "../../../sdk/schemas/pod";
import type { Management } from "../index";
import type { PodEntry } from "../model/pod";
import type { PodRecord } from "../model/records";
import { type RestRoute, route, updateRoutes } from "./route";
import {
  type PodIncludes,
  rentedPodMachine,
  restNetworkVolume,
  restPod,
  restRentedPod,
  workerMachine,
} from "./shape";

const TAG = "pods";

/**
 * A pod as REST answers it, with what the include* flags ask for: the template, the network volume
 * (a worker's is its endpoint's), the machine, the savings plans (none on this service: []).
 */
function reply(management: Management, accountId: string, entry: PodEntry, include: PodIncludes) {
  const base =
    entry.kind === "worker"
      ? restPod(entry.view, include.template)
      : restRentedPod(
          entry.pod,
          include.template && entry.pod.templateId
            ? management.templates.list(accountId).find((t) => t.id === entry.pod.templateId)
            : undefined,
        );
  const volumeId = entry.kind === "worker" ? entry.view.endpoint?.networkVolumeId : entry.pod.networkVolumeId;
  const volume =
    include.networkVolume && volumeId ? management.networkVolumes.find(accountId, volumeId) : undefined;
  return {
    ...base,
    ...(include.machine
      ? {
          machine: entry.kind === "worker" ? workerMachine(entry.view.endpoint) : rentedPodMachine(entry.pod),
        }
      : {}),
    ...(volume ? { networkVolume: restNetworkVolume(volume) } : {}),
    ...(include.savingsPlans ? { savingsPlans: [] } : {}),
  };
}

const includes = (query: PodGetQuery): PodIncludes => ({
  template: query.includeTemplate,
  networkVolume: query.includeNetworkVolume,
  machine: query.includeMachine,
  savingsPlans: query.includeSavingsPlans,
});

const rented = (pod: PodRecord) => restRentedPod(pod);

/** A lifecycle action: POST /pods/{podId}/<action>, answering the pod. */
function action(
  name: "start" | "stop" | "reset" | "restart",
  operationId: string,
  summary: string,
  act: (management: Management, accountId: string, podId: string) => PodRecord,
): RestRoute {
  return route(
    { method: "POST", url: `/pods/:podId/${name}`, operationId, tag: TAG, summary, response: Pod },
    (c) => rented(act(c.management, c.accountId, c.params.podId ?? "")),
  );
}

export const podRoutes: RestRoute[] = [
  route(
    {
      method: "POST",
      url: "/pods",
      operationId: "CreatePod",
      tag: TAG,
      summary: "Rent a GPU or CPU pod (it runs no container on this service; it is billed while RUNNING)",
      body: PodCreateInput,
      response: Pod,
    },
    (c) => {
      const { computeType, cloudType, countryCodes, ...rest } = c.body;
      return rented(
        c.management.pods.create(c.accountId, {
          ...rest,
          computeType: computeType ?? "GPU",
          cloudType: cloudType ?? "SECURE",
          wire: "rest",
          countryCodes,
          containerDiskInGb: rest.containerDiskInGb ?? undefined,
          volumeInGb: rest.volumeInGb ?? undefined,
          supportPublicIp: rest.supportPublicIp ?? undefined,
          minVcpuCount:
            rest.minVCPUPerGPU !== undefined ? rest.minVCPUPerGPU * (rest.gpuCount ?? 1) : undefined,
          minMemoryInGb:
            rest.minRAMPerGPU !== undefined ? rest.minRAMPerGPU * (rest.gpuCount ?? 1) : undefined,
        }),
      );
    },
  ),
  route(
    {
      method: "GET",
      url: "/pods",
      operationId: "ListPods",
      tag: TAG,
      summary: "List rented pods; serverless workers are included with includeWorkers=true",
      query: PodListQuery,
      response: PodList,
    },
    (c) => {
      const { gpuTypeId, dataCenterId, cpuFlavorId, ...filter } = c.query;
      return c.management.pods
        .list(c.accountId, {
          ...filter,
          gpuTypeIds: manyList(gpuTypeId),
          dataCenterIds: manyList(dataCenterId),
          cpuFlavorIds: manyList(cpuFlavorId),
        })
        .map((p) => reply(c.management, c.accountId, p, includes(c.query)));
    },
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
    (c) =>
      reply(
        c.management,
        c.accountId,
        c.management.pods.get(c.accountId, c.params.podId ?? ""),
        includes(c.query),
      ),
  ),
  ...updateRoutes(
    "/pods/:podId",
    {
      body: PodUpdateInput,
      response: Pod,
      tag: TAG,
      summary: "Update a pod; a new image, command, env, ports or disk resets it; volumeInGb only grows",
      operationId: "UpdatePod",
    },
    (c) => {
      const { globalNetworking: _g, containerDiskInGb, volumeInGb, ...changes } = c.body;
      return rented(
        c.management.pods.update(c.accountId, c.params.podId ?? "", {
          ...changes,
          containerDiskInGb: containerDiskInGb ?? undefined,
          volumeInGb: volumeInGb ?? undefined,
        }),
      );
    },
    {
      fields: Object.keys(PodCreateInput.shape).filter((key) => !(key in PodUpdateInput.shape)),
      fix: "it is chosen when the pod is created; create a new pod instead",
    },
  ),
  route(
    {
      method: "DELETE",
      url: "/pods/:podId",
      operationId: "DeletePod",
      tag: TAG,
      summary: "Terminate a pod (it is gone; 404 after)",
      status: 204,
    },
    (c) => c.management.pods.terminate(c.accountId, c.params.podId ?? ""),
  ),
  action("start", "StartPod", "Start a stopped pod (EXITED -> RUNNING)", (m, a, id) => m.pods.start(a, id)),
  action("stop", "StopPod", "Stop a pod (RUNNING -> EXITED); refused while locked", (m, a, id) =>
    m.pods.stop(a, id),
  ),
  action("reset", "ResetPod", "Reset a pod's container and start it; refused while locked", (m, a, id) =>
    m.pods.reset(a, id),
  ),
  action("restart", "RestartPod", "Restart a running pod", (m, a, id) => m.pods.restart(a, id)),
];
