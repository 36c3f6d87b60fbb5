import {
  NetworkVolume,
  NetworkVolumeCreateInput,
  NetworkVolumeList,
  NetworkVolumeUpdateInput,
} from "../../../sdk/schemas/network-volume";
import { type RestRoute, route, updateRoutes } from "./route";
import { restNetworkVolume } from "./shape";

const TAG = "network volumes";

export const networkVolumeRoutes: RestRoute[] = [
  route(
    {
      method: "POST",
      url: "/networkvolumes",
      operationId: "CreateNetworkVolume",
      tag: TAG,
      summary: "Create a network volume",
      body: NetworkVolumeCreateInput,
      response: NetworkVolume,
    },
    (c) => restNetworkVolume(c.management.networkVolumes.create(c.accountId, c.body)),
  ),
  route(
    {
      method: "GET",
      url: "/networkvolumes",
      operationId: "ListNetworkVolumes",
      tag: TAG,
      summary: "List network volumes",
      response: NetworkVolumeList,
    },
    (c) => c.management.networkVolumes.list(c.accountId).map(restNetworkVolume),
  ),
  route(
    {
      method: "GET",
      url: "/networkvolumes/:networkVolumeId",
      operationId: "GetNetworkVolume",
      tag: TAG,
      summary: "Find a network volume by id",
      response: NetworkVolume,
    },
    (c) => restNetworkVolume(c.management.networkVolumes.get(c.accountId, c.params.networkVolumeId ?? "")),
  ),
  ...updateRoutes(
    "/networkvolumes/:networkVolumeId",
    {
      body: NetworkVolumeUpdateInput,
      response: NetworkVolume,
      tag: TAG,
      summary: "Rename or grow a network volume (size may only increase)",
      operationId: "UpdateNetworkVolume",
    },
    (c) =>
      restNetworkVolume(
        c.management.networkVolumes.update(c.accountId, c.params.networkVolumeId ?? "", c.body),
      ),
  ),
  route(
    {
      method: "DELETE",
      url: "/networkvolumes/:networkVolumeId",
      operationId: "DeleteNetworkVolume",
      tag: TAG,
      summary: "Delete a network volume (refused while attached to an endpoint)",
      status: 204,
    },
    (c) => c.management.networkVolumes.delete(c.accountId, c.params.networkVolumeId ?? ""),
  ),
];
